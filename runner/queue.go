package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gorunner/gorunner/expression"
	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/schemas"
)

// Concurrency limits (SPEC §2): a workflow's `concurrency` bounds its active runs
// (pending, running, waiting) per key. A run admitted past the limit of its key is written
// queued, not due, and no worker claims it; the store that writes the end of an active run
// of the key makes the oldest queued one pending, due, started then, in the same
// transaction or script, so that no process dying in between leaves a queue stuck. The key
// is a workflow's, an environment's and the key's value together (a test run never waits
// for a production one).

// Concurrency is a run's place under its workflow's concurrency limit, fixed at admission:
// the key its definition's concurrency.key evaluated to ("" without one) and the limit.
type Concurrency struct {
	Key   string
	Limit int
}

// QueuePlace is where a queued run stands in the queue of its key: the key and limit, the
// runs holding the key's slots (at most MaxQueueActiveShown of them) and how many queued runs
// of the key are older. Clients see it as waitingOn.queue.
type QueuePlace struct {
	Key    string
	Limit  int
	Active []string
	Ahead  int
}

// MaxQueueActiveShown bounds the IDs of active runs a queued run's waitingOn.queue lists.
const MaxQueueActiveShown = 10

// queueOf fixes r's Concurrency from c's definition, evaluating its key against r's
// input: an evaluation error, or a value that is not a string or a number, or one longer
// than schemas.MaxConcurrencyKey bytes, is an *InputError and nothing is admitted.
func (e *Engine) queueOf(c *compiled, r *Run) error {
	cc := c.def.Concurrency
	if cc == nil || cc.Limit == nil {
		return nil
	}
	key, err := concurrencyKey(c, cc, r)
	if err != nil {
		return err
	}
	r.Concurrency = &Concurrency{Key: key, Limit: *cc.Limit}
	return nil
}

// concurrencyKey evaluates cc's key for r; no key is "".
func concurrencyKey(c *compiled, cc *schemas.Concurrency, r *Run) (string, error) {
	if cc.Key == "" {
		return "", nil
	}
	t, err := c.template(templateKey{-1, "concurrency"}, func() (any, error) { return cc.Key, nil })
	if err != nil {
		return "", fmt.Errorf("concurrency key: %w", err)
	}
	input, err := decodeJSON(r.Input)
	if err != nil {
		return "", err
	}
	v, err := t.Eval(expression.Env{"input": input, "run": runEnv(r)})
	if err != nil {
		return "", inputProblem("", "concurrency key: %v", err)
	}
	var key string
	switch v := v.(type) {
	case string:
		key = v
	case json.Number:
		key = v.String()
	case float64:
		key = strconv.FormatFloat(v, 'f', -1, 64)
	case int64:
		key = strconv.FormatInt(v, 10)
	case int:
		key = strconv.Itoa(v)
	default:
		return "", inputProblem("", "concurrency key must evaluate to a string or a number, got %s", jsonKind(v))
	}
	switch {
	case len(key) > schemas.MaxConcurrencyKey:
		return "", inputProblem("", "concurrency key is %d bytes; at most %d are allowed", len(key), schemas.MaxConcurrencyKey)
	case strings.ContainsRune(key, 0) || !utf8.ValidString(key):
		return "", inputProblem("", "concurrency key must be UTF-8 text without NUL")
	}
	return key, nil
}

// Limited reports whether a's run is under a concurrency limit: whether it is admitted
// pending or queued is decided by its write, so no answer made before can be kept in it.
func (a *Admission) Limited() bool { return a.Run.Concurrency != nil }

// commitQueued is Commit's one write for a run under a concurrency limit: the store decides,
// in that write, whether it starts (pending, due now, for a worker here or elsewhere) or
// waits queued. Such a run never starts in its admission, as its first steps could run
// ahead of the runs of its key.
func (e *Engine) commitQueued(ctx context.Context, a *Admission, key *idempotency.KeyWrite) (idempotency.ClaimResult, error) {
	r := a.Run
	res, err := e.store.CreateRun(ctx, CreateRunParams{Run: r, Start: a.start, Key: key, CatalogVersion: a.catalog})
	if err != nil || res.Outcome != idempotency.Claimed {
		return res.ClaimResult, err
	}
	if res.Queued {
		r.Status, r.WakeAt = StatusQueued, time.Time{}
	}
	a.Written = r
	e.metrics.admitted(r)
	e.wake()
	return res.ClaimResult, nil
}

// Place is r with its waitingOn.queue filled in when it is queued (QueuePlace): what a
// client reading one run sees. Other runs are r itself.
func (e *Engine) Place(ctx context.Context, r *Run) (*Run, error) {
	if r == nil || r.Status != StatusQueued || r.Concurrency == nil {
		return r, nil
	}
	p, err := e.store.QueuePlace(ctx, r)
	if err != nil {
		return nil, fmt.Errorf("reading the queue of run %s: %w", r.ID, err)
	}
	p.Key, p.Limit = r.Concurrency.Key, r.Concurrency.Limit
	c := *r
	c.WaitingOn = &WaitingOn{Queue: &p}
	return &c, nil
}

// jsonKind names the JSON type of a decoded value that is neither a string nor a number.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	}
	return "an object"
}
