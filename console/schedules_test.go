package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWorkflowPageSchedules: the workflow page shows the published version's schedules
// with their next runs.
func TestWorkflowPageSchedules(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "")
	e.createWorkflow(greetYAML + `schedules:
  - cron: "0 9 * * 1-5"
    timezone: Europe/Berlin
  - cron: "@every 1h"
`)
	b := e.browser()
	b.signIn(e.token)
	p := b.get("/console/workflows/greet")
	require.Equal(t, http.StatusOK, p.Status)
	require.Contains(t, p.Body, "The published version has no schedule.", "a draft's schedules do not tick")
	csrf := b.csrf("/console/workflows/greet")
	require.Equal(t, http.StatusSeeOther, b.post("/console/workflows/greet/publish", url.Values{"csrf": {csrf}}).Status)
	p = b.get("/console/workflows/greet")
	require.Contains(t, p.Body, "<code>0 9 * * 1-5</code></td><td>Europe/Berlin</td>")
	require.Contains(t, p.Body, "<code>@every 1h</code></td><td>UTC</td>")
	require.Equal(t, 2*5, strings.Count(p.Body, ":00:00Z"), "five next runs each, on the hour")
}
