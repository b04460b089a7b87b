package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/gorunner/gorunner/catalog"
	"github.com/gorunner/gorunner/events"
	"github.com/gorunner/gorunner/mcpserver/front"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/schemas"
	"github.com/gorunner/gorunner/tools"
)

// listPage is how many workflows one catalog read fetches while building the tool set.
const listPage = 500

// environment is one environment's MCP server and the workflow tools registered on it.
type environment struct {
	name string
	// mcp has the companion tools and dispatch registered; the workflow tools are in view.
	mcp        *server.MCPServer
	companions []mcp.Tool // the companion tools, as listed
	http       *server.StreamableHTTPServer
	// sessions mints and checks the session IDs of http.
	sessions sessionIDs
	tools    map[string]*entry // by tool name; touched under Server.syncMu only
	// view is what calls and lists read of the workflow tools, replaced whole by the sync.
	view atomic.Pointer[view]
	// router is the front layer of both transports: it routes each message read.
	router *front.Router
	// tasksHTTP serves /mcp: the router in front of http.
	tasksHTTP *httpTransport
}

// lookup is the workflow tool called name, or nil.
func (env *environment) lookup(name string) *tools.Tool {
	return env.view.Load().byName[name]
}

// entry is one registered workflow tool and the catalog state it was built from.
type entry struct {
	id     string // the workflow's ID
	source string // workflow ID and version (production) or draft rev (test)
	tool   *tools.Tool
}

func (s *Server) newEnvironment(name string) *environment {
	m := server.NewMCPServer("gorunner", s.cfg.Version,
		server.WithToolCapabilities(true),
		server.WithPaginationLimit(s.cfg.PageSize),
		server.WithToolHandlerMiddleware(s.metrics.middleware), // outside recovery: a panic counts as an error
		server.WithRecovery(),
		server.WithInstructions(tools.Instructions),
		server.WithToolFilter(s.listFilter(name)),
		server.WithHooks(s.hooks(name)),
		server.WithResourceCapabilities(false, false),
		server.WithTaskCapabilities(true, true, true),
		server.WithExtensions(serverExtensions()),
	)
	env := &environment{name: name, mcp: m, tools: map[string]*entry{}}
	env.view.Store(newView(nil))
	env.sessions = sessionIDs{held: &s.held, env: name}
	env.http = server.NewStreamableHTTPServer(m, server.WithStreamableHTTPLogger(transportLog(s.log)),
		server.WithSessionIdManagerResolver(env.sessions))
	env.router = front.NewRouter(envTasks{s: s, env: env}, &s.replies)
	env.tasksHTTP = &httpTransport{env: env, held: &s.held}
	registered := s.companionTools(env)
	for _, t := range registered {
		env.companions = append(env.companions, t.Tool)
	}
	m.SetTools(append(registered, s.dispatchTool(name))...)
	m.AddResourceTemplates(s.runTemplate())
	m.AddResources(cardResource())
	return env
}

// syncRetry is how long the watcher waits before it retries a failed sync of the tool sets.
const syncRetry = time.Second

// watch brings the tool sets up to date whenever the catalog version moves: it reads the
// version on each events.Catalog notice (a catalog write on any process sharing the store,
// or the bus's resync) and retries a failed sync after syncRetry.
func (s *Server) watch(ctx context.Context, seen int64, changed *events.Subscription) {
	var retry <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-changed.C:
		case <-retry:
		}
		retry = nil
		if v, err := s.deps.Catalog.CatalogVersion(ctx); err == nil && v == seen {
			continue
		}
		v, err := s.syncAll(ctx)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("mcp: updating the tool set failed; retrying", "in", syncRetry, "err", err)
			}
			retry = time.After(syncRetry)
			continue
		}
		seen = v
	}
}

// syncAll reads the catalog version, then brings every environment's tools up to date
// with it; a change made meanwhile moves the version again and fires events.Catalog again.
func (s *Server) syncAll(ctx context.Context) (int64, error) {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	s.absent.forget()
	v, err := s.deps.Catalog.CatalogVersion(ctx)
	if err != nil {
		return 0, fmt.Errorf("reading the catalog version: %w", err)
	}
	for _, env := range s.envs {
		if err := s.sync(ctx, env); err != nil {
			return 0, fmt.Errorf("updating the %s tools: %w", env.name, err)
		}
	}
	return v, nil
}

// sync diffs the environment's workflows against its registered tools and, when anything
// was added, removed or replaced, sets the new tool set at once: one list_changed.
func (s *Server) sync(ctx context.Context, env *environment) error {
	workflows, err := s.listWorkflows(ctx, env.name == runner.EnvProduction)
	if err != nil {
		return err
	}
	next := make(map[string]*entry, len(workflows))
	changed := false
	for _, w := range workflows {
		e, err := s.entryFor(ctx, env, w)
		if err != nil {
			return err
		}
		if e == nil {
			continue
		}
		if env.tools[w.Name] != e {
			changed = true
		}
		next[w.Name] = e
	}
	if !changed && len(next) == len(env.tools) {
		return nil
	}
	s.apply(env, next)
	return nil
}

// apply makes next env's tool set: one list_changed.
func (s *Server) apply(env *environment, next map[string]*entry) {
	env.tools = next
	env.view.Store(newView(next))
	env.mcp.SendNotificationToAllClients(mcp.MethodNotificationToolsListChanged, nil)
}

// syncWorkflow brings the tool of the workflow with id (by ID, so a rename or a delete
// drops the old name) up to date in every environment: what a change made through this
// process's catalog, and a call of a name not listed yet, do before they are answered.
func (s *Server) syncWorkflow(ctx context.Context, id string) error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	s.absent.forget()
	w, err := s.deps.Catalog.Get(ctx, id)
	if errors.Is(err, catalog.ErrNotFound) {
		w, err = nil, nil
	}
	if err != nil {
		return fmt.Errorf("reading workflow %s: %w", id, err)
	}
	for _, env := range s.envs {
		next := make(map[string]*entry, len(env.tools)+1)
		var old *entry
		for name, e := range env.tools {
			if e.id == id {
				old = e
				continue
			}
			next[name] = e
		}
		var e *entry
		if w != nil {
			if e, err = s.entryFor(ctx, env, w); err != nil {
				return fmt.Errorf("updating the %s tool of %q: %w", env.name, w.Name, err)
			}
		}
		if e != nil {
			next[w.Name] = e
		}
		if e != old || len(next) != len(env.tools) {
			s.apply(env, next)
		}
	}
	return nil
}

// catalogChanged is the catalog's change hook: the tool set follows this process's writes
// before they are answered; a failure leaves it to the watcher.
func (s *Server) catalogChanged(ctx context.Context, id string) {
	if err := s.syncWorkflow(ctx, id); err != nil {
		s.log.Warn("mcp: updating the tool set after a catalog change failed; the watcher retries", "workflow", id, "err", err)
	}
}

// listWorkflows reads every live workflow, or only the published ones.
func (s *Server) listWorkflows(ctx context.Context, publishedOnly bool) ([]*catalog.Workflow, error) {
	var all []*catalog.Workflow
	p := catalog.ListWorkflowsParams{Page: catalog.Page{Limit: listPage}, PublishedOnly: publishedOnly}
	for {
		page, next, err := s.deps.Catalog.List(ctx, p)
		if err != nil {
			return nil, fmt.Errorf("listing workflows: %w", err)
		}
		all = append(all, page...)
		if next == "" {
			return all, nil
		}
		p.Cursor = next
	}
}

// entryFor returns w's tool: the registered one when w has not changed since, else a new
// one built from the published version (production) or the draft (test). A workflow not
// published has no production tool; one whose tool cannot be built is left out and logged;
// nil, nil then.
func (s *Server) entryFor(ctx context.Context, env *environment, w *catalog.Workflow) (*entry, error) {
	source := fmt.Sprintf("%s@rev%d", w.ID, w.Rev)
	if env.name == runner.EnvProduction {
		if !w.Published || w.LatestVersion == 0 {
			return nil, nil
		}
		source = fmt.Sprintf("%s@v%d", w.ID, w.LatestVersion)
	}
	if old := env.tools[w.Name]; old != nil && old.source == source {
		return old, nil
	}
	def, err := s.definition(ctx, env.name, w)
	if errors.Is(err, catalog.ErrNotFound) {
		return nil, nil // deleted or unpublished meanwhile; the next version move says so
	}
	if err != nil {
		return nil, err
	}
	t, err := tools.FromDefinition(def)
	if err != nil {
		s.log.Warn("mcp: workflow left out of the tool list", "workflow", w.Name, "environment", env.name, "err", err)
		return nil, nil
	}
	return &entry{id: w.ID, source: source, tool: t}, nil
}

// definition is what a new run of w executes in env.
func (s *Server) definition(ctx context.Context, env string, w *catalog.Workflow) (*schemas.Definition, error) {
	raw := w.Definition
	if env == runner.EnvProduction {
		v, err := s.deps.Catalog.Version(ctx, w.ID, w.LatestVersion)
		if err != nil {
			return nil, fmt.Errorf("reading version %d of %q: %w", w.LatestVersion, w.Name, err)
		}
		raw = v.Definition
	}
	return schemas.Decode(raw)
}
