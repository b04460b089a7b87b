package mcpserver

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/tools"
)

// The workflow tools are not registered with mcp-go, whose every tools/list page copies and
// sorts all registered tools (≈ 50 ms a page at 10,000): tools/list pages come from the
// view's sorted listing (listPage), and hooks send a call of a workflow to the hidden
// tool dispatch, naming the workflow in the request's _meta under dispatchMeta.
const (
	dispatch     = "gorunner_call_workflow"
	dispatchMeta = "io.gorunner/workflow"
)

// dispatchTool is the hidden tool every workflow call goes through; a direct call of it is
// a miss (callable knows only the companions and the workflows).
func (s *Server) dispatchTool(env string) server.ServerTool {
	return server.ServerTool{
		Tool: mcp.NewTool(dispatch, mcp.WithDescription("Calls a workflow (internal; never listed).")),
		Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			name := dispatchedName(req)
			t, ok := s.envs[env].view.Load().byName[name]
			if !ok { // removed between the hook and now
				return s.unknown(ctx, env, name), nil
			}
			return s.workflowHandler(env, t)(ctx, req)
		},
	}
}

// dispatchTo makes req a call of dispatch for the workflow called name.
func dispatchTo(req *mcp.CallToolRequest, name string) {
	if req.Params.Meta == nil {
		req.Params.Meta = &mcp.Meta{}
	}
	if req.Params.Meta.AdditionalFields == nil {
		req.Params.Meta.AdditionalFields = map[string]any{}
	}
	req.Params.Meta.AdditionalFields[dispatchMeta] = name
	req.Params.Name = dispatch
}

// dispatchedName is the tool a request was sent to: the workflow's name for a dispatched
// call, else the name it carries.
func dispatchedName(req mcp.CallToolRequest) string {
	if req.Params.Name == dispatch && req.Params.Meta != nil {
		if name, ok := req.Params.Meta.AdditionalFields[dispatchMeta].(string); ok {
			return name
		}
	}
	return req.Params.Name
}

// listHooks answer tools/list of env with a page of the view's listing for the session,
// replacing what mcp-go made of the few tools registered with it (it has already refused a
// cursor that is not base64).
func (s *Server) listHooks(env string, h *server.Hooks) {
	h.AddAfterListTools(func(ctx context.Context, _ any, req *mcp.ListToolsRequest, res *mcp.ListToolsResult) {
		res.Tools, res.NextCursor = s.listPage(ctx, env, req.Params.Cursor)
	})
}

// listPage is the page after cursor (the base64 of the last name of the previous page) of
// what a session of env lists: a binary search and a copy of one page, whatever the number
// of tools.
func (s *Server) listPage(ctx context.Context, env string, cursor mcp.Cursor) ([]mcp.Tool, mcp.Cursor) {
	all := s.listing(ctx, env)
	start := 0
	if cursor != "" {
		after, _ := base64.StdEncoding.DecodeString(string(cursor))
		start = sort.Search(len(all), func(i int) bool { return all[i].Name > string(after) })
	}
	end := min(len(all), start+s.cfg.PageSize)
	page := make([]mcp.Tool, 0, end-start)
	for _, t := range all[start:end] {
		page = append(page, *t)
	}
	if end == len(all) {
		return page, ""
	}
	return page, mcp.Cursor(base64.StdEncoding.EncodeToString([]byte(all[end-1].Name)))
}

// listing is everything a session of env lists, sorted by name: built once per view and
// listing key, then shared by every page of every request with that key.
func (s *Server) listing(ctx context.Context, env string) []*mcp.Tool {
	e := s.envs[env]
	v := e.view.Load()
	return v.listing(s.listKey(ctx, env), func() []*mcp.Tool {
		all := make([]mcp.Tool, 0, len(e.companions)+len(v.sorted))
		all = append(all, e.companions...)
		for _, t := range v.sorted {
			all = append(all, t.Tool)
		}
		listed := s.listFilter(env)(ctx, all)
		out := make([]*mcp.Tool, len(listed))
		for i := range listed {
			out[i] = &listed[i]
		}
		slices.SortFunc(out, func(a, b *mcp.Tool) int { return strings.Compare(a.Name, b.Name) })
		return out
	})
}

// listKey names everything listFilter reads of a request's context: whether the session
// lists the search tools, and the caller's scope set (callScope), so that two requests
// with the same key list the same tools, and one listing serves every token with the same
// scopes.
func (s *Server) listKey(ctx context.Context, env string) string {
	p, _ := auth.PrincipalFrom(ctx) // none has no scopes: it lists no workflow, as callScopeOf says
	return fmt.Sprintf("%t %q", s.searching(ctx, env), p.Scopes)
}

// unknown answers a call of a tool called name that the session may not call: a tool error
// naming the closest tools it may call.
func (s *Server) unknown(ctx context.Context, env, name string) *mcp.CallToolResult {
	return tools.Unknown("tool", name, tools.Closest(name, s.visibleNames(ctx, env)), s.searching(ctx, env))
}
