package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/gorunner/gorunner/schemas"
)

// ResumeWait is how long the REST and MCP resumes wait (Deliver's wait), after delivering
// a payload to the hook step waiting for it, for the run to take it and move on (as Wait
// does: a sleep that ends within it is waited for), so that the answer shows the run after
// the payload, not the wait the payload ends.
const ResumeWait = 5 * time.Second

// Delivery says what became of a payload sent to a hook token (SPEC §6).
type Delivery string

// Deliveries.
const (
	// Delivered: a hook step was waiting on the token and takes the payload.
	Delivered Delivery = "delivered"
	// Queued: no hook step waits on the token now; the payload is held for the next one
	// on that token, and kept on the run (Run.Undelivered) if none comes before it ends.
	Queued Delivery = "queued"
)

// Resumed is the answer to Deliver: what became of the payload, and the run that owns the
// token — when it was delivered, as Wait answers after it (up to Deliver's wait), else as
// it was when the payload was queued.
type Resumed struct {
	Delivery Delivery
	Run      *Run
}

// Message says in words what became of a payload sent to token: "" when it was delivered;
// for a queued one, that no hook step waits on token now and what happens to it.
func (r *Resumed) Message(token string) string {
	if r.Delivery == Delivered {
		return ""
	}
	return fmt.Sprintf("no hook step waits on token %q now: the payload is queued for the next hook step on it, "+
		"and kept on the run as undeliveredPayloads if none takes it before the run ends", token)
}

// Deliver is Resume for a caller outside the run (the REST resume, the MCP tool, the
// console): a payload for a hook step that waits with ask must fit the ask's schema
// (else an *InputError naming each violation's pointer, and nothing is queued); a hook
// without ask takes any JSON value. It says whether the payload was delivered or queued:
// for a run waiting on the token, it waits up to wait (as Wait does) for the run to move
// on; for a running one (a hook step on the token may be about to wait), it waits so to see
// whether a hook step took the payload.
func (e *Engine) Deliver(ctx context.Context, env, token string, payload json.RawMessage, wait time.Duration) (*Resumed, error) {
	env, err := environment(env)
	if err != nil {
		return nil, err
	}
	run, err := e.checkedOwner(ctx, env, token, payload)
	if err != nil {
		return nil, err
	}
	_, waiting := hookWait(run, token)
	runID, err := e.Resume(ctx, env, token, payload)
	if err != nil {
		return nil, err
	}
	switch {
	case runID != run.ID:
		return &Resumed{Delivery: Queued, Run: run}, nil // another run took the token meanwhile
	case waiting && e.first(ctx, runID, env, token, payload):
		return e.delivered(ctx, runID, wait)
	case run.Status.Settled():
		return &Resumed{Delivery: Queued, Run: run}, nil // it waits for something else
	}
	// Running: a hook step on the token may be about to wait (it claimed the token before
	// it saves its wait). What the run did with the payload once the wait ends says.
	if run, err = e.Wait(ctx, runID, wait); err != nil && run == nil {
		return nil, err
	}
	if e.taken(ctx, run, env, token, payload) {
		return &Resumed{Delivery: Delivered, Run: run}, nil
	}
	return &Resumed{Delivery: Queued, Run: run}, nil
}

// checkedOwner is the run that owns token in env, once payload is found to fit the ask of
// the hook step waiting on it, if one waits and asks.
func (e *Engine) checkedOwner(ctx context.Context, env, token string, payload json.RawMessage) (*Run, error) {
	h, err := e.Hook(ctx, env, token)
	if err != nil {
		return nil, fmt.Errorf("resuming hook %q: %w", token, err)
	}
	run, err := e.Get(ctx, h.RunID)
	if err != nil {
		return nil, fmt.Errorf("resuming hook %q: %w", token, err)
	}
	if err := checkAsked(run, token, payload); err != nil {
		return nil, err
	}
	return run, nil
}

// checkAsked holds payload, for the hook on token, to the ask of the hook step of run
// waiting on it, if one waits and asks: the one check of a resume, whoever sends it (REST,
// MCP, the console, a run step's resume).
func checkAsked(run *Run, token string, payload json.RawMessage) error {
	ask, _ := hookWait(run, token)
	if ask == nil {
		return nil
	}
	return checkAnswer(ask, payload)
}

// hookWait is the question of the hook step of run waiting on token (nil: it does not
// ask), top-level or nested in a branch or iteration (Waits), and whether one waits on it.
func hookWait(run *Run, token string) (*schemas.HookAsk, bool) {
	for _, w := range Waits(run) {
		if w.Hook == token {
			return w.Ask, true
		}
	}
	return nil, false
}

// delivered is the answer for a payload a waiting hook step takes: the run after it, as
// Wait answers within wait.
func (e *Engine) delivered(ctx context.Context, runID string, wait time.Duration) (*Resumed, error) {
	run, err := e.Wait(ctx, runID, wait)
	if err != nil && run == nil {
		return nil, err
	}
	return &Resumed{Delivery: Delivered, Run: run}, nil
}

// taken reports whether run, as it stands after payload was queued for token, took it: an
// ended run took it unless it kept it undelivered; another took it unless it is still the
// oldest queued.
func (e *Engine) taken(ctx context.Context, run *Run, env, token string, payload json.RawMessage) bool {
	if run.Status.Terminal() {
		return !slices.ContainsFunc(undeliveredOf(run), func(p UndeliveredPayload) bool {
			return p.Token == token && samePayload(p.Payload, payload)
		})
	}
	p, err := e.store.NextPayload(ctx, run.ID, env, token)
	return errors.Is(err, ErrNotFound) || (err == nil && !samePayload(p.Payload, payload))
}

// undeliveredOf is the payloads run kept undelivered.
func undeliveredOf(run *Run) []UndeliveredPayload {
	if run.Undelivered == nil {
		return nil
	}
	return run.Undelivered.Payloads
}

// Question is the question (the evaluated ask) of the hook step waiting on h's token, nil
// when none waits on it now or the one waiting does not ask.
func (e *Engine) Question(ctx context.Context, h *Hook) (*schemas.HookAsk, error) {
	run, err := e.Get(ctx, h.RunID)
	if errors.Is(err, ErrNotFound) {
		return nil, nil // ended and deleted since: no step waits
	}
	if err != nil {
		return nil, fmt.Errorf("reading the run of hook %q: %w", h.Token, err)
	}
	ask, _ := hookWait(run, h.Token)
	return ask, nil
}

// checkAnswer holds a payload to the schema of the question it answers.
func checkAnswer(ask *schemas.HookAsk, payload json.RawMessage) error {
	schema, err := schemas.CompileInput(ask.Schema)
	if err != nil {
		return fmt.Errorf("compiling the hook's ask schema: %w", err)
	}
	var v any // an empty payload is null, as Resume takes it
	if raw := bytes.TrimSpace(payload); len(raw) > 0 {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			return inputProblem("", "payload is not valid JSON")
		}
	}
	if problems := schema.Validate(v); len(problems) > 0 && !declines(v) {
		return &InputError{Problems: problems}
	}
	return nil
}

// declines reports whether v is the answer of a person who declined the question rather
// than answered it: {"declined": true, "action": "decline"|"cancel"}, what elicitation
// resumes the hook with (SPEC §5) and what every face's Decline sends, whatever the schema.
func declines(v any) bool {
	m, ok := v.(map[string]any)
	if !ok || len(m) != 2 || m["declined"] != true {
		return false
	}
	return m["action"] == "decline" || m["action"] == "cancel"
}

// first reports whether payload, just queued for token, is the one the waiting hook step
// takes: the oldest queued, or already taken (none queued any more). A failed look is
// taken for queued: the answer then says less than happened, never more.
func (e *Engine) first(ctx context.Context, runID, env, token string, payload json.RawMessage) bool {
	p, err := e.store.NextPayload(ctx, runID, env, token)
	if errors.Is(err, ErrNotFound) {
		return true
	}
	return err == nil && samePayload(p.Payload, payload)
}

// samePayload reports whether two payloads are the same bytes, spaces around aside.
func samePayload(a, b json.RawMessage) bool {
	return bytes.Equal(bytes.TrimSpace(a), bytes.TrimSpace(b))
}
