package admission_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/admission"
	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/catalog"
	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/store/sqlitestore"
)

// TestRetryOnAnotherProcessAfterTheWorkflowChanged: a keyed request admitted by one process
// is retried on another, which holds nothing of the key, after the workflow was
// unpublished, or republished with an input schema the request no longer meets: the
// retry's Prepare fails, and it still gets the replay of the kept answer, not the error.
func TestRetryOnAnotherProcessAfterTheWorkflowChanged(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change func(ctx context.Context, c *catalog.Service, id string) error
	}{
		{"unpublished", func(ctx context.Context, c *catalog.Service, id string) error {
			_, err := c.Unpublish(ctx, id)
			return err
		}},
		{"input invalid under a new version", func(ctx context.Context, c *catalog.Service, id string) error {
			if _, err := c.Update(ctx, id, []byte(`{"name": "w", "input": {"type": "object", "required": ["order"]},
				"steps": [{"id": "a", "set": {"v": "2"}}]}`), 1); err != nil {
				return err
			}
			_, _, err := c.Publish(ctx, id, auth.Local())
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "db")
			first, firstKeys, c := process(t, path)
			w, err := c.Create(ctx, []byte(`{"name": "w", "input": {"type": "object"}, "steps": [{"id": "a", "set": {"v": "1"}}]}`))
			require.NoError(t, err)
			_, _, err = c.Publish(ctx, "w", auth.Local())
			require.NoError(t, err)
			req := admission.Request{Workflow: "w", Name: "w", Input: json.RawMessage(`{}`), Keyed: true, Key: "k",
				Scope: idempotency.PrincipalScope("alice"), By: &alice}
			kept, err := admission.Start(ctx, first, firstKeys, req)
			require.NoError(t, err)
			require.NoError(t, tt.change(ctx, c, w.ID))

			second, secondKeys, _ := process(t, path)
			_, err = admission.Start(ctx, second, secondKeys, admission.Request{Workflow: "w", Name: "w",
				Input: json.RawMessage(`{}`), By: &alice})
			require.Error(t, err, "without its key the request fails")
			retry, err := admission.Start(ctx, second, secondKeys, req)
			require.NoError(t, err)
			require.True(t, retry.Replayed)
			require.Equal(t, kept.RunID, retry.RunID)
			require.Equal(t, kept.Body, retry.Body)
		})
	}
}

// process is one process on the SQLite store at path: its engine (started), its keyed
// replay and its catalog.
func process(t *testing.T, path string) (*runner.Engine, *idempotency.Service, *catalog.Service) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, path)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	c, err := catalog.New(st, &catalog.Config{SecretKey: make([]byte, 32)})
	require.NoError(t, err)
	e, err := runner.New(st, c, c, &runner.Config{Concurrency: 2})
	require.NoError(t, err)
	require.NoError(t, e.Start(ctx))
	t.Cleanup(func() { require.NoError(t, e.Stop(context.Background())) })
	keys, err := idempotency.New(st, nil)
	require.NoError(t, err)
	return e, keys, c
}
