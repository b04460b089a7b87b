package api_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/api"
	"github.com/gorunner/gorunner/runner"
)

// sse is one Server-Sent Event as a client sees it; ID is the last id seen so far.
type sse struct {
	ID   string
	Name string
	Data map[string]any
}

// openEvents opens the event stream of run id, resuming after lastID when it is set, and
// delivers its events until the stream ends (the channel is closed then).
func (e *env) openEvents(id, lastID string) (<-chan sse, func()) {
	e.t.Helper()
	req, err := http.NewRequest("GET", e.srv.URL+"/api/runs/"+id+"/events", nil)
	require.NoError(e.t, err)
	req.Header.Set("Authorization", "Bearer "+e.token)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	res, err := e.srv.Client().Do(req)
	require.NoError(e.t, err)
	require.Equal(e.t, http.StatusOK, res.StatusCode)
	require.Equal(e.t, "text/event-stream", res.Header.Get("Content-Type"))
	out := make(chan sse, 64)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(res.Body)
		ev := sse{ID: lastID}
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "id: "):
				ev.ID = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "event: "):
				ev.Name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				_ = json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev.Data)
			case line == "" && ev.Name != "":
				out <- ev
				ev = sse{ID: ev.ID}
			}
		}
	}()
	return out, func() { res.Body.Close() }
}

// next waits for the next event of a stream.
func next(t *testing.T, events <-chan sse) sse {
	t.Helper()
	select {
	case ev, ok := <-events:
		require.True(t, ok, "the stream ended")
		return ev
	case <-time.After(30 * time.Second):
		t.Fatal("no event within 30s")
		return sse{}
	}
}

func stepOf(ev sse) (int, string) {
	step := ev.Data["step"].(map[string]any)
	return int(ev.Data["index"].(float64)), step["status"].(string)
}

func hookWorkflow(e *env, name string) {
	e.t.Helper()
	def := map[string]any{
		"name":  name,
		"input": map[string]any{"type": "object", "properties": map[string]any{"ticket": map[string]any{"type": "string"}}},
		"steps": []any{
			map[string]any{"id": "approve", "hook": map[string]any{"token": "approve:${{ input.ticket }}"}},
			map[string]any{"id": "done", "set": "${{ steps.approve.output }}"},
		},
	}
	a := e.do("POST", "/api/workflows", def)
	require.Equal(e.t, http.StatusCreated, a.Status, string(a.Raw))
	require.Equal(e.t, http.StatusCreated, e.do("POST", "/api/workflows/"+name+"/publish", nil).Status)
}

// TestRunEventsResumeAcrossRestart: a client sees a run's steps and status as they change;
// after the server restarts (a new one on the same SQLite file), Last-Event-ID resumes the
// stream without repeating what the client saw, and the stream ends after the final status.
func TestRunEventsResumeAcrossRestart(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "gorunner.db")
	e := newEnvAt(t, path)
	hookWorkflow(e, "ev-approve")
	id := e.do("POST", "/api/workflows/ev-approve/run", map[string]any{"ticket": "t1"}).data()["id"].(string)

	events, closeStream := e.openEvents(id, "")
	var last sse
	for last.Name != "status" || last.Data["status"] != "waiting" {
		last = next(t, events)
		if last.Name == "step" {
			i, status := stepOf(last)
			require.True(t, i == 0 || status == "pending", "only the first step moves before the hook: %v", last)
		}
	}
	require.NotEmpty(t, last.ID)
	closeStream()
	e.stop()

	e2 := newEnvAt(t, path)
	resumed, closeResumed := e2.openEvents(id, last.ID)
	defer closeResumed()
	res := e2.do("POST", "/api/hooks/approve:t1/resume", map[string]any{"ok": true})
	require.Equal(t, http.StatusAccepted, res.Status, string(res.Raw))

	first := next(t, resumed)
	require.Equal(t, "step", first.Name, "nothing the client saw before the restart is sent again")
	i, status := stepOf(first)
	require.Equal(t, 0, i)
	require.Equal(t, "completed", status)
	var seen []sse
	for ev := first; ev.Name != "end"; ev = next(t, resumed) {
		seen = append(seen, ev)
	}
	final := seen[len(seen)-1]
	require.Equal(t, "status", final.Name)
	require.Equal(t, "completed", final.Data["status"])
	require.Equal(t, map[string]any{"ok": true}, final.Data["output"])
	before, err := strconv.Atoi(last.ID)
	require.NoError(t, err)
	after, err := strconv.Atoi(final.ID)
	require.NoError(t, err)
	require.Greater(t, after, before)
	_, open := <-resumed
	require.False(t, open, "the stream ends after the final status")

	again, closeAgain := e2.openEvents(id, final.ID)
	defer closeAgain()
	require.Equal(t, "end", next(t, again).Name, "a client that saw the end only gets the end")

	full, closeFull := e2.openEvents(id, "")
	defer closeFull()
	var names []string
	for ev := range full {
		names = append(names, ev.Name)
	}
	require.Equal(t, []string{"step", "step", "status", "end"}, names, "a new client gets the run as it stands")
}

func TestRunEventsUnknownRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.do("GET", "/api/runs/0190a0a0-0000-7000-8000-000000000000/events", nil)
	require.Equal(t, http.StatusNotFound, a.Status)
	require.Equal(t, "NOT_FOUND", a.errorCode())
	require.Equal(t, http.StatusUnauthorized, e.doAs("", "GET", "/api/runs/x/events", nil).Status)
}

// TestRunEventsHeartbeat: a quiet stream sends a comment every heartbeat, and nothing else.
func TestRunEventsHeartbeat(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, filepath.Join(t.TempDir(), "gorunner.db"), api.Config{EventsHeartbeat: 20 * time.Millisecond})
	hookWorkflow(e, "ev-quiet")
	id := e.do("POST", "/api/workflows/ev-quiet/run", map[string]any{"ticket": "q"}).data()["id"].(string)
	require.Eventually(t, func() bool {
		return e.do("GET", "/api/runs/"+id, nil).data()["status"] == "waiting"
	}, 30*time.Second, 10*time.Millisecond)
	req, err := http.NewRequest("GET", e.srv.URL+"/api/runs/"+id+"/events", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+e.token)
	res, err := e.srv.Client().Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	var lines []string
	for beats := 0; beats < 3 && sc.Scan(); {
		lines = append(lines, sc.Text())
		if sc.Text() == ": heartbeat" {
			beats++
		}
	}
	require.Contains(t, lines, "event: status", "the run as it stands first")
	require.Equal(t, ": heartbeat", lines[len(lines)-1])
}

// TestRunEventsCountAsWaits: an event stream holds one of the caller's
// runner.MaxWaitsPerPrincipal waits, so one more is 429 RATE_LIMITED, not one more
// goroutine and connection per request.
func TestRunEventsCountAsWaits(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	hookWorkflow(e, "ev-many")
	id := e.do("POST", "/api/workflows/ev-many/run", map[string]any{"ticket": "m"}).data()["id"].(string)
	for range runner.MaxWaitsPerPrincipal {
		_, stop := e.openEvents(id, "")
		defer stop()
	}
	req, err := http.NewRequest("GET", e.srv.URL+"/api/runs/"+id+"/events", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+e.token)
	res, err := e.srv.Client().Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusTooManyRequests, res.StatusCode)
	require.NotEmpty(t, res.Header.Get("Retry-After"))
}
