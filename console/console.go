// Package console is GoRunner's web console for people, served by `gorunner serve` at /:
// server-rendered pages (html/template, embedded in the binary) for workflows, drafts,
// versions, runs with their step timelines, waiting hooks, idempotency keys, tokens and OAuth grants.
// A run page says what the run waits for (every hook with its resume form, a sleep's end,
// a retry, a child run, a queue), acts on it (rerun, retry from the failure, cancel,
// delete) and tells why (each step's evaluated input and attempts, the run's history) and
// when (its steps on one time axis); the runs page searches by ID, input text, error,
// trigger and dates, its filters in the URL (docs/console.md).
// Pages read without JavaScript; one small script makes a run page live through the run's
// event stream. Nothing is loaded from elsewhere. A person signs in with an API token; the
// session is a sealed, HttpOnly, SameSite=Strict cookie and every form carries a CSRF
// token bound to it. The console calls the catalog, engine, idempotency and auth services
// directly, as the API does.
package console

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/gorunner/gorunner/api"
	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/guard"
)

// PageSize is how many runs, workflows or keys one console page lists.
const PageSize = 25

// Deps are the services a Console works with: the API's, since the console calls the same
// services directly.
type Deps = api.Deps

// Config tunes a Console; a nil *Config means the defaults. SecretKey and BaseURL have no
// defaults: they are required.
type Config struct {
	// SecretKey (≥ 32 bytes, shared by every process on the store: the data directory's
	// secret.key) keys the session cookies and CSRF tokens.
	SecretKey []byte
	// BaseURL is the public origin (required): webhook addresses are written with it, never
	// with the Host header, forms are accepted only from it (their Origin header), and an
	// https one makes the session cookie Secure.
	BaseURL string
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Now defaults to time.Now.
	Now func() time.Time
}

func (c *Config) withDefaults() *Config {
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
	return &out
}

func (c *Config) validate() error {
	if len(c.SecretKey) < 32 {
		return errors.New("console: Config.SecretKey must be at least 32 bytes")
	}
	base, err := url.Parse(c.BaseURL)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return fmt.Errorf("console: Config.BaseURL %q is not an absolute http(s) URL", c.BaseURL)
	}
	return nil
}

// Console serves the web console.
type Console struct {
	deps     Deps
	cfg      Config
	origin   string // BaseURL's origin, as originOf gives it
	log      *slog.Logger
	sessions *sessions
	pages    *pages
	router   chi.Router
	guard    *guard.Guard
}

// New builds the console.
func New(deps Deps, cfg *Config) (*Console, error) {
	if err := deps.Validate(); err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	c := cfg.withDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	base, _ := url.Parse(c.BaseURL) // validate parsed it
	sess, err := newSessions(c.SecretKey, strings.HasPrefix(c.BaseURL, "https://"), c.Now)
	if err != nil {
		return nil, err
	}
	p, err := loadPages()
	if err != nil {
		return nil, err
	}
	web := &Console{deps: deps, cfg: *c, origin: originOf(base), log: c.Logger, sessions: sess, pages: p, guard: guard.New(deps.Catalog, deps.Engine)}
	web.router = web.routes()
	return web, nil
}

// ServeHTTP serves the console's paths: / and /console/….
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) { c.router.ServeHTTP(w, r) }

func (c *Console) routes() chi.Router {
	r := chi.NewRouter()
	r.Use(securityHeaders)
	r.Handle("/console/static/*", staticFiles())
	r.Get("/favicon.ico", favicon)
	r.Get("/console/signin", c.signinPage)
	r.Post("/console/signin", c.signin)
	r.Group(func(r chi.Router) {
		r.Use(c.requireSession)
		r.Get("/", c.home)
		r.Get("/console", c.home)
		r.Post("/console/signout", c.signout)
		r.With(c.allow(some(auth.RunsRead))).Get("/console/workflows", c.listWorkflows)
		r.With(c.allow(every(auth.WorkflowsWrite))).Post("/console/workflows", c.createWorkflow)
		r.With(c.allow(c.readWorkflow)).Get("/console/workflows/{id}", c.workflowPage)
		r.With(c.allow(every(auth.WorkflowsWrite))).Post("/console/workflows/{id}", c.saveDraft)
		r.With(c.allow(every(auth.WorkflowsWrite))).Post("/console/workflows/{id}/publish", c.publish)
		r.With(c.allow(every(auth.WorkflowsWrite))).Post("/console/workflows/{id}/unpublish", c.unpublish)
		r.With(c.allow(c.runWorkflow)).Post("/console/workflows/{id}/run", c.startRun)
		r.Get("/console/runs", c.listRuns)
		r.With(c.allow(c.onRun(auth.RunsRead))).Get("/console/runs/{id}", c.runPage)
		r.With(c.allow(c.onRun(auth.RunsRead))).Get("/console/runs/{id}/events", c.runEvents)
		r.With(c.allow(rerunAny)).Post("/console/runs/rerun", c.rerunMany)
		r.With(c.allow(c.onRun(auth.RunsWrite))).Get("/console/runs/{id}/cancel", c.confirmCancel)
		r.With(c.allow(c.onRun(auth.RunsWrite))).Post("/console/runs/{id}/cancel", c.cancelRun)
		r.With(c.allow(c.onRun(auth.RunsWrite))).Get("/console/runs/{id}/delete", c.confirmDelete)
		r.With(c.allow(c.onRun(auth.RunsWrite))).Post("/console/runs/{id}/delete", c.deleteRun)
		r.With(c.allow(c.rerun)).Post("/console/runs/{id}/rerun", c.rerunRun)
		r.With(c.allow(c.resume)).Post("/console/hooks/resume", c.resumeHook)
		r.Get("/console/keys", c.listKeys)
		r.With(c.allow(every(auth.Admin))).Get("/console/tokens", c.listTokens)
		r.With(c.allow(every(auth.Admin))).Post("/console/tokens", c.createToken)
		r.With(c.allow(every(auth.Admin))).Post("/console/tokens/{id}/revoke", c.revokeToken)
		r.Get("/console/grants", c.listGrants)
		r.Post("/console/grants/{id}/revoke", c.revokeGrant)
	})
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		c.render(w, r, http.StatusNotFound, "error", "Not found", errorPage{Message: "There is no console page at " + r.URL.Path + "."})
	})
	return r
}

// securityHeaders forbid every request to another origin (scripts, styles, images, forms,
// frames) and framing by other sites.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "+
			"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		next.ServeHTTP(w, r)
	})
}

func (c *Console) home(w http.ResponseWriter, r *http.Request) {
	http.Redirect(w, r, "/console/runs", http.StatusSeeOther)
}
