package main_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const (
	// soakItems is how many items the soak's foreach charges, soakConcurrency at once.
	soakItems       = 50
	soakConcurrency = 5
	// soakKills is how many times the soak SIGKILLs the server. Each kill costs a restart
	// of the (race-built) binary and one --lease-ttl before the run is claimed again, some
	// 2 s in all, so 20 kills keep the soak within about a minute.
	soakKills = 20
	// soakMaxAnswer bounds the target's random answer delay: long enough that a kill
	// finds requests in flight, short enough that a run progresses between kills.
	soakMaxAnswer = 40 * time.Millisecond
)

// soakCall is one request the soak's target received: its arrival order, key and item,
// and whether the target answered it (else the kill cut it).
type soakCall struct {
	seq      int
	key      string
	item     int
	answered bool
}

// soakTarget answers each POSTed {"item": N} with the same body after a short random
// delay, and logs every request's Idempotency-Key and item in arrival order.
type soakTarget struct {
	mu       sync.Mutex
	calls    []soakCall
	inFlight int
}

func (s *soakTarget) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Item *int `json:"item"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Item == nil {
		http.Error(w, "want {\"item\": N}", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	seq := len(s.calls)
	s.calls = append(s.calls, soakCall{seq: seq, key: r.Header.Get("Idempotency-Key"), item: *body.Item})
	s.inFlight++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.inFlight--
		s.mu.Unlock()
	}()
	select {
	case <-time.After(rand.N(soakMaxAnswer)):
	case <-r.Context().Done():
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if _, err := fmt.Fprintf(w, `{"item": %d}`, *body.Item); err == nil {
		s.mu.Lock()
		s.calls[seq].answered = true
		s.mu.Unlock()
	}
}

// arrived is how many requests the target has received.
func (s *soakTarget) arrived() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.calls)
}

// busy is how many requests the target is answering.
func (s *soakTarget) busy() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inFlight
}

func (s *soakTarget) log() []soakCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]soakCall(nil), s.calls...)
}

// completions remembers, for each stepId seen completed in a run's record, how many
// requests the target had received once that record was read: the step's commit came
// before, so any later request with its key called a completed step again.
type completions map[string]int

// observe reads the runs' records and notes the charges shown completed.
func (c completions) observe(t *testing.T, s *server, token string, target *soakTarget, runIDs []string) (finished bool) {
	t.Helper()
	finished = true
	for _, id := range runIDs {
		run := getRun(t, s, token, id)
		c.note(run, target.arrived())
		finished = finished && run["status"] == "completed"
	}
	return finished
}

// note records the charges run shows completed as committed before the target's seq-th request.
func (c completions) note(run map[string]any, seq int) {
	for _, st := range run["steps"].([]any) {
		st := st.(map[string]any)
		path, _ := st["path"].(string)
		if strings.HasSuffix(path, "/charge") && st["status"] == "completed" {
			key := st["stepId"].(string)
			if at, ok := c[key]; !ok || seq < at {
				c[key] = seq
			}
		}
	}
}

// TestForeachCrashSoak SIGKILLs the real binary soakKills times at random moments while a
// foreach of http steps charges soakItems items soakConcurrency at once, restarting it on the
// same data directory each time (a new run is started whenever the last one completed), and
// then checks against the target's log: every item was called with its own stable key (the
// stepId of charge-each/<i>/charge), no key was seen again once the run's record showed its
// step completed, no kill repeated more calls than were in flight, and every run's output
// holds every item, in order.
func TestForeachCrashSoak(t *testing.T) {
	t.Parallel()
	target := &soakTarget{}
	ts := httptest.NewServer(target)
	defer ts.Close()

	dir := t.TempDir()
	flags := []string{"--lease-ttl", "1s", "--http-allow", "127.0.0.1/32"}
	s := startServe(t, dir, flags...)
	token := s.adminToken(t)
	publish(t, s, token, `{"name": "soak", "input": {"type": "object"}, "steps": [
	  {"id": "charge-each", "foreach": {"items": "${{ input.items }}", "concurrency": `+fmt.Sprint(soakConcurrency)+`, "steps": [
	    {"id": "charge", "http": {"method": "POST", "url": "`+ts.URL+`", "body": {"item": "${{ item }}"}}, "retry": {"maxAttempts": 5, "initialInterval": "100ms"}},
	    {"id": "got", "set": "${{ steps.charge.output.body.item }}"}
	  ]}}],
	  "result": "${{ steps['charge-each'].output }}"}`)
	items := make([]int, soakItems)
	for i := range items {
		items[i] = i
	}
	input, err := json.Marshal(map[string]any{"items": items})
	require.NoError(t, err)

	seen := completions{}
	var runIDs []string
	midFlight := 0 // kills that found a request unanswered
	for kill := range soakKills {
		if kill > 0 {
			s = startServe(t, dir, flags...)
		}
		if len(runIDs) == 0 || seen.observe(t, s, token, target, runIDs) {
			status, body := call(t, token, "POST", s.url+"/api/workflows/soak/run", string(input))
			require.Equal(t, 202, status, body)
			runIDs = append(runIDs, body["data"].(map[string]any)["id"].(string))
		}
		// The kill comes after a random number of new requests (so some are in flight)
		// and a random part of an answer's delay (so it lands before, during or after
		// the commits that follow them).
		killAt := target.arrived() + rand.IntN(2*soakConcurrency) + 1
		require.Eventually(t, func() bool {
			return seen.observe(t, s, token, target, runIDs) || target.arrived() >= killAt
		}, time.Minute, 10*time.Millisecond, "kill %d: the run calls its target", kill)
		<-time.After(rand.N(soakMaxAnswer))
		if target.busy() > 0 {
			midFlight++
		}
		require.NoError(t, s.cmd.Process.Kill())
		_ = s.cmd.Wait()
	}

	require.Positive(t, midFlight, "some kills land while iterations are in flight")
	midRun := len(seen)

	s = startServe(t, dir, flags...)
	runs := make([]map[string]any, len(runIDs))
	for i, id := range runIDs {
		status, body := call(t, token, "GET", s.url+"/api/runs/"+id+"?wait=60s", "")
		require.Equal(t, 200, status, body)
		runs[i] = body["data"].(map[string]any)
		require.Equal(t, "completed", runs[i]["status"], runs[i])
		seen.note(runs[i], target.arrived())
	}
	checkSoak(t, runs, target.log(), seen)
	t.Logf("%d kills with a request in flight; %d charges seen completed between kills", midFlight, midRun)
}

// soakT is what checkSoak needs of a test, so that TestCheckSoak can catch its failures.
type soakT interface {
	require.TestingT
	Helper()
	Logf(format string, args ...any)
}

// checkSoak checks the soak's runs against the target's log and the completions seen.
func checkSoak(t soakT, runs []map[string]any, calls []soakCall, seen completions) {
	t.Helper()
	want := make([]any, soakItems)
	for i := range want {
		want[i] = float64(i)
	}
	keyItem := map[string]int{} // stepId of each run's charge-each/<i>/charge → i
	for _, run := range runs {
		require.Equal(t, want, run["output"], "run %s: every item's output, in item order", run["id"])
		for _, st := range run["steps"].([]any) {
			st := st.(map[string]any)
			var i int
			path, _ := st["path"].(string)
			if _, err := fmt.Sscanf(path, "charge-each/%d/charge", &i); err == nil {
				require.Equal(t, "completed", st["status"], st)
				keyItem[st["stepId"].(string)] = i
			}
		}
	}
	require.Len(t, keyItem, soakItems*len(runs), "every item of every run has its own stepId")

	calledItems := map[string]bool{}
	reanswered := 0 // repeats of a call the target had answered: answered, not yet recorded
	for _, c := range calls {
		if calledItems[c.key] && answeredBefore(calls[:c.seq], c.key) {
			reanswered++
		}
		i, ok := keyItem[c.key]
		require.True(t, ok, "call %d carries key %q, no charge's stepId", c.seq, c.key)
		require.Equal(t, i, c.item, "call %d: key %s is item %d's, sent with item %d", c.seq, c.key, i, c.item)
		require.Less(t, c.seq, seen[c.key], "call %d: key %s called again after its step completed (seen at %d)", c.seq, c.key, seen[c.key])
		calledItems[c.key] = true
	}
	require.Len(t, calledItems, len(keyItem), "every item was called")
	repeats := len(calls) - len(calledItems)
	require.LessOrEqual(t, repeats, soakKills*soakConcurrency,
		"a kill repeats at most the calls of the iterations it interrupted")
	t.Logf("%d kills over %d runs: %d calls, %d repeated after a kill (%d of a call answered but not yet recorded)",
		soakKills, len(runs), len(calls), repeats, reanswered)
}

// answeredBefore reports whether one of calls with key was answered.
func answeredBefore(calls []soakCall, key string) bool {
	for _, c := range calls {
		if c.key == key && c.answered {
			return true
		}
	}
	return false
}

// failRecorder is a soakT that records a failure and stops the goroutine checking.
type failRecorder struct{ failed bool }

func (f *failRecorder) Errorf(string, ...any) { f.failed = true }
func (f *failRecorder) FailNow()              { f.failed = true; runtime.Goexit() }
func (f *failRecorder) Helper()               {}
func (f *failRecorder) Logf(string, ...any)   {}

// TestCheckSoak proves the soak's checks fail on each fault they are there to catch, from
// a clean synthetic soak (one run, each item called once, in order) with one fault each.
func TestCheckSoak(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		fault func(run map[string]any, calls []soakCall, seen completions) []soakCall
		fails bool
	}{
		{name: "clean", fault: func(_ map[string]any, calls []soakCall, _ completions) []soakCall { return calls }},
		{name: "called again after completed", fails: true, fault: func(_ map[string]any, calls []soakCall, seen completions) []soakCall {
			seen["k3"] = 4 // after its first call (seq 3), before this one
			return append(calls, soakCall{seq: len(calls), key: "k3", item: 3})
		}},
		{name: "called again before completed", fault: func(_ map[string]any, calls []soakCall, _ completions) []soakCall {
			return append(calls, soakCall{seq: len(calls), key: "k3", item: 3})
		}},
		{name: "more repeats than kills interrupt", fails: true, fault: func(_ map[string]any, calls []soakCall, seen completions) []soakCall {
			seen["k0"] = 10 * soakItems * soakKills
			for range soakKills*soakConcurrency + 1 {
				calls = append(calls, soakCall{seq: len(calls), key: "k0", item: 0})
			}
			return calls
		}},
		{name: "one key for two items", fails: true, fault: func(_ map[string]any, calls []soakCall, _ completions) []soakCall {
			return append(calls, soakCall{seq: len(calls), key: "k3", item: 4})
		}},
		{name: "a key no charge has", fails: true, fault: func(_ map[string]any, calls []soakCall, _ completions) []soakCall {
			return append(calls, soakCall{seq: len(calls), key: "", item: 3})
		}},
		{name: "an item never called", fails: true, fault: func(_ map[string]any, calls []soakCall, _ completions) []soakCall {
			return calls[1:]
		}},
		{name: "output out of order", fails: true, fault: func(run map[string]any, calls []soakCall, _ completions) []soakCall {
			out := run["output"].([]any)
			out[0], out[1] = out[1], out[0]
			return calls
		}},
		{name: "output missing an item", fails: true, fault: func(run map[string]any, calls []soakCall, _ completions) []soakCall {
			run["output"] = run["output"].([]any)[1:]
			return calls
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run, calls, seen := cleanSoak()
			calls = tt.fault(run, calls, seen)
			f := &failRecorder{}
			done := make(chan struct{})
			go func() {
				defer close(done)
				checkSoak(f, []map[string]any{run}, calls, seen)
			}()
			<-done
			require.Equal(t, tt.fails, f.failed)
		})
	}
}

// cleanSoak is a soak without a fault: one completed run, item i's charge keyed k<i> and
// called once, in order, every charge seen completed after every call.
func cleanSoak() (map[string]any, []soakCall, completions) {
	steps := []any{map[string]any{"id": "charge-each", "stepId": "fe", "status": "completed"}}
	output := make([]any, soakItems)
	calls := make([]soakCall, soakItems)
	seen := completions{}
	for i := range soakItems {
		key := fmt.Sprintf("k%d", i)
		steps = append(steps, map[string]any{"id": "charge", "path": fmt.Sprintf("charge-each/%d/charge", i), "stepId": key, "status": "completed"})
		output[i] = float64(i)
		calls[i] = soakCall{seq: i, key: key, item: i}
		seen[key] = soakItems + 1
	}
	return map[string]any{"id": "r", "status": "completed", "output": output, "steps": steps}, calls, seen
}
