package mcpserver_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/store/redisstore/redistest"
	"github.com/gorunner/gorunner/tools"
)

const (
	orphanDef = `{"name":"orphan","input":{"type":"object"},
		"steps":[{"id":"wait","hook":{"token":"orphan:${{ run.id }}"}},{"id":"done","set":"${{ steps.wait.output }}"}]}`
	orphanV2Def = `{"name":"orphan","title":"Orphan, version 2","input":{"type":"object"},
		"steps":[{"id":"wait","hook":{"token":"orphan:${{ run.id }}"}},{"id":"done","set":"${{ steps.wait.output }}"}]}`
	holdDef = `{"name":"hold","input":{"type":"object"},
		"steps":[{"id":"call","http":{"method":"GET","url":"%s"}},{"id":"done","set":1}]}`
)

// TestRunWithoutItsVersion: on Redis a run of a published version keeps no copy of its
// definition and reads its version's record. With that record gone (evicted by an
// allkeys-* Redis, or deleted by hand), a process that never saw the definition reads the
// run (REST, the MCP resource, gorunner_get_run), cancels it and reruns it (alone and in
// bulk, on the workflow's current version) as any other run; its worker fails it saying
// why rather than claim it again at every lease's end; a worker holding such a run, its
// definition in hand, finishes it; and once the workflow is gone, its rerun is refused as
// any other run's of that workflow.
func TestRunWithoutItsVersion(t *testing.T) {
	ctx := context.Background()
	f := newRedisFixture(t, orphanDef)
	rdb := redistest.Client(t, f.redisURL)
	dropVersion := func(name string, version int) {
		wf, err := f.catalog.Get(ctx, name)
		require.NoError(t, err)
		require.NoError(t, rdb.Del(ctx, fmt.Sprintf("%swfver:%s:%d", f.redisPrefix, wf.ID, version)).Err())
	}
	send := func(p *fixture, method, path string, body any) (int, map[string]any) {
		res, out := p.rest(method, path, body, http.Header{})
		return res.StatusCode, out
	}
	start := func(name string) string {
		status, out := send(f, "POST", "/api/workflows/"+name+"/run", map[string]any{})
		require.Equal(t, http.StatusAccepted, status, out)
		return dataOf(out)["id"].(string)
	}
	settled := func(p *fixture, id, want string) map[string]any {
		status, out := send(p, "GET", "/api/runs/"+id+"?wait=10s", nil)
		require.Equal(t, http.StatusOK, status, out)
		require.Equal(t, want, dataOf(out)["status"], out)
		return dataOf(out)
	}

	// A worker holding a run when its version goes has the definition and finishes it.
	hold := newGate(t)
	publish(t, f.catalog, fmt.Sprintf(holdDef, hold.srv.URL))
	held := start("hold")
	select {
	case <-hold.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the run's http step did not start")
	}
	dropVersion("hold", 1)
	hold.open()
	settled(f, held, "completed")

	// Runs of version 1 wait on their hooks; version 2 is published, version 1's record
	// goes, and only g, which never read version 1, works from here on.
	a, b, c := start("orphan"), start("orphan"), start("orphan")
	for _, id := range []string{a, b, c} {
		settled(f, id, "waiting")
	}
	_, err := f.catalog.Update(ctx, "orphan", []byte(orphanV2Def), 0)
	require.NoError(t, err)
	_, _, err = f.catalog.Publish(ctx, "orphan", auth.Local())
	require.NoError(t, err)
	require.NoError(t, f.engine.Stop(ctx))
	dropVersion("orphan", 1)
	g := f.twin()

	run := settled(g, a, "waiting")
	require.Equal(t, float64(1), run["version"])
	session, _ := g.connect("")
	read, err := session.ReadResource(ctx, &mcp.ReadResourceParams{URI: tools.RunURI(a)})
	require.NoError(t, err)
	require.Len(t, read.Contents, 1)
	require.Contains(t, read.Contents[0].Text, a)
	res, out := call(t, session, "gorunner_get_run", map[string]any{"runId": a})
	require.False(t, res.IsError, text(res))
	require.Equal(t, "waiting", out["status"])

	status, body := send(g, "POST", "/api/runs/"+a+"/cancel", nil)
	require.Equal(t, http.StatusOK, status, body)
	require.Equal(t, "cancelled", dataOf(body)["status"], body)

	// Woken, b is claimed without its definition: its worker fails it, saying why. A wait
	// after the accepted resume outlasts the hook wait the payload ends.
	status, body = send(g, "POST", "/api/hooks/orphan:"+b+"/resume", map[string]any{"ok": true})
	require.Equal(t, http.StatusAccepted, status, body)
	failed := settled(g, b, "failed")
	runErr, _ := failed["error"].(map[string]any)
	require.Equal(t, "DEFINITION_ERROR", runErr["code"], failed)
	require.Equal(t, "wait", runErr["step"], failed)
	require.Contains(t, runErr["message"], "no longer in the store", failed)

	// Reruns run the current version, with the same input and environment.
	status, body = send(g, "POST", "/api/runs/"+a+"/rerun", nil)
	require.Equal(t, http.StatusAccepted, status, body)
	rerun := dataOf(body)
	require.Equal(t, a, rerun["rerunOf"])
	require.Equal(t, float64(2), rerun["version"])
	status, body = send(g, "POST", "/api/runs/rerun", map[string]any{"runIds": []string{b, c}})
	require.Equal(t, http.StatusAccepted, status, body)
	reruns, _ := body["data"].([]any)
	require.Len(t, reruns, 2, body)
	for i, of := range []string{b, c} {
		r := reruns[i].(map[string]any)
		require.Equal(t, of, r["rerunOf"])
		require.Equal(t, float64(2), r["version"])
	}

	// With its workflow gone, c is refused a rerun as a run of version 2 (whose record
	// is there) is: alone and in bulk.
	require.NoError(t, g.catalog.Delete(ctx, "orphan"))
	intact := rerun["id"].(string)
	for _, req := range []struct {
		path func(id string) string
		body func(id string) any
	}{
		{func(id string) string { return "/api/runs/" + id + "/rerun" }, func(string) any { return nil }},
		{func(string) string { return "/api/runs/rerun" }, func(id string) any { return map[string]any{"runIds": []string{id}} }},
	} {
		wantStatus, want := send(g, "POST", req.path(intact), req.body(intact))
		gotStatus, got := send(g, "POST", req.path(c), req.body(c))
		require.NotEqual(t, http.StatusAccepted, wantStatus, want)
		require.Equal(t, wantStatus, gotStatus, got)
		require.Equal(t, errorCode(want), errorCode(got), got)
	}
}

// dataOf is an answer's data object.
func dataOf(body map[string]any) map[string]any {
	d, _ := body["data"].(map[string]any)
	return d
}

// errorCode is an error answer's code.
func errorCode(body map[string]any) any {
	e, _ := body["error"].(map[string]any)
	return e["code"]
}
