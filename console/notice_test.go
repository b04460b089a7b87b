package console_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/runner"
)

const hookYAML = `name: wait
input: {type: object}
steps:
  - id: approve
    hook: {token: "approve:k7-hush"}
`

// TestResumeNoticeNeverInURL resumes a hook from the run page: the notice naming the hook
// token reaches the run page once, in a sealed cookie, and never in a URL (the Location,
// so logs, history and Referer). A notice put in a URL or a forged cookie is not shown.
func TestResumeNoticeNeverInURL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, "")
	wf := e.createWorkflow(hookYAML)
	_, _, err := e.catalog.Publish(ctx, wf.ID, auth.Local())
	require.NoError(t, err)
	res, err := e.engine.Submit(ctx, runner.SubmitParams{Workflow: "wait", Input: json.RawMessage(`{}`)})
	require.NoError(t, err)
	id := res.Run.ID
	require.Eventually(t, func() bool {
		r, err := e.engine.Get(ctx, id)
		return err == nil && r.Status == runner.StatusWaiting
	}, 10*time.Second, 20*time.Millisecond)
	b := e.browser()
	b.signIn(e.token)
	runPath := "/console/runs/" + id

	p := b.post("/console/hooks/resume", url.Values{"csrf": {b.csrf(runPath)}, "token": {"approve:k7-hush"},
		"environment": {runner.EnvProduction}, "run": {id}, "payload": {`{"ok": true}`}})
	require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
	require.Equal(t, runPath, p.Location, "no query: the notice is not in the URL")
	require.NotContains(t, p.Header.Get("Set-Cookie"), "k7-hush", "the notice is sealed")
	require.NotContains(t, b.get("/console/workflows/wait").Body, `class="notice"`, "another page neither shows nor takes the notice")
	require.Contains(t, b.get(runPath).Body, "Payload delivered to approve:k7-hush.")
	require.NotContains(t, b.get(runPath).Body, "Payload delivered", "a notice shows once")

	require.NotContains(t, b.get(runPath+"?notice=Your+session+expired.+Call+us").Body, "Call us", "a URL cannot write on the page")
	u, err := url.Parse(e.srv.URL + "/console")
	require.NoError(t, err)
	session := ""
	for _, c := range b.client.Jar.Cookies(u) {
		if c.Name == "gorunner_session" {
			session = c.Value
		}
	}
	require.NotEmpty(t, session)
	for _, forged := range []string{"Your session expired", strings.Repeat("A", 80), session} {
		b.client.Jar.SetCookies(u, []*http.Cookie{{Name: "gorunner_notice", Value: forged, Path: "/console"}})
		p := b.get(runPath)
		require.Equal(t, http.StatusOK, p.Status)
		require.NotContains(t, p.Body, `class="notice"`, "a cookie not sealed as a notice is not shown: %.20s", forged)
	}
}
