package main_test

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/events"
	"github.com/gorunner/gorunner/internal/syncbuf"
	"github.com/gorunner/gorunner/store/redisstore"
	"github.com/gorunner/gorunner/store/sqlitestore"
)

// TestTokenRevokedThroughTheCLIIsRefusedAtOnce: `gorunner token revoke`, a process of its
// own, tells the running servers (events.Tokens on the store's transport) before it exits,
// and a server that holds the token in memory (auth.TokenCacheFor) refuses it as soon as
// it hears, not when its held entry expires; on SQLite and on Redis.
//
// Two observations, each with a reason to trust it:
//   - the test listens on the store's transport as a server does: the CLI's notice arrives
//     there (none arrives without it; no timing is involved);
//   - the server's held entry is read no earlier than just before the token's first request
//     (read), so it answers until at least read+TokenCacheFor: a 401 before then is the
//     server having forgotten it (the notice; or, rarely, the Bus's re-read every
//     events.ResyncInterval, which the first observation rules out as the only cause).
//     A slow CLI start can push the exchange past that window, which proves nothing; such
//     an attempt is repeated with a fresh token.
func TestTokenRevokedThroughTheCLIIsRefusedAtOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// store is the --store of the server and the CLI ("" for the data directory's
		// SQLite file) and the transport of that store, for the test to listen on.
		store func(t *testing.T, dir string) (string, events.Transport)
	}{
		{"SQLite", func(t *testing.T, dir string) (string, events.Transport) {
			ss, err := sqlitestore.Open(context.Background(), filepath.Join(dir, "gorunner.db"))
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, ss.Close()) })
			return "", ss.Events()
		}},
		{"Redis", func(t *testing.T, _ string) (string, events.Transport) {
			url := redisStore(t)
			rs, err := redisstore.Open(context.Background(), url, nil)
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, rs.Close()) })
			return url, rs.Events()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			logs := &syncbuf.Buffer{}
			var args []string
			store, transport := tc.store(t, dir)
			if store != "" {
				args = []string{"--store", store}
			}
			s := startServeLogging(t, dir, logs, args...)
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("server logs:\n%s", logs.String())
				}
			})
			heard := listen(t, transport)
			const attempts = 5
			for i := range attempts {
				if revokeThroughCLI(t, s, args, heard) {
					return
				}
				t.Logf("attempt %d: the exchange outlasted %s, proving nothing; trying again", i+1, auth.TokenCacheFor)
			}
			t.Fatalf("in %d attempts, the server never refused a token revoked through the CLI before its held entry expired", attempts)
		})
	}
}

// revokeThroughCLI makes a token, has s hold it, revokes it with `gorunner token revoke`,
// requires the CLI's notice on heard, and polls s until it refuses the token; it reports
// whether the refusal came while the held entry was still valid.
func revokeThroughCLI(t *testing.T, s *server, storeArgs []string, heard <-chan events.Message) bool {
	t.Helper()
	status, body := call(t, s.adminToken(t), "POST", s.url+"/api/tokens", `{"name": "revoked-by-cli"}`)
	require.Equal(t, http.StatusCreated, status, body)
	tok := body["data"].(map[string]any)
	id, secret := tok["id"].(string), tok["token"].(string)

	read := time.Now()
	status, body = call(t, secret, "GET", s.url+"/api/workflows", "")
	require.Equal(t, http.StatusOK, status, body)
	status, _ = call(t, secret, "GET", s.url+"/api/workflows", "")
	require.Equal(t, http.StatusOK, status, "held: answered from memory")

	cmd := exec.Command(binary(t), append([]string{"token", "revoke", id, "--data-dir", s.dataDir}, storeArgs...)...)
	// A race-enabled binary sleeps 1 s at exit by default, after its work is done; that
	// would put every exchange past the window.
	cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Empty(t, string(out), "a revoke that told the servers prints nothing")
	exited := time.Now()

	refusedBy := pollUntilRefused(t, s, secret)
	requireTokensNotice(t, heard)
	t.Logf("refused %s after the held read began, %s after the CLI exited",
		refusedBy.Sub(read).Round(time.Millisecond), refusedBy.Sub(exited).Round(time.Millisecond))
	return refusedBy.Before(read.Add(auth.TokenCacheFor))
}

// listen subscribes to transport, as a server's Bus does, until the test ends.
func listen(t *testing.T, transport events.Transport) <-chan events.Message {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	in, err := transport.Subscribe(ctx)
	require.NoError(t, err)
	return in
}

// requireTokensNotice takes messages from heard until one names events.Tokens; the CLI
// has exited, so its notice is on its way (the SQLite log is polled every
// sqlitestore.EventsPollInterval). 10 s only bounds a failing test.
func requireTokensNotice(t *testing.T, heard <-chan events.Message) {
	t.Helper()
	giveUp := time.After(10 * time.Second)
	for {
		select {
		case m, ok := <-heard:
			require.True(t, ok, "the subscription ended")
			if slices.Contains(m.Topics, events.Tokens) {
				return
			}
		case <-giveUp:
			t.Fatal("the CLI's revoke was not told on the store's transport (events.Tokens)")
		}
	}
}

// pollUntilRefused asks s with secret until it answers 401 and returns when that answer
// had arrived; it fails the test if that takes 10 s.
func pollUntilRefused(t *testing.T, s *server, secret string) time.Time {
	t.Helper()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	giveUp := time.Now().Add(10 * time.Second)
	for {
		status, body := call(t, secret, "GET", s.url+"/api/workflows", "")
		now := time.Now()
		if status == http.StatusUnauthorized {
			return now
		}
		require.Equal(t, http.StatusOK, status, body)
		require.True(t, now.Before(giveUp), "the revoked token was still accepted after 10 s")
		<-tick.C
	}
}
