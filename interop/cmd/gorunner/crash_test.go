package main_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/store/pgstore/pgtest"
)

// keyCounter is an HTTP endpoint that counts requests per Idempotency-Key. While hold is
// set, requests block after being counted, so a test can kill the caller mid-request.
type keyCounter struct {
	mu      sync.Mutex
	counts  map[string]int
	hold    bool
	arrived chan string
	release chan struct{}
}

func newKeyCounter() *keyCounter {
	return &keyCounter{counts: map[string]int{}, arrived: make(chan string, 10), release: make(chan struct{})}
}

func (k *keyCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Idempotency-Key")
	k.mu.Lock()
	k.counts[key]++
	hold := k.hold
	k.mu.Unlock()
	k.arrived <- key
	if hold {
		select {
		case <-k.release:
		case <-r.Context().Done():
		}
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"charged": true}`))
}

func (k *keyCounter) setHold(v bool) {
	k.mu.Lock()
	k.hold = v
	k.mu.Unlock()
}

func (k *keyCounter) snapshot() map[string]int {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := map[string]int{}
	for key, n := range k.counts {
		out[key] = n
	}
	return out
}

func getRun(t *testing.T, s *server, token, id string) map[string]any {
	t.Helper()
	status, body := call(t, token, "GET", s.url+"/api/runs/"+id, "")
	require.Equal(t, 200, status, body)
	return body["data"].(map[string]any)
}

func stepsByID(run map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, st := range run["steps"].([]any) {
		st := st.(map[string]any)
		out[st["id"].(string)] = st
	}
	return out
}

// TestCrashRecovery SIGKILLs the real binary during a durable sleep and again during an
// http step, restarts it on the same data directory each time, and proves the run
// completes, completed steps ran once, the sleep kept its deadline, and the interrupted
// http step was retried with the same Idempotency-Key.
func TestCrashRecovery(t *testing.T) {
	t.Parallel()
	crashRecovery(t)
}

// TestCrashRecoveryPostgres is TestCrashRecovery on a PostgreSQL schema.
func TestCrashRecoveryPostgres(t *testing.T) {
	t.Parallel()
	crashRecovery(t, "--store", pgtest.StoreURL(t))
}

// crashRecovery is TestCrashRecovery on the store args name (none: the embedded SQLite).
func crashRecovery(t *testing.T, args ...string) {
	counter := newKeyCounter()
	target := httptest.NewServer(counter)
	defer target.Close()
	defer close(counter.release)

	dir := t.TempDir()
	flags := append([]string{"--lease-ttl", "2s", "--http-allow", "127.0.0.1"}, args...)
	s := startServe(t, dir, flags...)
	token := s.adminToken(t)
	def := `{"name": "crashy", "input": {"type": "object"}, "steps": [
	  {"id": "first", "set": {"at": "start"}},
	  {"id": "nap", "sleep": {"duration": "3s"}},
	  {"id": "charge", "http": {"method": "POST", "url": "` + target.URL + `", "body": {"n": 1}}, "retry": {"maxAttempts": 5, "initialInterval": "100ms"}},
	  {"id": "done", "set": "${{ steps.charge.output.body }}"}
	]}`
	status, body := call(t, token, "POST", s.url+"/api/workflows", def)
	require.Equal(t, 201, status, body)
	status, _ = call(t, token, "POST", s.url+"/api/workflows/crashy/publish", "")
	require.Equal(t, 201, status)
	status, body = call(t, token, "POST", s.url+"/api/workflows/crashy/run", `{}`)
	require.Equal(t, 202, status, body)
	runID := body["data"].(map[string]any)["id"].(string)

	var sleepUntil any
	require.Eventually(t, func() bool {
		run := getRun(t, s, token, runID)
		if w, ok := run["waitingOn"].(map[string]any); ok && w["sleepUntil"] != nil {
			sleepUntil = w["sleepUntil"]
			return true
		}
		return false
	}, 30*time.Second, 20*time.Millisecond, "the run reaches its sleep")
	require.NoError(t, s.cmd.Process.Kill())
	_ = s.cmd.Wait()

	counter.setHold(true)
	s = startServe(t, dir, flags...)
	run := getRun(t, s, token, runID)
	require.Equal(t, sleepUntil, run["waitingOn"].(map[string]any)["sleepUntil"], "a restart does not reset the sleep")
	var firstKey string
	select {
	case firstKey = <-counter.arrived:
	case <-time.After(60 * time.Second):
		t.Fatal("the http step never called")
	}
	require.NoError(t, s.cmd.Process.Kill(), "killed during the http step")
	_ = s.cmd.Wait()

	counter.setHold(false)
	s = startServe(t, dir, flags...)
	status, body = call(t, token, "GET", s.url+"/api/runs/"+runID+"?wait=60s", "")
	require.Equal(t, 200, status)
	run = body["data"].(map[string]any)
	require.Equal(t, "completed", run["status"], run)
	require.Equal(t, map[string]any{"charged": true}, run["output"])

	counts := counter.snapshot()
	require.Len(t, counts, 1, "every attempt of the step carried one Idempotency-Key: %v", counts)
	require.Equal(t, 2, counts[firstKey], "the interrupted request and its retry")
	steps := stepsByID(run)
	require.Equal(t, firstKey, steps["charge"]["stepId"], "the key is the step's stepId")
	for _, id := range []string{"first", "nap"} {
		require.EqualValues(t, 1, steps[id]["attempts"], "step %s ran once", id)
	}
	finished, err := time.Parse(time.RFC3339Nano, steps["nap"]["finishedAt"].(string))
	require.NoError(t, err)
	until, err := time.Parse(time.RFC3339Nano, sleepUntil.(string))
	require.NoError(t, err)
	require.False(t, finished.Before(until), "the sleep lasted until its deadline")
	raw, _ := json.Marshal(run)
	t.Logf("run: %s", raw)
}
