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

// TestKeyedAdmissionOfAChangedWorkflow: a keyed admission prepared from the catalog's kept
// answer after another process published a new version is not written as prepared (its
// answer names a run of the old version): it goes the claim → submit → complete way, and
// the key keeps the answer of the run actually written, on the new version.

// alice starts the tests' runs: an admin.
var alice = auth.Principal{ID: "alice", Scopes: auth.AdminScopes()}

func TestKeyedAdmissionOfAChangedWorkflow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	here, err := catalog.New(st, &catalog.Config{SecretKey: make([]byte, 32)})
	require.NoError(t, err)
	elsewhere, err := catalog.New(st, &catalog.Config{SecretKey: make([]byte, 32)})
	require.NoError(t, err)
	def := func(v string) []byte {
		return []byte(`{"name": "w", "input": {"type": "object"}, "steps": [{"id": "a", "set": {"v": "` + v + `"}}]}`)
	}
	w, err := here.Create(ctx, def("1"))
	require.NoError(t, err)
	_, _, err = here.Publish(ctx, "w", auth.Local())
	require.NoError(t, err)
	e, err := runner.New(st, here, here, &runner.Config{Concurrency: 2})
	require.NoError(t, err)
	require.NoError(t, e.Start(ctx))
	t.Cleanup(func() { require.NoError(t, e.Stop(context.Background())) })
	keys, err := idempotency.New(st, nil)
	require.NoError(t, err)
	start := func(key string) *admission.Result {
		t.Helper()
		res, err := admission.Start(ctx, e, keys, admission.Request{Workflow: "w", Name: "w", Input: json.RawMessage(`{}`),
			Keyed: true, Key: key, Scope: idempotency.PrincipalScope("alice"), By: &alice})
		require.NoError(t, err)
		return res
	}
	first := start("k1") // the catalog here now keeps version 1
	require.Equal(t, 1, first.Run.Version)

	_, err = elsewhere.Update(ctx, w.ID, def("2"), 1)
	require.NoError(t, err)
	_, _, err = elsewhere.Publish(ctx, "w", auth.Local())
	require.NoError(t, err)

	res := start("k2")
	require.False(t, res.Replayed)
	r, err := e.Get(ctx, res.RunID)
	require.NoError(t, err)
	require.Equal(t, 2, r.Version, "the run written is of the version current at its write")
	require.Equal(t, runner.StatusCompleted, r.Status)
	require.JSONEq(t, `{"v":"2"}`, string(r.Output))
	replay := start("k2")
	require.True(t, replay.Replayed)
	require.Equal(t, res.RunID, replay.RunID, "the key keeps the answer of the run written")
	runs, _, err := st.ListRuns(ctx, runner.ListRunsParams{WorkflowID: w.ID, Limit: 10})
	require.NoError(t, err)
	require.Len(t, runs, 2, "the run prepared on version 1 was never written")
}

// TestRunOnlyAnswer: an unkeyed admission asked RunOnly answers with the run, its status
// and ID, and encodes no REST body; a keyed one still keeps (and answers) the full body, and
// without RunOnly the body is the REST answer.
func TestRunOnlyAnswer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, keys, cat := process(t, filepath.Join(t.TempDir(), "db"))
	_, err := cat.Create(ctx, []byte(`{"name": "w", "input": {"type": "object"}, "steps": [{"id": "a", "set": 1}]}`))
	require.NoError(t, err)
	_, _, err = cat.Publish(ctx, "w", auth.Local())
	require.NoError(t, err)
	for _, tc := range []struct {
		name         string
		keyed, only  bool
		expectedBody bool
	}{
		{"unkeyed, run only", false, true, false},
		{"unkeyed", false, false, true},
		{"keyed, run only", true, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := admission.Request{Workflow: "w", Name: "w", Input: json.RawMessage(`{}`), By: &alice, RunOnly: tc.only}
			if tc.keyed {
				req.Keyed, req.Key, req.Scope = true, tc.name, idempotency.PrincipalScope("alice")
			}
			res, err := admission.Start(ctx, e, keys, req)
			require.NoError(t, err)
			require.Equal(t, 202, res.Status)
			require.NotNil(t, res.Run)
			require.Equal(t, res.Run.ID, res.RunID)
			require.Equal(t, runner.StatusCompleted, res.Run.Status)
			if !tc.expectedBody {
				require.Empty(t, res.Body)
				return
			}
			var body struct {
				Data struct {
					ID string `json:"id"`
				} `json:"data"`
			}
			require.NoError(t, json.Unmarshal(res.Body, &body))
			require.Equal(t, res.RunID, body.Data.ID)
		})
	}
}
