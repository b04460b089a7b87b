package api_test

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/internal/seal"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/runner/runnertest"
	"github.com/gorunner/gorunner/store/storecodec"
)

// TestRunListCursorHidesUnseenRuns is the attack of a token narrowed to tag billing on the
// run list: a page examines a bounded number of runs (here 2), so it ends at runs of
// workflows the token may not read, and a plain cursor would hand it the ID of the last
// one, which GET /api/runs/{id} would answer with a 403 naming its workflow's scope. The
// cursor is sealed: no encoding of it, nor of the answer, holds the unseen runs' IDs;
// following it (here or on a second process sharing the store and secret key) still finds
// the billing run once. A plain cursor forged from the store's format, a tampered sealed
// one and a value sealed for another use all answer 400 VALIDATION_ERROR.
func TestRunListCursorHidesUnseenRuns(t *testing.T) {
	t.Parallel()
	examining := func(st runner.Store) runner.Store { return &runnertest.Examining{Store: st, N: 2} }
	path := filepath.Join(t.TempDir(), "gorunner.db")
	e := newEnvConfig(t, envConfig{path: path, runs: examining})
	other := newEnvConfig(t, envConfig{path: path, runs: examining})
	for name, tag := range map[string]string{"charge": "billing", "pay": "payroll"} {
		def := greetDef(name)
		def["tags"] = []any{tag}
		e.publish(def)
	}
	billing := e.mint("billing", "runs:read:tag=billing")
	charge := e.startAs(e.token, "charge", map[string]any{"name": "Ada"})
	var unseen []string
	for range 2 {
		unseen = append(unseen, e.startAs(e.token, "pay", map[string]any{"name": "Bob"}))
	}
	for _, id := range append([]string{charge}, unseen...) {
		require.Equal(t, "completed", e.do("GET", "/api/runs/"+id+"?wait=30s", nil).data()["status"])
	}
	require.Equal(t, http.StatusForbidden, e.doAs(billing, "GET", "/api/runs/"+unseen[0], nil).Status,
		"the ID alone would tell the token the run's workflow")

	first := e.doAs(billing, "GET", "/api/runs?limit=10", nil)
	require.Equal(t, http.StatusOK, first.Status, string(first.Raw))
	require.Equal(t, []any{}, first.Body["data"], "the 2 runs examined are payroll's")
	cursor, _ := first.Body["nextCursor"].(string)
	require.NotEmpty(t, cursor)
	for _, id := range unseen {
		requireHidden(t, id, first.Raw, cursor)
	}

	for _, env := range []*env{e, other} {
		a := env.doAs(billing, "GET", "/api/runs?limit=10&cursor="+cursor, nil)
		require.Equal(t, http.StatusOK, a.Status, string(a.Raw))
		data := a.Body["data"].([]any)
		require.Len(t, data, 1)
		require.Equal(t, charge, data[0].(map[string]any)["id"])
		require.Empty(t, a.Body["nextCursor"])
	}

	plain, err := storecodec.EncodeCursor(storecodec.RunCursor{CreatedAt: time.Now().UnixNano(), ID: unseen[0]})
	require.NoError(t, err)
	key := bytes.Repeat([]byte{9}, 32) // stacktest's secret key, the catalog's and the engine's
	session, err := seal.For(key, "gorunner console session v1")
	require.NoError(t, err)
	asSession, err := session.SealText([]byte(plain), []byte("gorunner_session"))
	require.NoError(t, err)
	secrets, err := seal.New(key)
	require.NoError(t, err)
	asSecret, err := secrets.SealText([]byte(plain), []byte("gorunner run cursor v1"))
	require.NoError(t, err)
	tampered := []byte(cursor)
	tampered[len(tampered)/2] ^= 1
	for name, bad := range map[string]string{
		"plain cursor in the store's format":        plain,
		"sealed cursor altered":                     string(tampered),
		"sealed cursor cut short":                   cursor[:len(cursor)-4],
		"sealed as a console session":               asSession,
		"sealed as a connection secret":             asSecret,
		"sealed cursor with another in front of it": cursor + cursor,
	} {
		t.Run(name, func(t *testing.T) {
			a := e.doAs(billing, "GET", "/api/runs?limit=10&cursor="+bad, nil)
			require.Equal(t, http.StatusBadRequest, a.Status, string(a.Raw))
			require.Equal(t, "VALIDATION_ERROR", a.errorCode())
			require.Contains(t, string(a.Raw), "invalid cursor")
		})
	}
}

// requireHidden checks that id appears in no form in answer nor in what cursor decodes to,
// read as base64 (standard or URL, padded or not) or hex.
func requireHidden(t *testing.T, id string, answer []byte, cursor string) {
	t.Helper()
	forms := []string{id, strings.ReplaceAll(id, "-", ""), hex.EncodeToString([]byte(id))}
	encodings := []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding}
	for _, enc := range encodings {
		for shift := range 3 { // id at any offset modulo 3 in the encoded text
			whole := enc.EncodeToString([]byte(strings.Repeat("x", shift) + id))
			forms = append(forms, whole[4*((shift+2)/3):len(whole)-4])
		}
	}
	for _, f := range forms {
		require.NotContains(t, strings.ToLower(string(answer)), strings.ToLower(f))
	}
	decoded := []string{cursor}
	for _, enc := range encodings {
		if b, err := enc.DecodeString(cursor); err == nil {
			decoded = append(decoded, string(b))
		}
	}
	if b, err := hex.DecodeString(cursor); err == nil {
		decoded = append(decoded, string(b))
	}
	for _, d := range decoded {
		require.NotContains(t, d, id)
		require.NotContains(t, d, strings.ReplaceAll(id, "-", ""))
	}
}
