package idempotency

import (
	"context"
	"errors"
	"net/http"
	"time"
)

// Sentinel errors a Store returns.
var (
	// ErrNotFound means no record for that scope and key.
	ErrNotFound = errors.New("not found")
	// ErrInvalidCursor means a list cursor was not one the store gave out.
	ErrInvalidCursor = errors.New("invalid cursor")
)

// State is where a kept key stands.
type State string

// Record states.
const (
	// StateInProgress: the first request with the key is still being answered.
	StateInProgress State = "in_progress"
	// StateDone: the answer is kept and replays.
	StateDone State = "done"
	// StateTaken: the write happened but its answer was too big to keep (SPEC §4 rule 8).
	StateTaken State = "taken"
)

// Record is one key as kept by a Store.
type Record struct {
	Scope       string // "p:<principal>" or "w:<workflowID>"
	Key         string
	Fingerprint string
	Method      string // the request the key was first used for, as shown in lists
	Path        string
	RunID       string // the run the kept answer names, if any (kept also when the body is not)
	State       State
	Status      int
	Header      http.Header // only the headers worth replaying (Content-Type, Location)
	Body        []byte
	CreatedAt   time.Time
	LockedUntil time.Time // in progress: after this the claim is abandoned and may be taken over
	ExpiresAt   time.Time // done/taken: when the key is free again
}

// Abandoned reports whether r is an in-progress claim whose lock has run out at now: its
// process died, and the key may be taken over.
func (r *Record) Abandoned(now time.Time) bool {
	return r.State == StateInProgress && !r.LockedUntil.After(now)
}

// ClaimParams asks a Store to claim a key.
type ClaimParams struct {
	Scope       string
	Key         string
	Fingerprint string
	Method      string
	Path        string
	Now         time.Time
	LockTTL     time.Duration // how long an in-progress claim holds before it counts as abandoned
	Limit       int           // max live keys in Scope; 0 = no limit
	EvictOldest bool          // at Limit, evict the oldest key instead of refusing
}

// Outcome says what Claim did.
type Outcome int

// Claim outcomes.
const (
	// Claimed: the key was free (or abandoned, or expired); the caller owns it now.
	Claimed Outcome = iota + 1
	// Existing: the key is live; ClaimResult.Record says how it stands.
	Existing
	// LimitReached: the scope holds Limit live keys; nothing was written.
	LimitReached
)

// ClaimResult is Claim's answer.
type ClaimResult struct {
	Outcome Outcome
	Record  *Record   // with Existing
	Oldest  time.Time // with LimitReached: when the oldest live key expires
}

// ListParams asks a Store for one page of a scope's live keys, newest first.
type ListParams struct {
	Scope  string
	Now    time.Time // keys expired by then are left out
	Limit  int       // the backend's page size clamps it; 0 = its default
	Cursor string    // from the previous page; empty = the first page
}

// Store keeps idempotency keys. Claims are atomic: of N racing claims of one key exactly
// one gets Claimed. idempotency/idemtest is the conformance suite every backend passes.
type Store interface {
	// Claim takes the key for the caller, or reports how it stands.
	Claim(ctx context.Context, p ClaimParams) (ClaimResult, error)
	// Complete stores the answer of a claimed key (State Done or Taken, ExpiresAt set).
	Complete(ctx context.Context, r *Record) error
	// Release frees a claimed key whose request failed (its answer is not kept).
	Release(ctx context.Context, scope, key string) error
	// Get reads a key as it stands; missing or expired → ErrNotFound.
	Get(ctx context.Context, scope, key string, now time.Time) (*Record, error)
	// List returns a page of the scope's live keys, newest first (by CreatedAt, then Key),
	// without their Header and Body, and the cursor of the next page (empty on the last).
	// A cursor not given out by List → ErrInvalidCursor.
	List(ctx context.Context, p ListParams) ([]*Record, string, error)
}
