package runner

import (
	"context"
	"fmt"
	"slices"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/schemas"
)

// Authority is who a run acts for when it reaches a run of another workflow (SPEC §6): the
// principal that started it, limited by the publisher of each version it runs under (its
// own, and for a child run its parents'). An action is allowed only when every principal
// listed may take it by the rule of the REST routes (auth.Principal.RequireRun); an empty
// Authority acts for no one and allows none. Fixed at admission: each principal's ID and
// scopes as they were then.
type Authority []auth.Principal

// authorityOf is who a new run acts for: by, the principal starting it, limited by
// publisher, its version's; for a run started without a principal (a webhook's) the
// publisher alone. A version published before publishers were recorded (nil) limits
// nothing, so a webhook's run of one acts for no one.
func authorityOf(by, publisher *auth.Principal) Authority {
	if by == nil {
		if publisher == nil {
			return nil
		}
		return Authority{bare(*publisher)}
	}
	return Authority{bare(*by)}.limitedBy(publisher)
}

// limitedBy is a further limited by p (nil: unchanged). No one stays no one: a child of a
// run that acts for no one gains nothing from its own version's publisher.
func (a Authority) limitedBy(p *auth.Principal) Authority {
	if len(a) == 0 || p == nil || slices.ContainsFunc(a, func(q auth.Principal) bool { return q.ID == p.ID }) {
		return a
	}
	return append(slices.Clip(a), bare(*p))
}

// TargetOf is the auth target of a workflow named name whose definition (JSON) is
// definition: its tags are the definition's. It lives here, not in auth, so that auth
// knows nothing of definitions.
func TargetOf(name string, definition []byte) auth.Target {
	return auth.Target{Workflow: name, Tags: schemas.TagsOf(definition)}
}

// bare is what an Authority keeps of a principal: who it is and its scopes.
func bare(p auth.Principal) auth.Principal { return auth.Principal{ID: p.ID, Scopes: p.Scopes} }

// allows reports whether every principal of a may act with perm on run r.
func (a Authority) allows(perm auth.Permission, r *Run) bool {
	return a.allowsOn(perm, r.StartedBy, TargetOf(r.Workflow, r.Definition))
}

// allowsOn reports whether every principal of a may act with perm on a run of workflow t
// started by startedBy ("": a run not started yet).
func (a Authority) allowsOn(perm auth.Permission, startedBy string, t auth.Target) bool {
	if len(a) == 0 {
		return false
	}
	for _, p := range a {
		if p.RequireRun(perm, startedBy, t) != nil {
			return false
		}
	}
	return true
}

// mayStart reports whether run by may start a child run of workflow t (a workflow step, a
// foreach's iteration): of its own workflow always, of another as its Authority holds
// runs:write on it, the scope that starting a run of it over REST asks (SPEC §6, §9).
func mayStart(by *Run, t *Target) bool {
	return t.WorkflowID == by.WorkflowID || by.ActsFor.allowsOn(auth.RunsWrite, "", TargetOf(t.Name, t.Definition))
}

// reaches reports whether run by may act with perm on run r: on a run of its own workflow
// or one of its own children always, on any other run as its Authority allows.
func reaches(by *Run, perm auth.Permission, r *Run) bool {
	return r.WorkflowID == by.WorkflowID || r.ParentRunID == by.ID || by.ActsFor.allows(perm, r)
}

// reachRun reads run id for run by to act on with perm. A run by may not reach is
// ErrNotFound, exactly as one that does not exist: nothing of it crosses (SPEC §6).
func (e *Engine) reachRun(ctx context.Context, by *Run, perm auth.Permission, id string) (*Run, error) {
	r, err := e.store.GetRun(ctx, id)
	if err != nil {
		return nil, err
	}
	if !reaches(by, perm, r) {
		return nil, fmt.Errorf("run %s: %w", id, ErrNotFound)
	}
	return r, nil
}

// conflictPermission is what an onConflict policy needs on the token's owner: runs:write
// for those that act on it (forward, supersede), runs:read for those that show it.
func conflictPermission(policy string) auth.Permission {
	if policy == schemas.OnConflictForward || policy == schemas.OnConflictSupersede {
		return auth.RunsWrite
	}
	return auth.RunsRead
}

// hiddenConflict is the conflict over token as a run that may not reach its owner sees
// it: the owner unnamed.
func hiddenConflict(c *TokenConflictError) *TokenConflictError {
	return &TokenConflictError{Environment: c.Environment, Token: c.Token}
}
