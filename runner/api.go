package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/gorunner/gorunner/internal/seal"
)

// cancelWait is how long Cancel waits for the worker holding a run to end it.
const cancelWait = 5 * time.Second

// Get returns run id with its steps, or ErrNotFound. A run that ended is read once and then
// answered from memory (see endedRuns).
func (e *Engine) Get(ctx context.Context, id string) (*Run, error) {
	return e.getRun(ctx, id)
}

// List lists runs newest first; the string is the cursor of the next page, empty on the
// last. The store's cursor names the last run its page examined, which the caller may not
// be allowed to see (Readable), so List hands it out sealed (Config.SecretKey): opaque,
// unforgeable, and usable only as a run list cursor. A cursor List did not seal →
// ErrInvalidCursor.
func (e *Engine) List(ctx context.Context, p ListRunsParams) ([]*Run, string, error) {
	if p.Cursor != "" {
		plain, err := e.cursors.OpenText(p.Cursor, cursorPurpose)
		if err != nil { // the store's answer to a cursor it never gave out; not echoed, however long
			return nil, "", fmt.Errorf("listing runs: %w", ErrInvalidCursor)
		}
		p.Cursor = string(plain)
	}
	runs, next, err := e.store.ListRuns(ctx, p)
	if err != nil || next == "" {
		return runs, next, err
	}
	sealed, err := e.cursors.SealText([]byte(next), cursorPurpose)
	if err != nil {
		return nil, "", fmt.Errorf("listing runs: %w", err)
	}
	return runs, sealed, nil
}

// cursorPurpose names the run list cursors: the purpose their key is derived for and their
// associated data, so no other value sealed under the secret key passes for a cursor.
var cursorPurpose = []byte("gorunner run cursor v1")

// newCursorBox makes the box sealing List's cursors from the secret key, or from a random
// key of the engine's own without one.
func newCursorBox(secret []byte) (*seal.Box, error) {
	secret, err := seal.OrRandom(secret)
	if err != nil {
		return nil, fmt.Errorf("runner: cursor key: %w", err)
	}
	box, err := seal.For(secret, string(cursorPurpose))
	if err != nil {
		return nil, fmt.Errorf("runner: cursor key: %w", err)
	}
	return box, nil
}

// Cancel cancels run id: the step running is interrupted, the steps left are cancelled and
// the run's tokens released. It returns the run once cancelled (or after a short wait, with
// its state then). A finished run → ErrFinished.
func (e *Engine) Cancel(ctx context.Context, id string) (*Run, error) {
	if err := e.requestCancel(ctx, id); err != nil {
		return nil, err
	}
	f, leave := e.broker.follow(id)
	defer leave()
	ctx, cancel := context.WithTimeout(ctx, cancelWait)
	defer cancel()
	for {
		r, err, changed := f.latest()
		if err != nil || (r != nil && r.Status.Terminal()) {
			return r, err
		}
		select {
		case <-changed:
		case <-ctx.Done():
			if r == nil {
				return e.Get(context.WithoutCancel(ctx), id)
			}
			return r, nil
		}
	}
}

// requestCancel marks run id for cancellation and makes sure a worker acts on it: the local
// one holding it is interrupted; otherwise the run, now due, is claimed and ended.
func (e *Engine) requestCancel(ctx context.Context, id string) error {
	if _, err := e.store.RequestCancel(ctx, id, e.now()); err != nil {
		return fmt.Errorf("cancelling run %s: %w", id, err)
	}
	e.interrupt(id, errCancelRequested)
	e.wake()
	return nil
}

// Resume queues payload for the active hook on token in env and wakes the run that owns
// it, whose next hook step on that token takes it. No active hook → ErrNotFound.
func (e *Engine) Resume(ctx context.Context, env, token string, payload json.RawMessage) (string, error) {
	env, err := environment(env)
	if err != nil {
		return "", err
	}
	payload = bytes.TrimSpace(payload)
	if len(payload) == 0 {
		payload = json.RawMessage("null")
	}
	if !json.Valid(payload) {
		return "", inputProblem("", "payload is not valid JSON")
	}
	runID, err := e.store.EnqueuePayload(ctx, env, token, payload, e.now())
	if err != nil {
		return "", fmt.Errorf("resuming hook %q: %w", token, err)
	}
	e.wake()
	return runID, nil
}

// Hook returns the active hook on token in env, or ErrNotFound.
func (e *Engine) Hook(ctx context.Context, env, token string) (*Hook, error) {
	env, err := environment(env)
	if err != nil {
		return nil, err
	}
	h, err := e.store.GetHook(ctx, env, token)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("reading hook %q: %w", token, err)
	}
	return h, err
}
