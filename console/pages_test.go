package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/console"
	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/internal/testclock"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/runner/runnertest"
)

var runLink = regexp.MustCompile(`href="/console/runs/([0-9a-f-]{36})"`)

// TestRunPages: runs filter by workflow and status and page PageSize at a time; a run
// page shows its timeline; keys and tokens pages work.
func TestRunPages(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "")
	e.createWorkflow(greetYAML)
	e.createWorkflow(strings.Replace(greetYAML, "name: greet", "name: other", 1))
	b := e.browser()
	b.signIn(e.token)
	csrf := b.csrf("/console/workflows/greet")
	require.Equal(t, http.StatusSeeOther, b.post("/console/workflows/greet/publish", url.Values{"csrf": {csrf}}).Status)
	require.Equal(t, http.StatusSeeOther, b.post("/console/workflows/other/publish", url.Values{"csrf": {csrf}}).Status)

	ctx := context.Background()
	var last *runner.Run
	for i := range console.PageSize + 1 {
		res, err := e.engine.Submit(ctx, runner.SubmitParams{Workflow: "greet", Input: json.RawMessage(fmt.Sprintf(`{"name": "n%d"}`, i))})
		require.NoError(t, err)
		last = res.Run
	}
	_, err := e.engine.Submit(ctx, runner.SubmitParams{Workflow: "other", Input: json.RawMessage(`{"name": "x"}`)})
	require.NoError(t, err)
	done, err := e.engine.Wait(ctx, last.ID, 30*time.Second)
	require.NoError(t, err)
	require.Equal(t, runner.StatusCompleted, done.Status)

	first := b.get("/console/runs?workflow=greet")
	require.Equal(t, http.StatusOK, first.Status)
	require.Len(t, runLink.FindAllStringSubmatch(first.Body, -1), console.PageSize)
	require.NotContains(t, first.Body, ">other")
	next := regexp.MustCompile(`href="(/console/runs\?[^"]+)">Next page`).FindStringSubmatch(first.Body)
	require.NotNil(t, next, "a next page past PageSize runs")
	second := b.get(html.UnescapeString(next[1]))
	require.Len(t, runLink.FindAllStringSubmatch(second.Body, -1), 1)
	require.NotContains(t, second.Body, "Next page")

	require.Equal(t, http.StatusBadRequest, b.get("/console/runs?status=bogus").Status)
	require.Contains(t, b.get("/console/runs?workflow=other&status=failed").Body, "No runs match")

	p := b.get("/console/runs/" + done.ID)
	require.Equal(t, http.StatusOK, p.Status)
	require.Contains(t, p.Body, `id="step-0"`)
	require.Contains(t, p.Body, done.Steps[0].StepID)
	require.Contains(t, p.Body, `Hello, n25!`)
	require.Equal(t, http.StatusNotFound, b.get("/console/runs/0190a0a0-0000-7000-8000-000000000000").Status)
}

// TestRunPagesShort: a page of runs that ends before it found any (completed runs under
// newer waiting ones, each page examining 2) says so and links the next page, which goes
// on to the completed run.
func TestRunPagesShort(t *testing.T) {
	t.Parallel()
	e := newEnvOver(t, func(st runner.Store) runner.Store { return &runnertest.Examining{Store: st, N: 2} })
	e.createWorkflow(greetYAML)
	e.createWorkflow("name: nap\ninput: {type: object}\nsteps:\n  - id: nap\n    sleep: {duration: 1h}\n")
	ctx := context.Background()
	for _, name := range []string{"greet", "nap"} {
		_, _, err := e.catalog.Publish(ctx, name, auth.Local())
		require.NoError(t, err)
	}
	res, err := e.engine.Submit(ctx, runner.SubmitParams{Workflow: "greet", Input: json.RawMessage(`{"name": "Ada"}`)})
	require.NoError(t, err)
	done, err := e.engine.Wait(ctx, res.Run.ID, 30*time.Second)
	require.NoError(t, err)
	require.Equal(t, runner.StatusCompleted, done.Status)
	for range 2 {
		_, err := e.engine.Submit(ctx, runner.SubmitParams{Workflow: "nap", Input: json.RawMessage(`{}`)})
		require.NoError(t, err)
	}
	b := e.browser()
	b.signIn(e.token)
	first := b.get("/console/runs?status=completed")
	require.Equal(t, http.StatusOK, first.Status)
	require.Empty(t, runLink.FindAllStringSubmatch(first.Body, -1))
	require.Contains(t, first.Body, "older runs follow")
	next := regexp.MustCompile(`href="(/console/runs\?[^"]+)">Next page`).FindStringSubmatch(first.Body)
	require.NotNil(t, next, "an empty page that examined its bound links the next")
	second := b.get(html.UnescapeString(next[1]))
	require.Equal(t, [][]string{{`href="/console/runs/` + done.ID + `"`, done.ID}}, runLink.FindAllStringSubmatch(second.Body, -1))
	require.NotContains(t, second.Body, "Next page")
}

func TestKeysAndTokensPages(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "")
	b := e.browser()
	b.signIn(e.token)
	require.Contains(t, b.get("/console/keys").Body, "No keys kept")

	csrf := b.csrf("/console/tokens")
	p := b.post("/console/tokens", url.Values{"csrf": {csrf}, "name": {"ci"}})
	require.Equal(t, http.StatusCreated, p.Status)
	secret := regexp.MustCompile(`id="secret" readonly value="(gr_[^"]+)"`).FindStringSubmatch(p.Body)
	require.NotNil(t, secret, "the secret is shown once")
	require.NotContains(t, b.get("/console/tokens").Body, secret[1], "and never again")
	require.Equal(t, http.StatusBadRequest, b.post("/console/tokens", url.Values{"csrf": {csrf}, "name": {""}}).Status)

	principal, err := e.auth.Authenticate(context.Background(), secret[1])
	require.NoError(t, err)
	_, err = e.idem.Do(context.Background(), idempotency.Request{Scope: idempotency.PrincipalScope(principal.ID), Key: "k-1",
		Method: "POST", Path: "/api/workflows/greet/run"}, func(context.Context) (*idempotency.Response, error) {
		return &idempotency.Response{Status: 202, Body: []byte(`{"data":{"id":"r-1","workflowId":"w"}}`), RunID: "r-1"}, nil
	})
	require.NoError(t, err)
	ci := e.browser()
	ci.signIn(secret[1])
	keys := ci.get("/console/keys").Body
	require.Contains(t, keys, "<code>k-1</code>")
	require.Contains(t, keys, `href="/console/runs/r-1"`)
	require.Contains(t, keys, ">kept<")
	require.NotContains(t, b.get("/console/keys").Body, "k-1", "another principal's keys are not shown")

	tokens, err := e.auth.List(context.Background())
	require.NoError(t, err)
	var id string
	for _, tk := range tokens {
		if tk.Name == "ci" {
			id = tk.ID
		}
	}
	p = b.post("/console/tokens/"+id+"/revoke", url.Values{"csrf": {csrf}})
	require.Equal(t, http.StatusSeeOther, p.Status)
	require.Equal(t, http.StatusSeeOther, ci.get("/console/keys").Status, "the revoked token's session ended")
}

// TestSessionTTL: a session ends SessionTTL after sign-in, and not a second before.
func TestSessionTTL(t *testing.T) {
	t.Parallel()
	start := time.Now()
	c := testclock.New(start)
	e := newEnvWith(t, console.Config{Now: c.Now})
	b := e.browser()
	b.signIn(e.token)
	c.Set(start.Add(console.SessionTTL - time.Second))
	require.Equal(t, http.StatusOK, b.get("/console/runs").Status)
	c.Set(start.Add(console.SessionTTL + time.Second))
	require.Equal(t, http.StatusSeeOther, b.get("/console/runs").Status)
}
