package oauth

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gorunner/gorunner/auth"
)

// revokeGrant deletes a grant and revokes every access token issued under it.
func (s *Server) revokeGrant(ctx context.Context, id string) error {
	return revokeGrant(ctx, s.store, s.tokens, id)
}

func revokeGrant(ctx context.Context, store Store, tokens Tokens, id string) error {
	g, err := store.DeleteGrant(ctx, id)
	if err != nil {
		return err
	}
	return revokeTokens(ctx, tokens, g.TokenIDs)
}

// revokeTokens revokes access tokens; ones already gone are fine.
func (s *Server) revokeTokens(ctx context.Context, ids []string) error {
	return revokeTokens(ctx, s.tokens, ids)
}

func revokeTokens(ctx context.Context, tokens Tokens, ids []string) error {
	var errs []error
	for _, t := range ids {
		if err := tokens.Revoke(ctx, t); err != nil && !errors.Is(err, auth.ErrNotFound) {
			errs = append(errs, fmt.Errorf("revoking access token %q: %w", t, err))
		}
	}
	return errors.Join(errs...)
}

// RevokeToken revokes an API token and every grant it approved, with their access
// tokens: revoking a person's token cuts off the assistants they let in with it. The API
// and `gorunner token revoke` revoke tokens through it.
func RevokeToken(ctx context.Context, store Store, tokens Tokens, id string) error {
	if err := tokens.Revoke(ctx, id); err != nil {
		return err
	}
	gs, err := store.ListGrants(ctx, id)
	if err != nil {
		return fmt.Errorf("listing the grants of token %q: %w", id, err)
	}
	var errs []error
	for _, g := range gs {
		if err := revokeGrant(ctx, store, tokens, g.ID); err != nil && !errors.Is(err, ErrNotFound) {
			errs = append(errs, fmt.Errorf("revoking grant %q of token %q: %w", g.ID, id, err))
		}
	}
	return errors.Join(errs...)
}

// RevokeToken revokes an API token and the grants it approved (see RevokeToken).
func (s *Server) RevokeToken(ctx context.Context, id string) error {
	return RevokeToken(ctx, s.store, s.tokens, id)
}

// ListGrants lists the grants p may see: every grant for an admin, else its own.
func (s *Server) ListGrants(ctx context.Context, p auth.Principal) ([]*Grant, error) {
	owner := p.ID
	if p.Scopes.Admin() {
		owner = ""
	}
	gs, err := s.store.ListGrants(ctx, owner)
	if err != nil {
		return nil, fmt.Errorf("listing grants: %w", err)
	}
	return gs, nil
}

// errNoGrant answers revoking a grant that does not exist or, for anyone but an admin,
// belongs to another principal: both read the same and name no ID, so that revoking
// cannot tell which grant IDs exist.
var errNoGrant = fmt.Errorf("revoking a grant: no such grant: %w", ErrNotFound)

// RevokeGrant revokes a grant and its tokens for p: an admin, or the principal that
// approved it. Another principal's grant is errNoGrant (an ErrNotFound), as an unknown
// one is, and stays.
func (s *Server) RevokeGrant(ctx context.Context, p auth.Principal, id string) error {
	g, err := s.store.GrantByID(ctx, id)
	if errors.Is(err, ErrNotFound) || (err == nil && !p.Scopes.Admin() && g.PrincipalID != p.ID) {
		return errNoGrant
	}
	if err != nil {
		return fmt.Errorf("revoking grant %q: %w", id, err)
	}
	if err := s.revokeGrant(ctx, id); errors.Is(err, ErrNotFound) {
		return errNoGrant // revoked meanwhile
	} else if err != nil {
		return fmt.Errorf("revoking grant %q: %w", id, err)
	}
	return nil
}

// signInEncoding spells sign-in codes in upper-case letters and digits 2–7, easy to type;
// input is upper-cased and its dashes and spaces dropped.
var signInEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// NewSignInCode stores a one-time code that signs in on the authorize page as p, holding
// scopes (which p must hold), for SignInCodeTTL; it returns the code to show and its end.
// `gorunner auth approve` prints it for setups without a browser next to the token.
func NewSignInCode(ctx context.Context, store Store, p auth.Principal, scopes auth.Scopes, now time.Time) (string, time.Time, error) {
	if len(scopes) == 0 || !p.Scopes.Covers(scopes) {
		return "", time.Time{}, fmt.Errorf("%w: %s cannot give %q", auth.ErrScopeNotHeld, p.Name, scopes.String())
	}
	b := make([]byte, 10) // 80 bits
	if _, err := rand.Read(b); err != nil {
		return "", time.Time{}, fmt.Errorf("making a sign-in code: %w", err)
	}
	raw := signInEncoding.EncodeToString(b)
	code := strings.Join([]string{raw[:4], raw[4:8], raw[8:12], raw[12:]}, "-")
	expires := now.UTC().Add(SignInCodeTTL)
	err := store.CreateSignInCode(ctx, &SignInCode{Hash: hash(normalizeSignInCode(code)), PrincipalID: p.ID,
		PrincipalName: p.Name, Scope: scopes.String(), ExpiresAt: expires})
	if err != nil {
		return "", time.Time{}, fmt.Errorf("creating a sign-in code: %w", err)
	}
	return code, expires, nil
}

// normalizeSignInCode makes a typed code comparable: upper case, no dashes or spaces.
func normalizeSignInCode(code string) string {
	return strings.Map(func(r rune) rune {
		if r == '-' || r == ' ' {
			return -1
		}
		return r
	}, strings.ToUpper(code))
}
