// Package auth turns bearer tokens into principals. Tokens are "gr_" plus 256 random bits;
// only their SHA-256 is stored, looked up by hash and compared in constant time, so neither
// a database leak nor response timing gives a usable token away.
package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/gorunner/gorunner/events"
)

// TokenPrefix starts every GoRunner API token.
const TokenPrefix = "gr_"

// Sentinel errors callers branch on.
var (
	// ErrUnauthorized means no token, a malformed one, or one that is unknown or revoked.
	ErrUnauthorized = errors.New("unauthorized")
	// ErrInvalidName means a token name that is empty or longer than 100 characters.
	ErrInvalidName = errors.New("token name must be 1 to 100 characters")
	// ErrInvalidExpiry means a token lifetime that is not positive.
	ErrInvalidExpiry = errors.New("a token's lifetime must be positive")
	// ErrScopeNotHeld means minting a token with a scope the minting principal does not hold.
	ErrScopeNotHeld = errors.New("a token can only be given scopes its creator holds")
)

// AudienceMCP is the audience of tokens valid only at the /mcp resource (OAuth access
// tokens).
const AudienceMCP = "/mcp"

// Principal is who calls. Idempotency keys belong to a principal, and runs remember the
// principal that started them.
type Principal struct {
	ID     string
	Name   string
	Scopes Scopes
	// Audience, when set, is the only resource the principal's token is valid at
	// (e.g. AudienceMCP); empty means everywhere.
	Audience string
}

// ValidFor reports whether the principal's token may be used at resource (e.g. "/api",
// AudienceMCP).
func (p Principal) ValidFor(resource string) bool { return p.Audience == "" || p.Audience == resource }

// Local returns the built-in principal of `gorunner mcp` over stdio without GORUNNER_TOKEN.
func Local() Principal { return Principal{ID: "local", Name: "local", Scopes: AdminScopes()} }

// Service issues, checks and revokes tokens.
type Service struct {
	store   Store
	now     func() time.Time
	known   known
	held    held
	bus     *events.Bus          // nil: revokes are not told to other processes
	revoked *events.Subscription // events.Tokens; nil without a bus
}

// Config tunes a Service; a nil *Config means the defaults.
type Config struct {
	// Now is the clock for token times: creation, last use, expiry (default time.Now).
	Now func() time.Time
	// Events carries events.Tokens: a revoke here makes the Services of other processes
	// on the bus's transport forget the tokens they hold, and theirs this one. Nil means
	// this process only: a token revoked elsewhere is refused here within TokenCacheFor.
	Events *events.Bus
}

func (c *Config) withDefaults() *Config {
	out := Config{}
	if c != nil {
		out = *c
	}
	if out.Now == nil {
		out.Now = time.Now
	}
	return &out
}

// New returns a Service over store.
func New(store Store, cfg *Config) (*Service, error) {
	if store == nil {
		return nil, errors.New("auth: nil store")
	}
	c := cfg.withDefaults()
	s := &Service{store: store, now: c.Now, bus: c.Events}
	if c.Events != nil {
		s.revoked = c.Events.Subscribe(events.Tokens)
	}
	return s, nil
}

// Hash returns the SHA-256 of a token secret, as stored.
func Hash(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

// IssueParams describes a token to issue.
type IssueParams struct {
	// Name is 1 to 100 characters.
	Name string
	// Scopes are what the token may do; at least one (AdminScopes for an admin token).
	Scopes Scopes
	// ExpiresIn is the token's lifetime; zero means it does not expire.
	ExpiresIn time.Duration
	// Audience, when set, restricts the token to one resource (AudienceMCP).
	Audience string
	// By, when set, is the principal minting the token: it must hold every scope given,
	// and the token's life is cut to what is left of By's token's (see WithinToken):
	// a creator whose token is gone or expired is ErrUnauthorized.
	By *Principal
}

// Validate reports what makes p unfit for any token, whoever mints it: a name that is
// empty or too long (ErrInvalidName), a negative lifetime (ErrInvalidExpiry), no scope or
// more than MaxScopes (ErrInvalidScope). Issue checks it first; a command line checks it
// before it opens the store.
func (p IssueParams) Validate() error {
	name := strings.TrimSpace(p.Name)
	switch {
	case name == "" || len(name) > 100:
		return ErrInvalidName
	case p.ExpiresIn < 0:
		return ErrInvalidExpiry
	case len(p.Scopes) == 0 || len(p.Scopes) > MaxScopes:
		return fmt.Errorf("%w: a token needs 1 to %d scopes", ErrInvalidScope, MaxScopes)
	}
	return nil
}

// Issue mints a token and returns it with its secret, which is shown once.
func (s *Service) Issue(ctx context.Context, p IssueParams) (*Token, string, error) {
	if err := p.Validate(); err != nil {
		return nil, "", err
	}
	if p.By != nil && !p.By.Scopes.Covers(p.Scopes) {
		return nil, "", fmt.Errorf("%w: %s holds %q, asked for %q", ErrScopeNotHeld, p.By.Name, p.By.Scopes, p.Scopes)
	}
	now := s.now().UTC()
	if p.By != nil {
		var err error
		if p.ExpiresIn, err = WithinToken(ctx, s, p.By.ID, p.ExpiresIn, now); err != nil {
			if !errors.Is(err, ErrUnauthorized) {
				err = fmt.Errorf("the minting token: %w", err)
			}
			return nil, "", err
		}
	}
	name := strings.TrimSpace(p.Name)
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return nil, "", fmt.Errorf("making token: %w", err)
	}
	secret := TokenPrefix + base64.RawURLEncoding.EncodeToString(b)
	t := &Token{ID: uuid.Must(uuid.NewV7()).String(), Name: name, Hash: Hash(secret),
		Scopes: p.Scopes, Audience: p.Audience, CreatedAt: now}
	if p.ExpiresIn > 0 {
		exp := now.Add(p.ExpiresIn)
		t.ExpiresAt = &exp
	}
	if err := s.store.CreateToken(ctx, t); err != nil {
		return nil, "", fmt.Errorf("storing token: %w", err)
	}
	return t, secret, nil
}

// TokenLookup finds a live token by ID as Service.Lookup does: unknown or revoked →
// ErrNotFound, expired → ErrUnauthorized.
type TokenLookup interface {
	Lookup(ctx context.Context, id string) (*Token, error)
}

// WithinToken cuts lifetime (0: none) to what is left at now of the life of the token
// with ID id, found through tokens; with lifetime 0 it is what is left of that life, 0
// when the token never expires. Nothing made with a token outlives it: a token minted by
// its holder (Issue with By), an OAuth grant approved with it. Else an expiring token
// could mint itself one that never expires. The local principal has no token and no end:
// lifetime is answered as is. A token that is unknown, revoked, expired or ends by now is
// ErrUnauthorized; any other failure is Lookup's error, as is. Read now before calling:
// Lookup checks expiry after it.
func WithinToken(ctx context.Context, tokens TokenLookup, id string, lifetime time.Duration, now time.Time) (time.Duration, error) {
	if id == Local().ID {
		return lifetime, nil
	}
	t, err := tokens.Lookup(ctx, id)
	switch {
	case errors.Is(err, ErrNotFound) || errors.Is(err, ErrUnauthorized):
		return 0, ErrUnauthorized
	case err != nil:
		return 0, err
	case t.ExpiresAt == nil:
		return lifetime, nil
	}
	left := t.ExpiresAt.Sub(now)
	switch {
	case left <= 0: // a clock behind now: Lookup found it live, but it ends by now
		return 0, ErrUnauthorized
	case lifetime == 0 || lifetime > left:
		return left, nil
	}
	return lifetime, nil
}

// Authenticate resolves a token secret to its principal. A token read from the store within
// TokenCacheFor answers from memory (see held). When the store cannot be reached, a token
// that resolved within KnownFor still does (see known); an unknown or revoked token never
// does.
func (s *Service) Authenticate(ctx context.Context, secret string) (Principal, error) {
	if !strings.HasPrefix(secret, TokenPrefix) || len(secret) > 200 {
		return Principal{}, ErrUnauthorized
	}
	want := Hash(secret)
	now := s.now()
	s.hear()
	if p, ok := s.held.get(want, now); ok {
		return p, nil
	}
	gen := s.held.generation()
	t, err := s.store.TokenByHash(ctx, want)
	if errors.Is(err, ErrNotFound) {
		s.known.forgetHash(want)
		return Principal{}, ErrUnauthorized
	}
	if err != nil {
		if p, ok := s.known.recall(want, s.now()); ok {
			return p, nil
		}
		return Principal{}, fmt.Errorf("looking up token: %w", err)
	}
	if subtle.ConstantTimeCompare(t.Hash, want) != 1 || t.Expired(s.now()) {
		return Principal{}, ErrUnauthorized
	}
	p := Principal{ID: t.ID, Name: t.Name, Scopes: t.Scopes, Audience: t.Audience}
	s.known.remember(want, p, t.ExpiresAt, now)
	s.hear()
	s.held.put(want, p, t.ExpiresAt, now, gen)
	return p, nil
}

// hear forgets every token held when another process (or this one) revoked a token since
// the last look. It never blocks.
func (s *Service) hear() {
	if s.revoked == nil {
		return
	}
	select {
	case <-s.revoked.C:
		s.held.forget("")
	default:
	}
}

// Lookup finds a live token by ID: unknown or revoked → ErrNotFound, expired →
// ErrUnauthorized. Unlike Authenticate it never answers from memory, so that what was
// approved with a token (OAuth grants) ends as soon as the token does.
func (s *Service) Lookup(ctx context.Context, id string) (*Token, error) {
	t, err := s.store.TokenByID(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("looking up token %q: %w", id, err)
	}
	if t.Expired(s.now()) {
		return nil, fmt.Errorf("looking up token %q: %w", id, ErrUnauthorized)
	}
	return t, nil
}

// FromRequest reads the bearer token of r and authenticates it.
func (s *Service) FromRequest(r *http.Request) (Principal, error) {
	h := r.Header.Get("Authorization")
	scheme, secret, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return Principal{}, ErrUnauthorized
	}
	return s.Authenticate(r.Context(), strings.TrimSpace(secret))
}

// List lists tokens, without secrets.
func (s *Service) List(ctx context.Context) ([]*Token, error) { return s.store.ListTokens(ctx) }

// Revoke deletes a token; the next request with it is refused: here at once, in the other
// processes on Config.Events when they hear of it, and everywhere within TokenCacheFor.
// Every revoke (the API, the CLI, OAuth's grant and token revocations) comes through here.
func (s *Service) Revoke(ctx context.Context, id string) error {
	s.known.forgetID(id)
	err := s.store.DeleteToken(ctx, id)
	s.held.forget(id) // after the delete: a lookup that read the token before it is turned away
	// A token not found was revoked already, and told by its revoker: other processes
	// need not forget what they hold for it.
	if s.bus != nil && !errors.Is(err, ErrNotFound) {
		s.bus.Publish(events.Tokens)
	}
	return err
}

// Count counts live tokens.
func (s *Service) Count(ctx context.Context) (int, error) { return s.store.CountTokens(ctx) }

type principalKey struct{}

// WithPrincipal returns ctx carrying p.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the principal ctx carries.
func PrincipalFrom(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}
