// Package mcpserver is GoRunner's MCP face (SPEC §5), on mcp-go: one tool per published
// workflow plus GoRunner's companion tools, served over streamable HTTP (mounted by api at
// /mcp behind its bearer auth) and over stdio (gorunner mcp). The tool set follows the
// catalog: a change made through this process's catalog updates it before the change is
// answered (the catalog's change hook), a call of a name it lacks looks the workflow up,
// and a watcher reads the store's catalog version on each events.Catalog notice of the
// engine's bus (fed by every process sharing the store) and, when it moved, diffs the
// workflows against the registered tools, so every session gets one
// notifications/tools/list_changed — also for changes made by another process.
//
// A tool call validates its arguments, starts the run through the same keyed-replay
// request as POST /api/workflows/{name}/run (so MCP and REST retries replay each other),
// then waits up to the workflow's toolTimeout for the result.
package mcpserver

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/catalog"
	"github.com/gorunner/gorunner/events"
	"github.com/gorunner/gorunner/guard"
	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/mcpserver/front"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/schemas"
)

// CatalogReader is what the MCP server reads from the catalog; *catalog.Service has it.
type CatalogReader interface {
	guard.Catalog
	Get(ctx context.Context, idOrName string) (*catalog.Workflow, error)
	List(ctx context.Context, p catalog.ListWorkflowsParams) ([]*catalog.Workflow, string, error)
	// Version returns one version of a workflow; version 0 means the latest.
	Version(ctx context.Context, workflowID string, version int) (*catalog.Version, error)
	// CatalogVersion moves whenever the set of tools may have changed.
	CatalogVersion(ctx context.Context) (int64, error)
	// OnChange registers a hook run after every change made through this process's
	// catalog, before that change is answered (read your writes).
	OnChange(h catalog.ChangeHook) (unregister func())
}

// Catalog is the catalog the MCP server reads, and writes through the authoring tools
// (the REST API's catalog calls); *catalog.Service has it.
type Catalog interface {
	CatalogReader
	// Parse decodes and validates a definition document, JSON or YAML.
	Parse(data []byte) (*schemas.Definition, error)
	Create(ctx context.Context, data []byte) (*catalog.Workflow, error)
	Update(ctx context.Context, idOrName string, data []byte, expectedRev int) (*catalog.Workflow, error)
	// Publish makes the draft a new version published by by (false: the latest version, the
	// draft unchanged since).
	Publish(ctx context.Context, idOrName string, by auth.Principal) (*catalog.Version, bool, error)
	Versions(ctx context.Context, idOrName string) ([]*catalog.Version, error)
}

// Deps are the services the MCP server works with; all are required.
type Deps struct {
	Catalog     Catalog
	Engine      *runner.Engine
	Idempotency *idempotency.Service
	// Ready reports whether the store can serve (its Ping, as the REST API's Config.Ready):
	// an unexpected failure while it cannot is the store's outage (store.Unavailable). Nil:
	// only the errors the store marked store.ErrUnreachable are.
	Ready func(ctx context.Context) error
}

// Config tunes a Server; a nil *Config means the defaults.
type Config struct {
	// Version is the server version announced to clients (default "dev").
	Version string
	// ToolTimeout is how long a workflow tool call waits for its run when the definition
	// sets no toolTimeout (default 30s).
	ToolTimeout time.Duration
	// MaxToolTimeout caps every workflow's toolTimeout (default 60s).
	MaxToolTimeout time.Duration
	// PageSize is how many tools one tools/list page holds (default 100). A page is sliced
	// from a sorted listing kept per tool set, so its cost grows with PageSize (its JSON),
	// not with the number of tools.
	PageSize int
	// PublicURL is the origin clients reach GoRunner at; browsers may call /mcp from it.
	PublicURL string
	// AllowedOrigins are further origins browsers may call /mcp from (--allowed-origins).
	// A request with any other Origin header is refused with 403.
	AllowedOrigins []string
	// ListLimit is how many workflows a session may list as tools of their own (default
	// 200): with more, or when the session asks for it (/mcp?tools=search), tools/list
	// offers gorunner_find_workflows and gorunner_run_workflow instead.
	ListLimit int
	// Logger receives the server's logs (default slog.Default()).
	Logger *slog.Logger
	// Registerer receives the tool call metrics; nil registers none.
	Registerer prometheus.Registerer
	// Now is the clock tasks' ttl is measured with (default time.Now).
	Now func() time.Time
	// StateKey (at least MinStateKeyBytes) signs the requestState of the questions put to
	// the person, so that one process's question can be answered through any process
	// sharing the key; nil signs with a random key of this process only.
	StateKey []byte
}

// Defaults of Config.
const (
	DefaultToolTimeout    = 30 * time.Second
	DefaultMaxToolTimeout = 60 * time.Second
	DefaultPageSize       = 100
	DefaultListLimit      = 200
)

func (c *Config) withDefaults() Config {
	out := Config{}
	if c != nil {
		out = *c
	}
	if out.Version == "" {
		out.Version = "dev"
	}
	out.ToolTimeout = cmp.Or(out.ToolTimeout, DefaultToolTimeout)
	out.MaxToolTimeout = cmp.Or(out.MaxToolTimeout, DefaultMaxToolTimeout)
	out.PageSize = cmp.Or(out.PageSize, DefaultPageSize)
	out.ListLimit = cmp.Or(out.ListLimit, DefaultListLimit)
	if out.Logger == nil {
		out.Logger = slog.Default()
	}
	if out.Now == nil {
		out.Now = time.Now
	}
	return out
}

func (c *Config) validate() error {
	if c.ToolTimeout < 0 || c.MaxToolTimeout < 0 || c.PageSize < 0 || c.ListLimit < 0 {
		return errors.New("mcpserver config: durations, PageSize and ListLimit must not be negative")
	}
	return nil
}

// Server serves GoRunner's tools over MCP: one mcp-go server per environment, since the
// production and the test environment list different tools.
type Server struct {
	deps Deps
	cfg  Config
	// access checks what the session's principal may do with runs and hooks.
	access *guard.Guard
	log    *slog.Logger
	envs   map[string]*environment
	// metrics count the tool calls of every environment.
	metrics *metrics
	// companionSchemas are the compiled input schemas of the companion tools, by name.
	companionSchemas map[string]*schemas.InputSchema
	// origins are the normalised origins browsers may call /mcp from.
	origins map[string]bool

	// syncMu serialises the changes of the environments' tool sets.
	syncMu sync.Mutex

	mu         sync.Mutex
	stopLoop   context.CancelFunc
	loopDone   chan struct{}
	unregister func() // the catalog change hook

	// replies routes the clients' replies to the requests the task layer sends them, for
	// the routers of every environment.
	replies front.Replies
	// elicitors are the 2025-11-25 sessions that declared elicitation.
	elicitors elicitors
	// held are the sessions each principal holds (MaxSessionsPerPrincipal).
	held sessionsHeld
	// absent are the names lookUp found missing from the catalog lately.
	absent absentNames
	// states signs the requestState of questions.
	states stateSigner

	// tasks are the goroutines sending notifications/tasks/status; tasksCtx ends them.
	tasks     sync.WaitGroup
	tasksCtx  context.Context
	stopTasks context.CancelFunc
}

// New builds the Server. Its tool set is empty until Start.
func New(deps Deps, cfg *Config) (*Server, error) {
	if deps.Catalog == nil || deps.Engine == nil || deps.Idempotency == nil {
		return nil, errors.New("mcpserver: Catalog, Engine and Idempotency are required")
	}
	c := cfg.withDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	compiled, err := compileCompanions()
	if err != nil {
		return nil, err
	}
	m, err := newMetrics(c.Registerer)
	if err != nil {
		return nil, err
	}
	states, err := newStateSigner(c.StateKey)
	if err != nil {
		return nil, err
	}
	s := &Server{deps: deps, cfg: c, access: guard.New(deps.Catalog, deps.Engine), log: c.Logger,
		envs: map[string]*environment{}, companionSchemas: compiled, metrics: m,
		origins: allowedOrigins(c.PublicURL, c.AllowedOrigins), states: states}
	s.tasksCtx, s.stopTasks = context.WithCancel(context.Background())
	for _, env := range []string{runner.EnvProduction, runner.EnvTest} {
		s.envs[env] = s.newEnvironment(env)
	}
	return s, nil
}

// Start loads the tools, follows this process's catalog changes at once and starts the
// catalog watcher (changes made by other processes), until Stop.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopLoop != nil {
		return errors.New("mcpserver: already started")
	}
	// Subscribe before the first sync, so that no change falls between the two.
	changed := s.deps.Engine.Events().Subscribe(events.Catalog)
	unregister := s.deps.Catalog.OnChange(s.catalogChanged)
	version, err := s.syncAll(ctx)
	if err != nil {
		unregister()
		changed.Close()
		return err
	}
	loopCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	s.stopLoop, s.loopDone, s.unregister = stop, make(chan struct{}), unregister
	go func() {
		defer close(s.loopDone)
		defer changed.Close()
		s.watch(loopCtx, version, changed)
	}()
	return nil
}

// Stop ends the catalog watcher and closes the HTTP sessions' notification streams, so
// that an HTTP server's Shutdown is not held up by them.
func (s *Server) Stop(ctx context.Context) error {
	s.mu.Lock()
	stop, done, unregister := s.stopLoop, s.loopDone, s.unregister
	s.mu.Unlock()
	if stop != nil {
		unregister()
		stop()
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	s.stopTasks()
	s.tasks.Wait()
	for _, env := range s.envs {
		env.http.CloseSessions(ctx)
	}
	return nil
}

// HTTPHandler serves MCP over streamable HTTP. It expects the caller's principal in the
// request context (auth.WithPrincipal, as api's bearer middleware puts it); sessions
// belong to the principal that opened them (see guard). ?environment=test serves the
// drafts' tools, anything else but production is a 400; ?tools=search lists the search
// tools instead of one tool per workflow.
func (s *Server) HTTPHandler() http.Handler {
	return s.guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("tools") {
		case "":
		case "search":
			r = r.WithContext(withSearch(r.Context()))
		default:
			http.Error(w, "tools must be search, or absent", http.StatusBadRequest)
			return
		}
		name := r.URL.Query().Get("environment")
		if name == "" {
			name = runner.EnvProduction
		}
		env, ok := s.envs[name]
		if !ok {
			http.Error(w, "environment must be production or test", http.StatusBadRequest)
			return
		}
		env.tasksHTTP.ServeHTTP(w, r)
	}))
}
