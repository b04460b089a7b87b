package auth_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/auth"
)

func TestParseScope(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"admin", "workflows:write", "runs:write", "runs:read",
		"runs:write:workflow=greet", "runs:read:tag=billing", "runs:write:tag=a_b-1"} {
		sc, err := auth.ParseScope(s)
		require.NoError(t, err, s)
		require.Equal(t, s, sc.String())
	}
	for _, s := range []string{"", "root", "admin:workflow=x", "workflows:write:tag=x", "runs:write:",
		"runs:write:workflow=", "runs:write:workflow=Greet", "runs:read:name=x", "runs:write:tag=" + strings.Repeat("a", 65)} {
		_, err := auth.ParseScope(s)
		require.ErrorIs(t, err, auth.ErrInvalidScope, s)
	}
}

func TestParseScopesLimits(t *testing.T) {
	t.Parallel()
	_, err := auth.ParseScopes(nil)
	require.ErrorIs(t, err, auth.ErrInvalidScope)
	many := make([]string, auth.MaxScopes+1)
	for i := range many {
		many[i] = fmt.Sprintf("runs:read:workflow=w%d", i)
	}
	_, err = auth.ParseScopes(many[:auth.MaxScopes])
	require.NoError(t, err)
	_, err = auth.ParseScopes(many)
	require.ErrorIs(t, err, auth.ErrInvalidScope, "one past MaxScopes")
	ss, err := auth.ParseScopeList("runs:read  runs:read admin")
	require.NoError(t, err)
	require.Equal(t, "runs:read admin", ss.String(), "duplicates dropped")
}

func TestScopesAllow(t *testing.T) {
	t.Parallel()
	billing := auth.Target{Workflow: "charge", Tags: []string{"billing"}}
	greet := auth.Target{Workflow: "greet"}
	tests := []struct {
		scopes string
		perm   auth.Permission
		target auth.Target
		want   bool
	}{
		{"admin", auth.RunsWrite, greet, true},
		{"admin", auth.Admin, auth.Target{}, true},
		{"runs:write", auth.RunsWrite, greet, true},
		{"runs:write", auth.RunsRead, greet, false},
		{"runs:write", auth.Admin, auth.Target{}, false},
		{"runs:write:tag=billing", auth.RunsWrite, billing, true},
		{"runs:write:tag=billing", auth.RunsWrite, greet, false},
		{"runs:read:workflow=greet", auth.RunsRead, greet, true},
		{"runs:read:workflow=greet", auth.RunsRead, billing, false},
		{"workflows:write", auth.WorkflowsWrite, greet, true},
		{"workflows:write", auth.RunsWrite, greet, false},
	}
	for _, tc := range tests {
		ss, err := auth.ParseScopeList(tc.scopes)
		require.NoError(t, err)
		require.Equal(t, tc.want, ss.Allows(tc.perm, tc.target), "%s %s %v", tc.scopes, tc.perm, tc.target)
		err = ss.Require(tc.perm, tc.target)
		if tc.want {
			require.NoError(t, err)
		} else {
			require.ErrorIs(t, err, auth.ErrForbidden)
		}
	}
	ss, _ := auth.ParseScopeList("runs:read")
	require.EqualError(t, ss.Require(auth.RunsWrite, greet), "this token lacks the scope runs:write:workflow=greet")
	require.EqualError(t, ss.Require(auth.Admin, auth.Target{}), "this token lacks the scope admin")
}

func TestScopesCover(t *testing.T) {
	t.Parallel()
	tests := []struct {
		holder, asked string
		want          bool
	}{
		{"admin", "admin", true},
		{"admin", "runs:write:tag=x workflows:write", true},
		{"runs:write", "runs:write:workflow=greet", true},
		{"runs:write:workflow=greet", "runs:write:workflow=greet", true},
		{"runs:write:workflow=greet", "runs:write", false},
		{"runs:write:tag=billing", "runs:write:workflow=charge", false},
		{"runs:write", "runs:read", false},
		{"runs:write workflows:write", "admin", false},
	}
	for _, tc := range tests {
		h, err := auth.ParseScopeList(tc.holder)
		require.NoError(t, err)
		a, err := auth.ParseScopeList(tc.asked)
		require.NoError(t, err)
		require.Equal(t, tc.want, h.Covers(a), "%s covers %s", tc.holder, tc.asked)
	}
}

func TestIssueScopesExpiryAudience(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, f, now := newService(t)
	scopes, err := auth.ParseScopeList("runs:write:tag=billing")
	require.NoError(t, err)
	tok, secret, err := s.Issue(ctx, auth.IssueParams{Name: "agent", Scopes: scopes, ExpiresIn: time.Hour, Audience: auth.AudienceMCP})
	require.NoError(t, err)
	require.Equal(t, now.Add(time.Hour), *tok.ExpiresAt)
	p, err := s.Authenticate(ctx, secret)
	require.NoError(t, err)
	require.Equal(t, auth.Principal{ID: tok.ID, Name: "agent", Scopes: scopes, Audience: auth.AudienceMCP}, p)
	require.True(t, p.ValidFor(auth.AudienceMCP))
	require.False(t, p.ValidFor("/api"))

	by := p
	_, _, err = s.Issue(ctx, auth.IssueParams{Name: "escalate", Scopes: auth.AdminScopes(), By: &by})
	require.ErrorIs(t, err, auth.ErrScopeNotHeld, "a token cannot mint scopes it does not hold")
	_, _, err = s.Issue(ctx, auth.IssueParams{Name: "none"})
	require.ErrorIs(t, err, auth.ErrInvalidScope)
	_, _, err = s.Issue(ctx, auth.IssueParams{Name: "neg", Scopes: scopes, ExpiresIn: -time.Second})
	require.ErrorIs(t, err, auth.ErrInvalidExpiry)

	*now = now.Add(time.Hour)
	_, err = s.Authenticate(ctx, secret)
	require.ErrorIs(t, err, auth.ErrUnauthorized, "expired")
	f.down.Store(true)
	_, err = s.Authenticate(ctx, secret)
	require.Error(t, err, "an expired token is not recalled during an outage")
}

// TestIssueParamsValidate: what no token may have is refused by Validate alone, without a
// store, so that a command line can refuse it before opening one.
func TestIssueParamsValidate(t *testing.T) {
	t.Parallel()
	admin := auth.AdminScopes()
	tooMany := make(auth.Scopes, auth.MaxScopes+1)
	for _, tc := range []struct {
		name string
		p    auth.IssueParams
		want error
	}{
		{"valid", auth.IssueParams{Name: "ci", Scopes: admin, ExpiresIn: time.Hour}, nil},
		{"never expires", auth.IssueParams{Name: "ci", Scopes: admin}, nil},
		{"blank name", auth.IssueParams{Name: "  ", Scopes: admin}, auth.ErrInvalidName},
		{"long name", auth.IssueParams{Name: strings.Repeat("n", 101), Scopes: admin}, auth.ErrInvalidName},
		{"negative lifetime", auth.IssueParams{Name: "ci", Scopes: admin, ExpiresIn: -time.Second}, auth.ErrInvalidExpiry},
		{"no scope", auth.IssueParams{Name: "ci"}, auth.ErrInvalidScope},
		{"too many scopes", auth.IssueParams{Name: "ci", Scopes: tooMany}, auth.ErrInvalidScope},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.p.Validate()
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tc.want)
		})
	}
}
