package runner_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/events"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/schemas"
	"github.com/gorunner/gorunner/store/sqlitestore"
)

// workflows is an in-memory runner.Workflows: published definitions by name.
type workflows struct {
	mu   sync.Mutex
	defs map[string]json.RawMessage
	// unrecorded serves versions published before publishers were recorded.
	unrecorded bool
}

func (w *workflows) Resolve(_ context.Context, name, env string) (*runner.Target, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	name = strings.TrimPrefix(name, "wf-")
	def, ok := w.defs[name]
	if !ok {
		return nil, fmt.Errorf("workflow %q: %w", name, runner.ErrWorkflowNotFound)
	}
	version := 1
	if env == runner.EnvTest {
		version = 0
	}
	t := &runner.Target{WorkflowID: "wf-" + name, Name: name, Version: version, Definition: def}
	if version > 0 && !w.unrecorded {
		t.Publisher = &publisher
	}
	return t, nil
}

// publisher published the harness's workflows: an admin, so that their runs reach every run.
var publisher = auth.Principal{ID: "publisher", Scopes: auth.AdminScopes()}

// clock is real time plus an offset tests move forward.
type clock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
}

// harness is one SQLite file with the workflows and clock its engines share.
type harness struct {
	t     testing.TB
	path  string
	store *sqlitestore.Store
	flows *workflows
	clock *clock
	creds runner.Credentials
}

func newHarness(t testing.TB) *harness {
	h := &harness{
		t:     t,
		path:  filepath.Join(t.TempDir(), "db"),
		flows: &workflows{defs: map[string]json.RawMessage{}},
		clock: &clock{},
	}
	h.store = h.open()
	return h
}

// bus is an events bus of its own over the file's change log, as each process has: an
// engine hears of the runs another engine admits and ends as it would across processes.
func (h *harness) bus() *events.Bus {
	b := events.New(h.store.Events(), nil)
	require.NoError(h.t, b.Start(context.Background()))
	h.t.Cleanup(func() { require.NoError(h.t, b.Stop(context.Background())) })
	return b
}

// open opens another handle on the harness's file, as another process would.
func (h *harness) open() *sqlitestore.Store {
	s, err := sqlitestore.Open(context.Background(), h.path)
	require.NoError(h.t, err)
	h.t.Cleanup(func() { _ = s.Close() })
	return s
}

// define publishes a workflow given in YAML and returns its name.
func (h *harness) define(doc string) string {
	def, err := schemas.Decode([]byte(doc))
	require.NoError(h.t, err)
	raw, err := schemas.Marshal(def)
	require.NoError(h.t, err)
	h.flows.mu.Lock()
	defer h.flows.mu.Unlock()
	h.flows.defs[def.Name] = raw
	return def.Name
}

// allowLoopback lets the harness's engines call the test's own listeners.
var allowLoopback = func() *runner.EgressPolicy {
	p, err := runner.NewEgressPolicy("127.0.0.0/8", "::1")
	if err != nil {
		panic(err)
	}
	return p
}()

// engine starts an engine on store (default the harness's) and stops it at cleanup.
func (h *harness) engine(cfg runner.Config, store ...runner.Store) *runner.Engine {
	e := h.newEngine(cfg, store...)
	h.start(e)
	return e
}

// start starts e and stops it when the test ends.
func (h *harness) start(e *runner.Engine) {
	require.NoError(h.t, e.Start(context.Background()))
	h.t.Cleanup(func() { require.NoError(h.t, e.Stop(context.Background())) })
}

func (h *harness) newEngine(cfg runner.Config, store ...runner.Store) *runner.Engine {
	var s runner.Store = h.store
	if len(store) > 0 {
		s = store[0]
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = 10 * time.Millisecond
	}
	if cfg.Now == nil {
		cfg.Now = h.clock.Now
	}
	if cfg.Egress == nil {
		cfg.Egress = allowLoopback
	}
	if cfg.Events == nil {
		cfg.Events = h.bus()
	}
	e, err := runner.New(s, h.flows, h.creds, &cfg)
	require.NoError(h.t, err)
	return e
}

func (h *harness) submit(e *runner.Engine, name, input string) *runner.Run {
	res, err := e.Submit(context.Background(), runner.SubmitParams{Workflow: name, Input: json.RawMessage(input)})
	require.NoError(h.t, err)
	return res.Run
}

// await waits until run id reaches status.
func (h *harness) await(e *runner.Engine, id string, status runner.Status) *runner.Run {
	var r *runner.Run
	require.Eventually(h.t, func() bool {
		var err error
		r, err = e.Wait(context.Background(), id, 50*time.Millisecond)
		require.NoError(h.t, err)
		return r.Status == status || r.Status.Terminal()
	}, 10*time.Second, time.Millisecond)
	require.Equal(h.t, status, r.Status, "run error: %+v", r.Error)
	return r
}

// waitingRun runs def until it waits, on an engine then stopped, so that no engine of the
// test works the run until the test starts one.
func (h *harness) waitingRun(def string) *runner.Run {
	first := h.engine(runner.Config{})
	r := h.run(first, h.define(def), `{}`, runner.StatusWaiting)
	require.NoError(h.t, first.Stop(context.Background()))
	return r
}

// run submits a run and waits for it to reach status.
func (h *harness) run(e *runner.Engine, name, input string, status runner.Status) *runner.Run {
	return h.await(e, h.submit(e, name, input).ID, status)
}

func jsonOf(t testing.TB, raw json.RawMessage) any {
	var v any
	require.NoError(t, json.Unmarshal(raw, &v))
	return v
}

func step(r *runner.Run, id string) *runner.StepRecord {
	for _, s := range r.Steps {
		if s.ID == id {
			return s
		}
	}
	return nil
}
