package runner

import (
	"errors"
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
	if l.runID == "" || l.owner == "" || l.runID != runID {
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

// ErrLeaseOwners is the refusal to renew the leases of more than one owner in one call: a
// worker renews only the leases it holds.
var ErrLeaseOwners = errors.New("leases of more than one owner")

// RenewLeasesParams asks RenewLeases to extend Leases until Until. The leases are those a
// worker holds, so they are all of one owner.
type RenewLeasesParams struct {
	Leases []Lease
	Until  time.Time
}

// Held returns the owner of p.Leases and the runs they hold. A zero lease (an error matching
// ErrLeaseLost: it holds nothing) or leases of more than one owner (ErrLeaseOwners) are
// refused, so that a store checks them before it writes anything. No leases: no owner.
func (p RenewLeasesParams) Held() (owner string, runIDs []string, err error) {
	runIDs = make([]string, 0, len(p.Leases))
	for _, l := range p.Leases {
		if l.runID == "" || l.owner == "" {
			return "", nil, fmt.Errorf("renewing a lease that holds no run: %w", ErrLeaseLost)
		}
		if owner != "" && l.owner != owner {
			return "", nil, fmt.Errorf("renewing leases of %q and %q: %w", owner, l.owner, ErrLeaseOwners)
		}
		owner = l.owner
		runIDs = append(runIDs, l.runID)
	}
	return owner, runIDs, nil
}
