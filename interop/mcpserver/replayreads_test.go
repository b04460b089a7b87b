package mcpserver_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/mcpserver"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/store/sqlitestore"
	"github.com/gorunner/gorunner/tools"
)

// readCounter is the SQLite store counting the reads of runs (by run ID) and of
// idempotency keys (by key) made through it: a key is read by Get, or by the admission
// write that checks it (and writes it when free).
type readCounter struct {
	*sqlitestore.Store
	mu   sync.Mutex
	runs map[string]int
	keys map[string]int
}

func (c *readCounter) GetRun(ctx context.Context, id string) (*runner.Run, error) {
	c.mu.Lock()
	c.runs[id]++
	c.mu.Unlock()
	return c.Store.GetRun(ctx, id)
}

func (c *readCounter) Get(ctx context.Context, scope, key string, now time.Time) (*idempotency.Record, error) {
	c.mu.Lock()
	c.keys[key]++
	c.mu.Unlock()
	return c.Store.Get(ctx, scope, key, now)
}

func (c *readCounter) CreateRun(ctx context.Context, p runner.CreateRunParams) (runner.CreateRunResult, error) {
	if p.Key != nil {
		c.mu.Lock()
		c.keys[p.Key.Claim.Key]++
		c.mu.Unlock()
	}
	return c.Store.CreateRun(ctx, p)
}

// reads are how often run id and key were read so far.
func (c *readCounter) reads(id, key string) (runs, keys int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.runs[id], c.keys[key]
}

// newCountingFixture is newFixture over a store counting its reads.
func newCountingFixture(t *testing.T, defs ...string) (*fixture, *readCounter) {
	t.Helper()
	counter := &readCounter{runs: map[string]int{}, keys: map[string]int{}}
	f := newFixtureWith(t, &mcpserver.Config{PageSize: 2}, &fixture{wrap: func(st *sqlitestore.Store) servedStore {
		counter.Store = st
		return counter
	}}, defs...)
	return f, counter
}

// TestCallOfARunEndedInItsAdmissionReadsNoRun: a call whose run ends in its admission
// write (a pure workflow) is answered from the run admitted, reading it back never; with a
// fresh idempotencyKey, the key is read once, by the write that finds it free and writes
// it with the run.
func TestCallOfARunEndedInItsAdmissionReadsNoRun(t *testing.T) {
	for _, tc := range []struct {
		name     string
		key      string
		keyReads int
	}{{"no key", "", 0}, {"fresh key", "fresh-1", 1}} {
		t.Run(tc.name, func(t *testing.T) {
			f, counter := newCountingFixture(t, greetDef)
			s, ev := f.connect("")
			args := map[string]any{"name": "Ada"}
			if tc.key != "" {
				args["idempotencyKey"] = tc.key
			}
			res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: "greet",
				Arguments: args, Meta: mcp.Meta{"progressToken": "p1"}})
			require.NoError(t, err)
			require.False(t, res.IsError, text(res))
			got := structured(t, res)
			require.Equal(t, "completed", got["status"])
			require.Equal(t, "hello Ada", got["output"])
			runs, keys := counter.reads(got["runId"].(string), tc.key)
			require.Zero(t, runs, "run reads")
			require.Equal(t, tc.keyReads, keys, "key reads")
			require.Eventually(t, func() bool {
				return slices.Equal(ev.progressMessages(), []string{"step hello completed", "step done completed"})
			}, 5*time.Second, 10*time.Millisecond, "%q", ev.progressMessages())
		})
	}
}

// TestReplayReadsTheKeyAndTheRunOnce: a keyed call replayed after its run finished costs one
// read of the key (by the admission write, which finds it kept) and one read of the run in
// all, the first replay's (a finished key never
// changes before it expires, so keyed replay holds it; an ended run never changes, so the
// engine keeps it), whichever tool replays it and whether it asks for progress (which it
// still gets). The first call is made by another process on the same store, so that every
// read counted here is the replays'.
func TestReplayReadsTheKeyAndTheRunOnce(t *testing.T) {
	f, counter := newCountingFixture(t, greetDef)
	first, _ := f.twin().connect("")
	s, ev := f.connect("")
	const key = "replay-reads"
	res, want := call(t, first, "greet", map[string]any{"name": "Ada", "idempotencyKey": key})
	require.False(t, res.IsError, text(res))
	require.Equal(t, "completed", want["status"])
	id, _ := want["runId"].(string)
	want["replayed"] = true

	for i, tc := range []struct {
		name     string
		params   *mcp.CallToolParams
		progress []string
	}{
		{name: "own tool", params: &mcp.CallToolParams{Name: "greet",
			Arguments: map[string]any{"name": "Ada", "idempotencyKey": key}}},
		{name: "own tool with progress", params: &mcp.CallToolParams{Name: "greet",
			Arguments: map[string]any{"name": "Ada", "idempotencyKey": key}, Meta: mcp.Meta{"progressToken": "p1"}},
			progress: []string{"step hello completed", "step done completed"}},
		{name: tools.RunWorkflow, params: &mcp.CallToolParams{Name: tools.RunWorkflow,
			Arguments: map[string]any{"workflow": "greet", "arguments": map[string]any{"name": "Ada"}, "idempotencyKey": key}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := s.CallTool(context.Background(), tc.params)
			require.NoError(t, err)
			require.False(t, res.IsError, text(res))
			require.Equal(t, want, structured(t, res))
			runs, keys := counter.reads(id, key)
			require.Equal(t, 1, runs, "run reads after %d replays", i+1)
			require.Equal(t, 1, keys, "key reads after %d replays", i+1)
			if tc.progress != nil {
				require.Eventually(t, func() bool {
					return slices.Equal(ev.progressMessages(), tc.progress)
				}, 5*time.Second, 10*time.Millisecond, "%q", ev.progressMessages())
			}
		})
	}
}

// settledReads is the count of id's run reads once two looks 50 ms apart see the same:
// the reads of the call that started the run (its feed may still read the run's last
// change, later on a loaded machine) are then in it, not in what the test measures next.
func settledReads(t *testing.T, counter *readCounter, id string) int {
	t.Helper()
	last := -1
	require.Eventually(t, func() bool {
		n, _ := counter.reads(id, "")
		same := n == last
		last = n
		return same
	}, 5*time.Second, 50*time.Millisecond, "the run's reads settle")
	return last
}

// TestGetRunReads: gorunner_get_run of a run waiting on a hook reads it once,
// for a token that reads every run and for one that reads only its own (whose access check
// is that read); with waitSeconds, once more: a hook wait is the answer only when no
// payload is queued for it, and the run is read again after its hook's queue was found
// empty, so that the answer does not predate a payload taken since (runner.Engine.Wait).
// The first read of a wait for a token that reads every run is the engine's feed of the
// run, which a feed still open from the call that started it may answer without one: such
// a wait reads the run once or twice. (An ended run the engine keeps is read never.)
func TestGetRunReads(t *testing.T) {
	f, counter := newCountingFixture(t, approveDef)
	admin, _ := f.connect("")
	own, _ := f.connectAs(f.mint("runs:write:workflow=approve"), "")
	for i, tc := range []struct {
		name                   string
		session                *mcp.ClientSession
		args                   map[string]any
		fewestReads, mostReads int
	}{
		{"all runs", admin, map[string]any{}, 1, 1},
		{"own runs", own, map[string]any{}, 1, 1},
		{"all runs, waiting", admin, map[string]any{"waitSeconds": 5}, 1, 2},
		{"own runs, waiting", own, map[string]any{"waitSeconds": 5}, 2, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, got := call(t, tc.session, "approve", map[string]any{"orderId": fmt.Sprint(i)})
			require.False(t, res.IsError, text(res))
			require.Equal(t, "waiting", got["status"])
			id := got["runId"].(string)
			before := settledReads(t, counter, id)
			tc.args["runId"] = id
			res, got = call(t, tc.session, "gorunner_get_run", tc.args)
			require.False(t, res.IsError, text(res))
			require.Equal(t, "waiting", got["status"])
			after, _ := counter.reads(id, "")
			require.GreaterOrEqual(t, after-before, tc.fewestReads, "run reads")
			require.LessOrEqual(t, after-before, tc.mostReads, "run reads")
		})
	}
}
