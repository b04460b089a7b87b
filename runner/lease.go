package runner

import (
	"fmt"
	"time"
)

// Lease is a worker's hold on one run, the proof SaveRun and ReleaseRun ask for, so that a
// run cannot be written by code that never claimed it. A Lease is only ever obtained from
// Store.ClaimRuns or from Store.CreateRun with CreateRunParams.Owner set; the zero Lease
// holds nothing. Whether it still holds is the store's to say (ErrLeaseLost).
type Lease struct {
	runID, owner string
}

// NewLease is for Store implementations only: it makes the lease a claim or an admission
// just took on runID for owner. Engine code gets its leases from the store.
func NewLease(runID, owner string) Lease { return Lease{runID: runID, owner: owner} }

// RunID is the run the lease holds.
func (l Lease) RunID() string { return l.runID }

// Owner is the worker that holds the lease.
func (l Lease) Owner() string { return l.owner }

// Check returns nil when l is a lease on run runID, else an error matching ErrLeaseLost:
// the caller holds no lease on that run, whatever lease it holds on another.
func (l Lease) Check(runID string) error {
	if l.runID == "" || l.runID != runID {
		return fmt.Errorf("lease of run %q does not hold run %q: %w", l.runID, runID, ErrLeaseLost)
	}
	return nil
}

// Claimed is one run ClaimRuns leased, with the lease that lets its worker save it.
type Claimed struct {
	Run   *Run
	Lease Lease
}

// ClaimRunsParams asks ClaimRuns for up to Limit runs due at Now (not terminal, WakeAt set
// and ≤ Now, lease free or expired), leased to Owner until LeaseUntil.
type ClaimRunsParams struct {
	Owner      string
	Now        time.Time
	LeaseUntil time.Time
	Limit      int
}

// RenewLeasesParams asks RenewLeases to extend Owner's leases on RunIDs until Until.
type RenewLeasesParams struct {
	Owner  string
	RunIDs []string
	Until  time.Time
}
