// Package api is GoRunner's REST face: the chi router, bearer auth, the one error envelope
// of SPEC §3, keyed replay on the calls SPEC §4 names, webhooks, health endpoints and the
// OpenAPI document generated from the same route table that registers the handlers.
package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/catalog"
	"github.com/gorunner/gorunner/guard"
	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/internal/limits"
	"github.com/gorunner/gorunner/oauth"
	"github.com/gorunner/gorunner/problem"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/schemas"
)

// Deps are the services a Server (and the console, which shares them) works with. Catalog,
// Auth, Engine and Idempotency are required; OAuth is optional.
type Deps struct {
	Catalog     *catalog.Service
	Auth        *auth.Service
	Engine      *runner.Engine
	Idempotency *idempotency.Service
	// OAuth, when set, is the authorization server: its endpoints are mounted,
	// /api/oauth/grants answers, and revoking a token revokes the grants it approved.
	OAuth *oauth.Server
}

// Validate reports the first required service d lacks, naming its field; the caller
// prefixes its package name.
func (d Deps) Validate() error {
	switch {
	case d.Catalog == nil:
		return errors.New("Deps.Catalog is required")
	case d.Auth == nil:
		return errors.New("Deps.Auth is required")
	case d.Engine == nil:
		return errors.New("Deps.Engine is required")
	case d.Idempotency == nil:
		return errors.New("Deps.Idempotency is required")
	}
	return nil
}

// Config tunes a Server; a nil *Config means the defaults. PublicURL has no default: it
// is required.
type Config struct {
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Ready reports whether the store is reachable, for /readyz.
	Ready func(ctx context.Context) error
	// Metrics serves /metrics; nil leaves it unmounted.
	Metrics http.Handler
	// MCP serves /mcp behind the same bearer auth; nil leaves it unmounted.
	MCP http.Handler
	// EventsHeartbeat is how often a quiet event stream sends a comment (default
	// EventsHeartbeat).
	EventsHeartbeat time.Duration
	// Console serves the web console at / and /console/… (it signs people in itself);
	// nil leaves it unmounted.
	Console http.Handler
	// Public are extra unauthenticated routes (e.g. /.well-known/…), by path.
	Public map[string]http.Handler
	// PublicURL is the origin clients reach GoRunner at (e.g. https://runner.example):
	// every absolute URL GoRunner writes starts with it. Required; the Host header of a
	// request is never used.
	PublicURL string
}

func (c *Config) withDefaults() *Config {
	out := Config{}
	if c != nil {
		out = *c
	}
	if out.Logger == nil {
		out.Logger = slog.Default()
	}
	if out.EventsHeartbeat <= 0 {
		out.EventsHeartbeat = EventsHeartbeat
	}
	return &out
}

// validate checks c and puts its PublicURL in the form every URL is written with.
func (c *Config) validate() error {
	origin, err := PublicOrigin(c.PublicURL)
	if err != nil {
		return fmt.Errorf("api: Config.PublicURL: %w", err)
	}
	c.PublicURL = origin
	return nil
}

// Server is the HTTP API.
type Server struct {
	deps   Deps
	cfg    Config
	guard  *guard.Guard
	log    *slog.Logger
	router chi.Router

	openapiOnce  sync.Once
	openapiBytes []byte
	openapiErr   error
}

// New builds the Server and its router.
func New(deps Deps, cfg *Config) (*Server, error) {
	if err := deps.Validate(); err != nil {
		return nil, fmt.Errorf("api: %w", err)
	}
	c := cfg.withDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	s := &Server{deps: deps, cfg: *c, guard: guard.New(deps.Catalog, deps.Engine), log: slog.New(LogHandler(c.Logger.Handler()))}
	s.router = s.routes()
	return s, nil
}

// ServeHTTP serves the API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.router.ServeHTTP(w, r) }

// authenticate puts the caller's principal in the context or answers 401. A token limited
// to an audience (an OAuth access token: /mcp) is refused everywhere else.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := s.deps.Auth.FromRequest(r)
		if err == nil && !p.ValidFor(resourceOf(r)) {
			err = auth.ErrUnauthorized
		}
		if err != nil {
			w.Header().Set("WWW-Authenticate", s.challenge(r))
			if errors.Is(err, auth.ErrUnauthorized) {
				err = problem.New(http.StatusUnauthorized, problem.CodeUnauthorized, "a valid bearer token is required: Authorization: Bearer gr_…")
			}
			s.writeError(w, r, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(auth.WithPrincipal(r.Context(), p)))
	})
}

// resourceOf is the resource a request is for, as token audiences name it: /mcp, else /api.
func resourceOf(r *http.Request) string {
	if r.URL.Path == auth.AudienceMCP {
		return auth.AudienceMCP
	}
	return "/api"
}

// principalOf returns the authenticated caller of r.
func principalOf(r *http.Request) auth.Principal {
	p, _ := auth.PrincipalFrom(r.Context())
	return p
}

// starterOf is the principal a request starts runs for; nil at a webhook, which has none
// (its runs act for the publisher of the version, SPEC §6).
func starterOf(r *http.Request) *auth.Principal {
	if p, ok := auth.PrincipalFrom(r.Context()); ok {
		return &p
	}
	return nil
}

// challenge is the WWW-Authenticate value of a 401. At /mcp it also points MCP clients to
// the protected resource metadata (RFC 9728) when a Public route serves it.
func (s *Server) challenge(r *http.Request) string {
	const metadata = "/.well-known/oauth-protected-resource/mcp"
	if _, ok := s.cfg.Public[metadata]; !ok || r.URL.Path != "/mcp" {
		return `Bearer realm="gorunner"`
	}
	return `Bearer realm="gorunner", resource_metadata="` + s.cfg.PublicURL + metadata + `"`
}

// limitBody refuses bodies over limits.MaxBodyBytes: at once when Content-Length says so, else
// when the handler reads past the limit.
func (s *Server) limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > limits.MaxBodyBytes {
			s.writeError(w, r, &http.MaxBytesError{Limit: limits.MaxBodyBytes})
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, limits.MaxBodyBytes)
		next.ServeHTTP(w, r)
	})
}

// requestLogger answers with the request's ID in X-Request-Id and logs one line per
// request; the logger (see LogHandler) adds the ID to every line logged for the request.
func (s *Server) requestLogger(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Request-Id", middleware.GetReqID(r.Context()))
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		next.ServeHTTP(ww, r)
		s.log.LogAttrs(r.Context(), slog.LevelDebug, "request",
			slog.String("method", r.Method), slog.String("route", routeOf(r)),
			slog.Int("status", ww.Status()), slog.Int("bytes", ww.BytesWritten()))
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// dataBody is the success envelope.
type dataBody struct {
	Data any `json:"data"`
}

// listBody is the success envelope of a list.
type listBody struct {
	Data       any    `json:"data"`
	NextCursor string `json:"nextCursor,omitempty"`
}

func writeData(w http.ResponseWriter, status int, v any) { writeJSON(w, status, dataBody{Data: v}) }

// readBody reads the whole request body (checkBody has already read and checked it).
func readBody(r *http.Request) ([]byte, error) {
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(r.Body); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// decodeJSON decodes a JSON body strictly into v; an empty body leaves v as it is when
// optional is true.
func decodeJSON(r *http.Request, v any, optional bool) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	if optional && len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badRequest("", "malformed JSON body: "+err.Error())
	}
	if dec.More() {
		return badRequest("", "malformed JSON body: data after the JSON value")
	}
	return nil
}

func badRequest(path, msg string) *problem.Error {
	e := problem.New(http.StatusBadRequest, problem.CodeValidation, msg)
	if path != "" {
		e.Details = []schemas.Problem{{Path: path, Message: msg}}
	}
	return e
}

// readValue reads a body that is any one JSON value; an empty body is null.
func readValue(r *http.Request) (json.RawMessage, error) {
	body, err := readBody(r)
	if err != nil {
		return nil, err
	}
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return json.RawMessage(`null`), nil
	}
	if !json.Valid(body) {
		return nil, badRequest("", "the body must be JSON")
	}
	return json.RawMessage(body), nil
}
