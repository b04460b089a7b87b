package oauth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"golang.org/x/sync/singleflight"
	"golang.org/x/time/rate"

	"github.com/gorunner/gorunner/auth"
)

// Lifetimes and limits of the authorization server (docs/security.md, "OAuth for remote assistants").
const (
	// AccessTTL is the life of an access token.
	AccessTTL = time.Hour
	// RefreshTTL is the life of a refresh token; each use gives a new one.
	RefreshTTL = 30 * 24 * time.Hour
	// CodeTTL is the life of an authorization code.
	CodeTTL = 60 * time.Second
	// SignInCodeTTL is the life of a one-time sign-in code from `gorunner auth approve`.
	SignInCodeTTL = 10 * time.Minute
	// MaxFormBytes bounds the body of the authorize, token and revoke endpoints.
	MaxFormBytes = 64 << 10
	// DefaultScope is what a client gets asked for when it names no scope: calling and
	// reading the tools.
	DefaultScope = "runs:write runs:read"
)

// Paths the server answers at.
const (
	MetadataPath  = "/.well-known/oauth-authorization-server"
	AuthorizePath = "/oauth/authorize"
	TokenPath     = "/oauth/token"
	RevokePath    = "/oauth/revoke"
	RegisterPath  = "/oauth/register"
)

// ErrInvalidPublicURL means a public URL that is not an absolute http(s) origin.
var ErrInvalidPublicURL = errors.New("the public URL must be an absolute http or https URL without query or fragment")

// Tokens is what oauth needs from auth: signing people in with their token, checking that
// the token that approved a grant still lives, and issuing and revoking the access tokens
// of grants. *auth.Service is one.
type Tokens interface {
	Authenticate(ctx context.Context, secret string) (auth.Principal, error)
	Lookup(ctx context.Context, id string) (*auth.Token, error)
	Issue(ctx context.Context, p auth.IssueParams) (*auth.Token, string, error)
	Revoke(ctx context.Context, id string) error
}

// Config tunes a Server. PublicURL is required.
type Config struct {
	// PublicURL is the origin clients reach GoRunner at (serve --public-url): the issuer,
	// and the base of the /mcp resource.
	PublicURL string
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Now defaults to time.Now.
	Now func() time.Time
	// RegistrationsPerMinute bounds dynamic registrations per client address; default
	// DefaultRegistrationsPerMinute.
	RegistrationsPerMinute int
	// MaxClients bounds the dynamically registered clients kept at once; default
	// DefaultMaxClients.
	MaxClients int
	// MaxClientDocumentFetches bounds the metadata documents fetched at once; default
	// DefaultMaxClientDocumentFetches.
	MaxClientDocumentFetches int
	// ClientDocumentFetchesPerSecond bounds how fast uncached metadata documents are
	// fetched; default DefaultClientDocumentFetchesPerSecond.
	ClientDocumentFetchesPerSecond float64
	// ClientDocumentFetchBurst is how many uncached fetches may start back to back;
	// default DefaultClientDocumentFetchBurst.
	ClientDocumentFetchBurst int
}

func (c *Config) withDefaults() Config {
	out := Config{}
	if c != nil {
		out = *c
	}
	if out.Logger == nil {
		out.Logger = slog.Default()
	}
	if out.Now == nil {
		out.Now = time.Now
	}
	if out.RegistrationsPerMinute == 0 {
		out.RegistrationsPerMinute = DefaultRegistrationsPerMinute
	}
	if out.MaxClients == 0 {
		out.MaxClients = DefaultMaxClients
	}
	if out.MaxClientDocumentFetches <= 0 {
		out.MaxClientDocumentFetches = DefaultMaxClientDocumentFetches
	}
	if out.ClientDocumentFetchesPerSecond <= 0 {
		out.ClientDocumentFetchesPerSecond = DefaultClientDocumentFetchesPerSecond
	}
	if out.ClientDocumentFetchBurst <= 0 {
		out.ClientDocumentFetchBurst = DefaultClientDocumentFetchBurst
	}
	return out
}

func (c Config) validate() (*url.URL, error) {
	u, err := url.Parse(strings.TrimSuffix(c.PublicURL, "/"))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("%w: %q", ErrInvalidPublicURL, c.PublicURL)
	}
	return u, nil
}

// Server is the authorization server.
type Server struct {
	store    Store
	tokens   Tokens
	cfg      Config
	log      *slog.Logger
	issuer   string // the public URL without a trailing slash
	resource string // issuer + "/mcp"
	loopback bool   // serving on a loopback address: loopback http clients are allowed
	fetch    *http.Client
	register *limiter
	page     *template.Template
	docs     *docCache
	failed   *docCache          // client_id URLs whose document could not be fetched or used
	fetching chan struct{}      // a slot per document being fetched
	pace     *rate.Limiter      // paces document fetches: ClientDocumentFetchesPerSecond
	flight   singleflight.Group // one fetch per document, however many ask for it at once
	sharing  atomic.Int32       // requests for an uncached document, at a fetch or waiting on one
	sweeper  sweeper
}

// New returns a Server issuing tokens through tokens and keeping its state in store.
func New(store Store, tokens Tokens, cfg *Config) (*Server, error) {
	c := cfg.withDefaults()
	u, err := c.validate()
	if err != nil {
		return nil, err
	}
	s := &Server{store: store, tokens: tokens, cfg: c, log: c.Logger, issuer: u.String(),
		resource: u.String() + "/mcp", loopback: isLoopbackHost(u.Hostname()),
		register: newLimiter(c.RegistrationsPerMinute, time.Minute), page: pageTemplate, docs: newDocCache(),
		failed: newDocCache(), fetching: make(chan struct{}, c.MaxClientDocumentFetches),
		pace: rate.NewLimiter(rate.Limit(c.ClientDocumentFetchesPerSecond), c.ClientDocumentFetchBurst)}
	s.fetch = newFetchClient(s.loopback)
	return s, nil
}

// Issuer is the authorization server's issuer identifier (the public URL).
func (s *Server) Issuer() string { return s.issuer }

// Handlers are the server's unauthenticated endpoints by path, to mount on the router.
func (s *Server) Handlers() map[string]http.Handler {
	return map[string]http.Handler{
		MetadataPath:  http.HandlerFunc(s.metadata),
		AuthorizePath: http.HandlerFunc(s.authorize),
		TokenPath:     http.HandlerFunc(s.token),
		RevokePath:    http.HandlerFunc(s.revoke),
		RegisterPath:  http.HandlerFunc(s.registerClient),
	}
}

// isLoopbackHost reports whether host is localhost or a loopback IP.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// secret returns prefix plus 256 random bits, URL-safe.
func secret(prefix string) (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("making a secret: %w", err)
	}
	return prefix + base64.RawURLEncoding.EncodeToString(b), nil
}

// hash is the SHA-256 of a secret, as stored.
func hash(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

func newID() string { return uuid.Must(uuid.NewV7()).String() }
