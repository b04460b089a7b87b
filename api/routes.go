package api

import (
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/internal/nostore"
	"github.com/gorunner/gorunner/internal/tracing"
	"github.com/gorunner/gorunner/problem"
	"github.com/gorunner/gorunner/wire"
)

// keyed says how a route takes part in keyed replay (SPEC §4).
type keyed int

const (
	notKeyed       keyed = iota
	principalKeyed       // keys belong to the calling principal
	secretKeyed          // principalKeyed, and the answer carries a webhook token: kept sealed
	webhookKeyed         // keys belong to the workflow; every answer kept, oldest evicted
)

// queryParam is one query parameter of a route: a string, one of enum when it has one.
type queryParam struct {
	name, description string
	enum              []string
}

// route is one row of the API: it registers the handler and describes the operation in
// the OpenAPI document, so the two cannot drift apart.
type route struct {
	method  string
	pattern string
	id      string // OpenAPI operationId
	summary string
	public  bool
	// access is what the caller's scopes must allow (SPEC §9); public routes have none.
	access access
	keyed  keyed
	body   any // the request body's Go type, nil for none
	// query are the query parameters the OpenAPI document lists beyond limit and cursor.
	query  []queryParam
	status int // the success status
	data   any // the success data's Go type, nil for no body
	list   bool
	// prepare, when set, runs before keyed replay: it resolves what the route acts on.
	prepare func(http.Handler) http.Handler
	// admits says the handler starts a run through admission.Start, which does keyed
	// replay itself, committing the key with the run in one write: no keyedReplay
	// middleware (keyed still documents the key).
	admits  bool
	handler http.HandlerFunc
}

func (s *Server) table() []route {
	return []route{
		{
			method: "POST", pattern: "/api/workflows", id: "createWorkflow",
			summary: "Create a workflow from a definition (draft, rev 1)",
			access:  need(auth.WorkflowsWrite, onEvery), keyed: secretKeyed,
			body: definitionDoc{}, status: 201, data: wire.Workflow{},
			handler: s.createWorkflow,
		},
		{
			method: "POST", pattern: "/api/workflows/import", id: "importWorkflow",
			summary: "Create a workflow from an exported JSON or YAML document",
			access:  need(auth.WorkflowsWrite, onEvery), keyed: secretKeyed,
			body: definitionDoc{}, status: 201, data: wire.Workflow{},
			handler: s.createWorkflow,
		},
		{
			method: "GET", pattern: "/api/workflows", id: "listWorkflows",
			summary: "List workflows",
			access:  need(auth.RunsRead, onSome),
			status:  200, data: wire.Workflow{}, list: true,
			handler: s.listWorkflows,
		},
		{
			method: "GET", pattern: "/api/workflows/{id}", id: "getWorkflow",
			summary: "Get a workflow by ID or name",
			access:  need(auth.RunsRead, onWorkflow),
			status:  200, data: wire.Workflow{},
			handler: s.getWorkflow,
		},
		{
			method: "GET", pattern: "/api/workflows/{id}/export", id: "exportWorkflow",
			summary: "Export the draft definition (JSON, or YAML with Accept: application/yaml)",
			access:  need(auth.RunsRead, onWorkflow),
			status:  200, data: definitionDoc{},
			handler: s.exportWorkflow,
		},
		{
			method: "PUT", pattern: "/api/workflows/{id}", id: "updateWorkflow",
			summary: "Replace the draft; optional top-level expectedRev",
			access:  need(auth.WorkflowsWrite, onEvery),
			body:    definitionDoc{}, status: 200, data: wire.Workflow{},
			handler: s.updateWorkflow,
		},
		{
			method: "DELETE", pattern: "/api/workflows/{id}", id: "deleteWorkflow",
			summary: "Delete a workflow; its tool disappears, active runs finish",
			access:  need(auth.WorkflowsWrite, onEvery),
			status:  204,
			handler: s.deleteWorkflow,
		},
		{
			method: "POST", pattern: "/api/workflows/{id}/duplicate", id: "duplicateWorkflow",
			summary: "Copy a workflow's draft into a new workflow",
			access:  need(auth.WorkflowsWrite, onEvery), keyed: secretKeyed,
			body: nameBody{}, status: 201, data: wire.Workflow{},
			handler: s.duplicateWorkflow,
		},
		{
			method: "POST", pattern: "/api/workflows/{id}/publish", id: "publishWorkflow",
			summary: "Publish the draft as a new version (200 with the latest version when unchanged)",
			access:  need(auth.WorkflowsWrite, onEvery),
			status:  201, data: wire.Version{},
			handler: s.publishWorkflow,
		},
		{
			method: "POST", pattern: "/api/workflows/{id}/unpublish", id: "unpublishWorkflow",
			summary: "Withdraw the workflow's tool",
			access:  need(auth.WorkflowsWrite, onEvery),
			status:  200, data: wire.Workflow{},
			handler: s.unpublishWorkflow,
		},
		{
			method: "GET", pattern: "/api/workflows/{id}/versions", id: "listVersions",
			summary: "List published versions, newest first",
			access:  need(auth.RunsRead, onWorkflow),
			status:  200, data: wire.Version{}, list: true,
			handler: s.listVersions,
		},
		{
			method: "GET", pattern: "/api/workflows/{id}/schedules", id: "listSchedules",
			summary: "List the published version's schedules, each with its next five ticks",
			access:  need(auth.RunsRead, onWorkflow),
			status:  200, data: wire.Schedule{}, list: true,
			handler: s.listSchedules,
		},
		{
			method: "POST", pattern: "/api/workflows/{id}/webhook/rotate", id: "rotateWebhook",
			summary: "Give the workflow a new webhook address; the old one stops at once",
			access:  need(auth.WorkflowsWrite, onEvery), keyed: secretKeyed,
			status: 201, data: wire.Webhook{},
			handler: s.rotateWebhook,
		},
		{
			method: "POST", pattern: "/api/workflows/{id}/run", id: "runWorkflow",
			summary: "Start a run (?environment=production|test); the body is the input",
			access:  need(auth.RunsWrite, onWorkflow), keyed: principalKeyed,
			body: anyObject{}, status: 202, data: wire.Run{},
			admits: true, handler: s.runWorkflow,
		},
		{
			method: "GET", pattern: "/api/runs", id: "listRuns",
			summary: "List runs, newest first (?workflow=&status=&trigger=&limit=&cursor=)",
			access:  authenticated,
			status:  200, data: wire.Run{}, list: true,
			handler: s.listRuns,
		},
		{
			method: "POST", pattern: "/api/runs/rerun", id: "rerunMany",
			summary: "Rerun up to 1000 runs by ID or by workflow and status",
			access:  need(auth.RunsWrite, onSome), keyed: principalKeyed,
			body: rerunManyBody{}, status: 202, data: wire.Run{}, list: true,
			handler: s.rerunMany,
		},
		{
			method: "GET", pattern: "/api/runs/{id}", id: "getRun",
			summary: "Get a run; ?wait=30s (≤ 60s) holds the answer until it is no longer pending or running",
			access:  need(auth.RunsRead, onRun),
			status:  200, data: wire.Run{},
			handler: s.getRun,
		},
		{
			method: "GET", pattern: "/api/runs/{id}/steps", id: "runSteps",
			summary: "Page the step records under ?parent=PATH (a run object past its bound lists counts instead)",
			access:  need(auth.RunsRead, onRun),
			status:  200, data: wire.StepRecord{}, list: true,
			handler: s.runSteps,
		},
		{
			method: "DELETE", pattern: "/api/runs/{id}", id: "deleteRun",
			summary: "Delete an ended run now, with its steps and hooks (an active run: 409)",
			access:  need(auth.RunsWrite, onRun),
			status:  204,
			handler: s.deleteRun,
		},
		{
			method: "GET", pattern: "/api/runs/{id}/events", id: "runEvents",
			summary: "Server-Sent Events of the run's step and status changes, then end; Last-Event-ID resumes",
			access:  need(auth.RunsRead, onRun),
			status:  200,
			handler: s.runEvents,
		},
		{
			method: "POST", pattern: "/api/runs/{id}/cancel", id: "cancelRun",
			summary: "Cancel a run",
			access:  need(auth.RunsWrite, onRun),
			status:  200, data: wire.Run{},
			handler: s.cancelRun,
		},
		{
			method: "POST", pattern: "/api/runs/{id}/rerun", id: "rerunRun",
			summary: "Start a new run with the same input and environment on the current version; ?from=failure (a failed run) takes over the outputs of the steps completed before the failure and begins at the failed step",
			access:  need(auth.RunsWrite, onRerun), keyed: principalKeyed,
			query: []queryParam{{name: "from", enum: []string{"failure"},
				description: "failure: rerun a failed run from its failure, the steps completed before it taken over (their outputs, not run again); another value is 400 VALIDATION_ERROR at /from, a run that did not fail 400 too."}},
			status: 202, data: wire.Run{},
			handler: s.rerunRun,
		},
		{
			method: "GET", pattern: "/api/hooks/{token}", id: "getHook",
			summary: "Get the active hook of a token (?environment=)",
			access:  need(auth.RunsRead, onHook),
			status:  200, data: wire.Hook{},
			handler: s.getHook,
		},
		{
			method: "POST", pattern: "/api/hooks/{token}/resume", id: "resumeHook",
			summary: "Send a payload to the run that owns a token (?environment=): checked against the waiting hook's ask, answered delivered or queued with the run after it",
			access:  need(auth.RunsWrite, onHook), keyed: principalKeyed,
			body: anyValue{}, status: 202, data: wire.Resume{},
			handler: s.resumeHook,
		},
		{
			method: "POST", pattern: "/api/connections", id: "createConnection",
			summary: "Create a connection; its secret can never be read back",
			access:  need(auth.WorkflowsWrite, onEvery), keyed: principalKeyed,
			body: connectionBody{}, status: 201, data: wire.Connection{},
			handler: s.createConnection,
		},
		{
			method: "GET", pattern: "/api/connections", id: "listConnections",
			summary: "List connections (no secrets)",
			access:  need(auth.WorkflowsWrite, onEvery),
			status:  200, data: wire.Connection{}, list: true,
			handler: s.listConnections,
		},
		{
			method: "DELETE", pattern: "/api/connections/{id}", id: "deleteConnection",
			summary: "Delete a connection",
			access:  need(auth.WorkflowsWrite, onEvery),
			status:  204,
			handler: s.deleteConnection,
		},
		{
			method: "GET", pattern: "/api/templates", id: "listTemplates",
			summary: "List the shipped templates",
			access:  need(auth.WorkflowsWrite, onEvery),
			status:  200, data: templateView{}, list: true,
			handler: s.listTemplates,
		},
		{
			method: "POST", pattern: "/api/templates/{id}/use", id: "useTemplate",
			summary: "Create a workflow from a template",
			access:  need(auth.WorkflowsWrite, onEvery), keyed: secretKeyed,
			body: nameBody{}, status: 201, data: wire.Workflow{},
			handler: s.useTemplate,
		},
		{
			method: "POST", pattern: "/api/tokens", id: "createToken",
			summary: "Create an API token; the secret is shown once",
			access:  need(auth.Admin, onEvery),
			body:    createTokenBody{}, status: 201, data: wire.NewToken{},
			handler: s.createToken,
		},
		{
			method: "GET", pattern: "/api/tokens", id: "listTokens",
			summary: "List API tokens (no secrets)",
			access:  need(auth.Admin, onEvery),
			status:  200, data: wire.Token{}, list: true,
			handler: s.listTokens,
		},
		{
			method: "DELETE", pattern: "/api/tokens/{id}", id: "revokeToken",
			summary: "Revoke an API token",
			access:  need(auth.Admin, onEvery),
			status:  204,
			handler: s.revokeToken,
		},
		{
			method: "GET", pattern: "/api/oauth/grants", id: "listGrants",
			summary: "List OAuth grants: all for an admin, else the caller's own",
			access:  authenticated,
			status:  200, data: wire.Grant{}, list: true,
			handler: s.listGrants,
		},
		{
			method: "DELETE", pattern: "/api/oauth/grants/{id}", id: "revokeGrant",
			summary: "Revoke an OAuth grant and every token issued under it: an admin any, others their own (another's answers 404 NOT_FOUND, as an unknown ID does)",
			access:  authenticated,
			status:  204,
			handler: s.revokeGrant,
		},
		{
			method: "GET", pattern: "/api/idempotency-keys", id: "listIdempotencyKeys",
			summary: "List the caller's idempotency keys, newest first (?cursor=&limit=)",
			access:  authenticated,
			status:  200, data: wire.Key{}, list: true,
			handler: s.listKeys,
		},
		{
			method: "GET", pattern: "/api/idempotency-keys/{key}", id: "getIdempotencyKey",
			summary: "Get one of the caller's idempotency keys",
			access:  authenticated,
			status:  200, data: wire.Key{},
			handler: s.getKey,
		},
		{
			method: "POST", pattern: "/webhooks/{token}", id: "callWebhook",
			summary: "Run the published version: 200 with the finished run, or 202 if not finished after 30 s",
			public:  true, keyed: webhookKeyed,
			body: anyObject{}, status: 200, data: wire.Run{},
			prepare: s.webhookWorkflow, admits: true, handler: s.callWebhook,
		},
	}
}

func (s *Server) routes() chi.Router {
	r := chi.NewRouter()
	r.Use(middleware.RequestID, s.requestLogger, middleware.Recoverer, s.limitBody, tracing.Middleware(s.deps.Engine.Tracer()))
	// Unmatched requests skip the table's middleware, nostore included; a 405 on
	// /webhooks/{token} repeats the token in its message.
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		nostore.Set(w)
		s.writeError(w, r, problem.New(http.StatusNotFound, problem.CodeNotFound, "no such endpoint: "+r.Method+" "+r.URL.Path))
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, req *http.Request) {
		allow := strings.Join(allowedMethods(r, req), ", ")
		nostore.Set(w)
		w.Header().Set("Allow", allow)
		s.writeError(w, req, problem.New(http.StatusMethodNotAllowed, problem.CodeMethodNotAllowed, "method "+req.Method+" is not allowed on "+req.URL.Path+"; allowed: "+allow))
	})
	r.Get("/healthz", s.healthz)
	r.Get("/readyz", s.readyz)
	r.Get("/schemas/workflow.json", s.workflowSchema)
	r.Get("/api/openapi.json", s.openapi)
	if s.cfg.Metrics != nil {
		r.Method("GET", "/metrics", s.cfg.Metrics)
	}
	for path, h := range s.cfg.Public {
		r.Handle(path, h)
	}
	if s.deps.OAuth != nil {
		for path, h := range s.deps.OAuth.Handlers() {
			r.Handle(path, h)
		}
	}
	if s.cfg.Console != nil {
		for _, path := range []string{"/", "/favicon.ico", "/console", "/console/*"} {
			r.Handle(path, s.cfg.Console)
		}
	}
	if s.cfg.MCP != nil {
		// No cache may keep an /mcp answer either: tool results and resources hold run data,
		// and session IDs are credentials of a kind. An event stream (a GET listening stream,
		// or a POST answer upgraded to one) replaces Cache-Control with no-cache when it
		// starts: a stream is not stored by caches, so that is left as mcp-go sends it.
		r.With(nostore.Handler, s.authenticate, s.streaming).Handle("/mcp", s.cfg.MCP)
	}
	for _, rt := range s.table() {
		mw := []func(http.Handler) http.Handler{nostore.Handler}
		if !rt.public {
			mw = append(mw, s.authenticate)
		}
		mw = append(mw, s.checkBody) // a malformed body is a 400 before any lookup
		if !rt.public {
			mw = append(mw, s.authorize(rt.access))
		}
		if rt.prepare != nil {
			mw = append(mw, rt.prepare)
		}
		if rt.keyed != notKeyed && !rt.admits {
			mw = append(mw, s.keyedReplay(rt.keyed))
		}
		r.With(mw...).Method(rt.method, rt.pattern, rt.handler)
	}
	return r
}

// methods are the request methods a route may be registered for, in the order Allow lists them.
var methods = []string{
	http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
	http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace,
}

// allowedMethods lists the methods router serves at req's path.
func allowedMethods(router chi.Routes, req *http.Request) []string {
	path := req.URL.RawPath
	if path == "" {
		path = req.URL.Path
	}
	var out []string
	for _, m := range methods {
		if router.Match(chi.NewRouteContext(), m, path) {
			out = append(out, m)
		}
	}
	return out
}
