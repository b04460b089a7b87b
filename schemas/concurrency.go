package schemas

// Concurrency bounds a workflow's active runs (pending, running, waiting) per key (SPEC
// §2): a run admitted past Limit of its key waits queued, and starts when an active run of
// its key ends, oldest first.
type Concurrency struct {
	// Key is an expression on the input (`${{ input.customerId }}`), evaluated at admission
	// to a string or a number of at most MaxConcurrencyKey bytes; empty: one key for the
	// whole workflow.
	Key string `json:"key,omitempty"`
	// Limit is how many runs of one key may be active at once, 1 to MaxConcurrencyLimit.
	Limit *int `json:"limit" jsonschema:"minimum=1,maximum=1000"`
}

// MaxConcurrencyLimit bounds a definition's concurrency.limit.
const MaxConcurrencyLimit = 1000

// MaxConcurrencyKey bounds, in bytes, the key a run's concurrency.key evaluates to.
const MaxConcurrencyKey = 255

// concurrency checks a definition's concurrency: a limit from 1 to MaxConcurrencyLimit and
// a key that compiles and reads the input only (it is evaluated before any step runs).
func (v *validator) concurrency(c *Concurrency) {
	switch {
	case c.Limit == nil:
		v.add("/concurrency/limit", "concurrency.limit is required")
	case *c.Limit < 1 || *c.Limit > MaxConcurrencyLimit:
		v.add("/concurrency/limit", "concurrency.limit must be from 1 to %d, got %d", MaxConcurrencyLimit, *c.Limit)
	}
	if c.Key == "" {
		return
	}
	if t := v.compile("/concurrency/key", c.Key); t != nil && len(t.Refs()) > 0 {
		v.add("/concurrency/key", "concurrency.key is evaluated when a run is admitted, before any step runs; it can use input, not steps")
	}
}
