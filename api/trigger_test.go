package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRunTriggers starts a run from each HTTP surface and finds each by ?trigger=.
func TestRunTriggers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	wf := e.create("t-greet")
	require.Equal(t, http.StatusCreated, e.do("POST", "/api/workflows/t-greet/publish", nil).Status)
	input := map[string]any{"name": "Ada"}
	started := map[string]string{}
	a := e.do("POST", "/api/workflows/t-greet/run", input)
	require.Equal(t, http.StatusAccepted, a.Status, string(a.Raw))
	started["api"] = a.data()["id"].(string)
	a = e.do("POST", "/api/workflows/t-greet/run", input, "User-Agent", "gorunner-cli/1.2.3")
	require.Equal(t, http.StatusAccepted, a.Status, string(a.Raw))
	started["cli"] = a.data()["id"].(string)
	hook := strings.TrimPrefix(wf["webhookUrl"].(string), e.srv.URL)
	a = e.doAs("", "POST", hook, input)
	require.Contains(t, []int{http.StatusOK, http.StatusAccepted}, a.Status, string(a.Raw))
	started["webhook"] = a.data()["id"].(string)
	a = e.do("POST", "/api/runs/"+started["api"]+"/rerun", nil)
	require.Equal(t, http.StatusAccepted, a.Status, string(a.Raw))
	started["rerun"] = a.data()["id"].(string)

	for trigger, id := range started {
		run := e.do("GET", "/api/runs/"+id, nil).data()
		require.Equal(t, map[string]any{"type": trigger}, run["trigger"], trigger)
		list := e.do("GET", "/api/runs?trigger="+trigger, nil)
		require.Equal(t, http.StatusOK, list.Status)
		runs := list.Body["data"].([]any)
		require.Len(t, runs, 1, trigger)
		require.Equal(t, id, runs[0].(map[string]any)["id"], trigger)
	}
	require.Empty(t, e.do("GET", "/api/runs?trigger=schedule", nil).Body["data"])
	bad := e.do("GET", "/api/runs?trigger=cron", nil)
	require.Equal(t, http.StatusBadRequest, bad.Status)
	require.Contains(t, string(bad.Raw), `"/trigger"`)
}
