package main

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/events"
	"github.com/gorunner/gorunner/store/sqlitestore"
)

// TestTokenRevokeTellsTheServers: `gorunner token revoke` puts events.Tokens on the SQLite
// file's change log before it returns, where a server's Bus hears it. (Redis, and a
// server refusing the token, are covered with the built binary in interop/cmd/gorunner.)
func TestTokenRevokeTellsTheServers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	ss, err := sqlitestore.Open(ctx, filepath.Join(dir, "gorunner.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, ss.Close()) })
	sctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	heard, err := ss.Events().Subscribe(sctx) // as a server's Bus does
	require.NoError(t, err)
	tokens, err := auth.New(ss, nil)
	require.NoError(t, err)
	tok, _, err := tokens.Issue(ctx, auth.IssueParams{Name: "agent", Scopes: auth.AdminScopes()})
	require.NoError(t, err)

	var out bytes.Buffer
	root := newRootCommand()
	root.SetArgs([]string{"token", "revoke", tok.ID, "--data-dir", dir, "--store", "sqlite:" + filepath.Join(dir, "gorunner.db")})
	root.SetOut(&out)
	root.SetErr(&out)
	require.NoError(t, root.ExecuteContext(ctx))
	require.Empty(t, out.String())
	_, err = ss.TokenByID(ctx, tok.ID)
	require.ErrorIs(t, err, auth.ErrNotFound)

	giveUp := time.After(10 * time.Second) // bounds a failing test only: the row is written
	for {
		select {
		case m := <-heard:
			if slices.Contains(m.Topics, events.Tokens) {
				require.Equal(t, cliOrigin, m.Origin)
				return
			}
		case <-giveUp:
			t.Fatal("no events.Tokens on the change log after the revoke returned")
		}
	}
}

// failing is a transport whose Publish fails.
type failing struct{ events.Transport }

func (failing) Publish(context.Context, events.Message) error { return errors.New("store down") }

// TestTellFailureWarns: a notice that cannot be sent is a warning, not the command's
// error: the change is made.
func TestTellFailureWarns(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	a := &app{log: slog.New(slog.NewTextHandler(&logs, nil)), transport: failing{}}
	a.tell(context.Background(), events.Tokens)
	require.Contains(t, logs.String(), "level=WARN")
	require.Contains(t, logs.String(), "store down")
	require.Contains(t, logs.String(), "topics=[tokens]")
}
