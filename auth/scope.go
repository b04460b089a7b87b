package auth

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gorunner/gorunner/internal/names"
)

// Permission is what a scope lets a token do, before any narrowing (SPEC §9).
type Permission string

// The permissions. Only Admin implies the others; the rest are independent.
const (
	// Admin is everything, including tokens.
	Admin Permission = "admin"
	// WorkflowsWrite creates, updates, publishes and deletes workflows and connections,
	// and runs drafts (environment=test) together with runs:write.
	WorkflowsWrite Permission = "workflows:write"
	// RunsWrite starts, cancels and reruns runs, resumes hooks and calls tools.
	RunsWrite Permission = "runs:write"
	// RunsRead reads workflows, runs and hooks.
	RunsRead Permission = "runs:read"
)

// MaxScopes bounds how many scopes one token carries.
const MaxScopes = 50

// ErrInvalidScope means a scope that does not parse, or a scope list that is empty or too long.
var ErrInvalidScope = errors.New("invalid scope")

// Scope is one grant: a permission, for runs:* optionally narrowed to one workflow by name
// or to the workflows carrying a tag. At most one of Workflow and Tag is set.
type Scope struct {
	Permission Permission
	Workflow   string
	Tag        string
}

// ParseScope parses "admin", "workflows:write", "runs:write", "runs:read", and the
// narrowed forms "runs:write:workflow=NAME", "runs:read:tag=TAG".
func ParseScope(s string) (Scope, error) {
	switch p := Permission(s); p {
	case Admin, WorkflowsWrite, RunsWrite, RunsRead:
		return Scope{Permission: p}, nil
	}
	for _, p := range []Permission{RunsWrite, RunsRead} {
		rest, ok := strings.CutPrefix(s, string(p)+":")
		if !ok {
			continue
		}
		kind, value, _ := strings.Cut(rest, "=")
		if !names.Valid(value) {
			return Scope{}, fmt.Errorf("%w %q: %q must match %s", ErrInvalidScope, s, value, names.Pattern)
		}
		switch kind {
		case "workflow":
			return Scope{Permission: p, Workflow: value}, nil
		case "tag":
			return Scope{Permission: p, Tag: value}, nil
		}
		return Scope{}, fmt.Errorf("%w %q: narrow with workflow=NAME or tag=TAG", ErrInvalidScope, s)
	}
	return Scope{}, fmt.Errorf("%w %q: want admin, workflows:write, runs:write or runs:read (runs:* may end in :workflow=NAME or :tag=TAG)", ErrInvalidScope, s)
}

// String is the scope as ParseScope reads it.
func (s Scope) String() string {
	switch {
	case s.Workflow != "":
		return string(s.Permission) + ":workflow=" + s.Workflow
	case s.Tag != "":
		return string(s.Permission) + ":tag=" + s.Tag
	}
	return string(s.Permission)
}

// MarshalText writes the scope as its string, so JSON carries scopes as strings.
func (s Scope) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText parses a scope string.
func (s *Scope) UnmarshalText(b []byte) error {
	v, err := ParseScope(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// narrowed reports whether s applies to some workflows only.
func (s Scope) narrowed() bool { return s.Workflow != "" || s.Tag != "" }

// covers reports whether holding s implies holding o.
func (s Scope) covers(o Scope) bool {
	if s.Permission == Admin {
		return true
	}
	return s.Permission == o.Permission && (!s.narrowed() || s == o)
}

// allows reports whether s grants p on the workflow w.
func (s Scope) allows(p Permission, w Target) bool {
	if s.Permission == Admin {
		return true
	}
	if s.Permission != p {
		return false
	}
	switch {
	case s.Workflow != "":
		return s.Workflow == w.Workflow
	case s.Tag != "":
		return slices.Contains(w.Tags, s.Tag)
	}
	return true
}

// Target is the workflow a check is about: its name and tags.
type Target struct {
	Workflow string
	Tags     []string
}

// Scopes is the set of scopes a token carries.
type Scopes []Scope

// AdminScopes is the scope set of the first token, of tokens made before scopes existed,
// and of the local stdio principal.
func AdminScopes() Scopes { return Scopes{{Permission: Admin}} }

// ParseScopes parses a list of scope strings: at least one, at most MaxScopes, duplicates
// dropped.
func ParseScopes(list []string) (Scopes, error) {
	if len(list) == 0 {
		return nil, fmt.Errorf("%w: a token needs at least one scope", ErrInvalidScope)
	}
	if len(list) > MaxScopes {
		return nil, fmt.Errorf("%w: %d scopes, at most %d", ErrInvalidScope, len(list), MaxScopes)
	}
	out := make(Scopes, 0, len(list))
	for _, s := range list {
		sc, err := ParseScope(s)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(out, sc) {
			out = append(out, sc)
		}
	}
	return out, nil
}

// ParseScopeList parses scopes separated by spaces, as stored and as OAuth's scope
// parameter carries them.
func ParseScopeList(s string) (Scopes, error) { return ParseScopes(strings.Fields(s)) }

// String joins the scopes with spaces (ParseScopeList reads it back).
func (ss Scopes) String() string { return strings.Join(ss.Strings(), " ") }

// Strings lists the scopes as strings.
func (ss Scopes) Strings() []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.String()
	}
	return out
}

// Admin reports whether the set holds admin.
func (ss Scopes) Admin() bool {
	return slices.ContainsFunc(ss, func(s Scope) bool { return s.Permission == Admin })
}

// Allows reports whether the set grants p on the workflow w.
func (ss Scopes) Allows(p Permission, w Target) bool {
	return slices.ContainsFunc(ss, func(s Scope) bool { return s.allows(p, w) })
}

// AllowsAll reports whether the set grants p on every workflow (admin, or p not narrowed).
func (ss Scopes) AllowsAll(p Permission) bool {
	return slices.ContainsFunc(ss, func(s Scope) bool { return s.Permission == Admin || (s.Permission == p && !s.narrowed()) })
}

// AllowsAny reports whether the set grants p on at least some workflows.
func (ss Scopes) AllowsAny(p Permission) bool {
	return slices.ContainsFunc(ss, func(s Scope) bool { return s.Permission == Admin || s.Permission == p })
}

// Covers reports whether every scope of o is implied by the set: a token may mint (or
// approve) only scopes it holds.
func (ss Scopes) Covers(o Scopes) bool {
	for _, want := range o {
		if !slices.ContainsFunc(ss, func(s Scope) bool { return s.covers(want) }) {
			return false
		}
	}
	return true
}

// ErrForbidden is a call beyond the caller's scopes; a *ForbiddenError names the scope.
var ErrForbidden = errors.New("forbidden")

// ForbiddenError is a call beyond the caller's scopes. Is(ErrForbidden) holds.
type ForbiddenError struct {
	// Missing is the scope the call needs.
	Missing Scope
}

func (e *ForbiddenError) Error() string {
	return "this token lacks the scope " + e.Missing.String()
}

// Is makes errors.Is(err, ErrForbidden) hold.
func (e *ForbiddenError) Is(target error) bool { return target == ErrForbidden }

// Require returns a *ForbiddenError unless ss grants p on w. The error names p narrowed
// to w's workflow when w names one (the narrowest scope that would do), else p.
func (ss Scopes) Require(p Permission, w Target) error {
	if ss.Allows(p, w) {
		return nil
	}
	missing := Scope{Permission: p}
	if w.Workflow != "" && (p == RunsRead || p == RunsWrite) {
		missing.Workflow = w.Workflow
	}
	return &ForbiddenError{Missing: missing}
}

// RequireRun is the one rule of who may act on a run (SPEC §9): perm on the run's
// workflow t, or, for runs:read, having started it (startedBy is the run's starter). The
// faces ask it through guard, and the engine asks it for the principals a run acts for
// when that run reaches another workflow's run (SPEC §6), so the two cannot disagree.
func (p Principal) RequireRun(perm Permission, startedBy string, t Target) error {
	if perm == RunsRead && startedBy != "" && startedBy == p.ID {
		return nil
	}
	return p.Scopes.Require(perm, t)
}

// StoredScopes decodes the scopes a backend stored with ParseScopeList's format. A token
// stored before scopes existed has none recorded and is admin (the migration SPEC §9 asks).
func StoredScopes(s string) (Scopes, error) {
	if strings.TrimSpace(s) == "" {
		return AdminScopes(), nil
	}
	return ParseScopeList(s)
}
