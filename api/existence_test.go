package api_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRunListHidesWhichWorkflowsExist probes, with a token narrowed to tag billing, a run
// list filtered to a workflow it may not read (published, draft only, by name, by ID) and
// to one that does not exist: the answers are the same bytes, so the filter does not tell
// which workflows exist. An admin is still told that a workflow does not exist.
func TestRunListHidesWhichWorkflowsExist(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.publish(greetDef("greet"))
	e.startAs(e.token, "greet", map[string]any{"name": "Ada"})
	draft := e.create("draft")
	billing := e.mint("billing", "runs:read:tag=billing", "runs:write:tag=billing")

	list := func(workflow, rest string) answer {
		return e.doAs(billing, "GET", "/api/runs?workflow="+url.QueryEscape(workflow)+rest, nil)
	}
	for _, tc := range []struct {
		name           string
		known, unknown string
		rest           string
	}{
		{"published, by name", "greet", "nosuch", ""},
		{"draft only, by name", "draft", "nosuch", ""},
		{"by ID", draft["id"].(string), "0190c0de-0000-7000-8000-000000000000", ""},
		{"with a status", "greet", "nosuch", "&status=completed&limit=5"},
		{"with a cursor never given out", "greet", "nosuch", "&cursor=bogus"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			known, unknown := list(tc.known, tc.rest), list(tc.unknown, tc.rest)
			require.Equal(t, unknown.Status, known.Status, "known: %s\nunknown: %s", known.Raw, unknown.Raw)
			require.Equal(t, unknown.Header.Get("Content-Type"), known.Header.Get("Content-Type"))
			require.Equal(t, string(unknown.Raw), string(known.Raw))
		})
	}

	a := e.do("GET", "/api/runs?workflow=nosuch", nil)
	require.Equal(t, http.StatusNotFound, a.Status, "an admin reads every workflow: no oracle to close")
	require.Equal(t, "NOT_FOUND", a.errorCode())
	require.Len(t, e.do("GET", "/api/runs?workflow=greet", nil).Body["data"], 1)
}
