package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/gorunner/gorunner/catalog"
	"github.com/gorunner/gorunner/internal/names"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/schemas"
	"github.com/gorunner/gorunner/tools"
)

// view is one environment's workflow tools as calls and lists see them: a snapshot the
// sync replaces whole, so readers never lock.
type view struct {
	byName map[string]*tools.Tool
	sorted []*tools.Tool // by name
	names  []string      // the same order

	mu       sync.Mutex
	listings map[string]*builtListing // what sessions list, by listKey; built on first use
}

// builtListing is one listing of a view, built once.
type builtListing struct {
	once  sync.Once
	tools []*mcp.Tool
}

// listing is the listing under key, built by build on first use. The build runs outside
// v.mu, once per key: requests for the same key wait for it, others do not.
func (v *view) listing(key string, build func() []*mcp.Tool) []*mcp.Tool {
	v.mu.Lock()
	l, ok := v.listings[key]
	if !ok {
		l = &builtListing{}
		v.listings[key] = l
	}
	v.mu.Unlock()
	l.once.Do(func() { l.tools = build() })
	return l.tools
}

func newView(entries map[string]*entry) *view {
	v := &view{byName: make(map[string]*tools.Tool, len(entries)), listings: map[string]*builtListing{}}
	for name, e := range entries {
		v.byName[name] = e.tool
		v.names = append(v.names, name)
	}
	slices.Sort(v.names)
	for _, n := range v.names {
		v.sorted = append(v.sorted, v.byName[n])
	}
	return v
}

// searchKey marks a request whose session asked for the search tools (/mcp?tools=search).
type searchKey struct{}

// withSearch marks ctx as asking for the search tools.
func withSearch(ctx context.Context) context.Context {
	return context.WithValue(ctx, searchKey{}, true)
}

// searching reports whether a request in env gets the search tools instead of one tool per
// workflow: its session asked for them, or there are more workflows than the list limit.
func (s *Server) searching(ctx context.Context, env string) bool {
	asked, _ := ctx.Value(searchKey{}).(bool)
	return asked || len(s.envs[env].view.Load().names) > s.cfg.ListLimit
}

// listed reports whether a session in search mode (or not), which may author workflows
// (or not, see mayAuthor), lists the tool called name. Miss is never listed.
func listed(name string, search, author bool) bool {
	switch {
	case name == tools.Miss, tools.IsAuthoring(name) && !author:
		return false
	}
	switch name {
	case tools.FindWorkflows, tools.RunWorkflow:
		return search
	}
	return !search || strings.HasPrefix(name, schemas.ReservedPrefix)
}

// listFilter is the tools/list filter of env: one tool per workflow the session may call
// (callScope), or the search tools. mcp-go also runs it at call time with just the called
// tool, one registered with it (a companion, Miss or dispatch); hooks have by then sent
// every call the session may not make to Miss, so such a lone tool passes. A lone workflow
// tool is filtered as in any list: the shortcut must not hang on the list's length alone.
func (s *Server) listFilter(env string) server.ToolFilterFunc {
	return func(ctx context.Context, all []mcp.Tool) []mcp.Tool {
		if len(all) == 1 && s.registered(all[0].Name) {
			return all
		}
		search, author := s.searching(ctx, env), mayAuthor(ctx)
		scope, byName := callScopeOf(ctx, env), s.envs[env].view.Load().byName
		out := make([]mcp.Tool, 0, len(all))
		for _, t := range all {
			wf, isWorkflow := byName[t.Name]
			if listed(t.Name, search, author) && (!isWorkflow || scope.allows(wf)) {
				out = append(out, t)
			}
		}
		return out
	}
}

// registered reports whether the tool called name is registered with mcp-go: a companion
// (Miss included) or dispatch. Workflow tools live in the view only.
func (s *Server) registered(name string) bool {
	_, companion := s.companionSchemas[name]
	return companion || name == dispatch
}

// hooks answer tools/list from the view (listHooks), send a call of a workflow to dispatch,
// and turn a call of a name the session may not call into a call of Miss, so that it
// is answered with a tool error naming the closest tools, not a protocol error. A name the
// tool set lacks is first looked up in the catalog (SPEC §5 "read your writes": published
// an instant ago by another process), and its tool added when found.
func (s *Server) hooks(env string) *server.Hooks {
	h := &server.Hooks{}
	h.AddBeforeCallTool(func(ctx context.Context, _ any, req *mcp.CallToolRequest) {
		name := req.Params.Name
		if _, companion := s.companionSchemas[name]; companion && s.callable(ctx, env, name) {
			return
		}
		if s.callable(ctx, env, name) || s.lookUp(ctx, env, name) {
			dispatchTo(req, name)
			return
		}
		args := tools.MissArgs{Name: req.Params.Name}
		raw, err := json.Marshal(args)
		if err != nil {
			return
		}
		req.Params.Name, req.Params.Arguments, req.Params.RawArguments = tools.Miss, map[string]any{"name": args.Name}, raw
	})
	s.listHooks(env, h)
	s.elicitors.hooks(h)
	s.held.hooks(env, h)
	extensionHooks(h)
	return h
}

// callable reports whether a session of env may call the tool called name: GoRunner's own
// tools (but Miss, which only hooks calls, and the authoring tools without workflows:write)
// and the environment's workflows its scopes allow, listed or found.
func (s *Server) callable(ctx context.Context, env, name string) bool {
	if _, ok := s.companionSchemas[name]; ok {
		return name != tools.Miss && (!tools.IsAuthoring(name) || mayAuthor(ctx))
	}
	t, ok := s.envs[env].view.Load().byName[name]
	return ok && callScopeOf(ctx, env).allows(t)
}

// lookUp reads the workflow called name, which env's tool set lacks, from the catalog and
// brings its tool up to date, then reports whether a session of env may call it now. A
// name in the tool set (a session may not call it) or of no production tool (a draft, for
// env production) changes nothing. A name found absent is not read again for a while
// (absentNames); a failed read is not remembered.
func (s *Server) lookUp(ctx context.Context, env, name string) bool {
	if _, ok := s.companionSchemas[name]; ok {
		return false
	}
	if _, ok := s.envs[env].view.Load().byName[name]; ok {
		return false
	}
	// A name no workflow may have (one up to a megabyte long) is absent without a catalog
	// read, and is not remembered among the absent names.
	if !names.Valid(name) || s.absent.absent(env, name, s.cfg.Now()) {
		return false
	}
	gen := s.absent.generation()
	w, err := s.deps.Catalog.Get(ctx, name)
	if err == nil && w.Name != name { // Get also finds a workflow by its ID
		err = catalog.ErrNotFound
	}
	if err != nil {
		if !errors.Is(err, catalog.ErrNotFound) {
			s.log.Warn("mcp: looking up a tool not in the tool set failed", "name", name, "err", err)
			return false
		}
		s.absent.remember(env, name, s.cfg.Now(), gen)
		return false
	}
	if env == runner.EnvProduction && !w.Published {
		s.absent.remember(env, name, s.cfg.Now(), gen)
		return false
	}
	if err := s.syncWorkflow(ctx, w.ID); err != nil {
		s.log.Warn("mcp: adding a tool looked up in the catalog failed", "name", name, "err", err)
		return false
	}
	return s.callable(ctx, env, name)
}

// visibleNames are the tools a session may call and is told about, for suggestions: the
// listed companions and every workflow it may call (listed, or found by
// gorunner_find_workflows).
func (s *Server) visibleNames(ctx context.Context, env string) []string {
	search, author := s.searching(ctx, env), mayAuthor(ctx)
	var names []string
	for name := range s.companionSchemas {
		if listed(name, search, author) {
			names = append(names, name)
		}
	}
	return append(names, callScopeOf(ctx, env).names(s.envs[env].view.Load())...)
}

// miss answers a call of a tool the session may not call.
func (s *Server) miss(ctx context.Context, env string, c *tools.Call) (*mcp.CallToolResult, error) {
	var a tools.MissArgs
	if err := json.Unmarshal(c.Input, &a); err != nil {
		return nil, err
	}
	return s.unknown(ctx, env, a.Name), nil
}

// find answers gorunner_find_workflows with the workflows the session may call.
func (s *Server) find(ctx context.Context, env string, c *tools.Call) (*mcp.CallToolResult, error) {
	var a tools.FindArgs
	if err := json.Unmarshal(c.Input, &a); err != nil {
		return nil, err
	}
	if _, problem := tools.QueryWords(a.Query); problem != nil {
		return tools.InvalidArguments(nil, []schemas.Problem{*problem}), nil
	}
	found := tools.Find(callScopeOf(ctx, env).tools(s.envs[env].view.Load().sorted), a.Query, a.Tag, tools.MaxFound)
	return tools.Structured(tools.FoundList{Workflows: found}), nil
}
