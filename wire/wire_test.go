package wire_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/catalog"
	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/oauth"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/schemas"
	"github.com/gorunner/gorunner/wire"
)

var (
	t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	t1 = t0.Add(time.Second)
	t2 = t0.Add(2 * time.Second)
	// wakeAt is an engine-only time no view may show: its year appears nowhere else.
	wakeAt = time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC)
)

// engineRun is a run with every field set, engine state included, each engine field to a
// value that appears nowhere in the views.
func engineRun() *runner.Run {
	return &runner.Run{
		ID: "run-1", WorkflowID: "wf-1", Workflow: "hello", Version: 3, Environment: runner.EnvTest,
		Status: runner.StatusWaiting, Input: json.RawMessage(`{"name":"Ada"}`), Output: json.RawMessage(`{"ok":true}`),
		Error: &runner.Error{Code: "STEP_FAILED", Message: "boom", Step: "greet"},
		WaitingOn: &runner.WaitingOn{Hook: "tok-1", SleepUntil: &t2,
			Ask: &schemas.HookAsk{Message: "Ship it?", Schema: json.RawMessage(`{"type":"object"}`)}},
		Undelivered: &runner.Undelivered{Payloads: []runner.UndeliveredPayload{{Token: "tok-1", Payload: json.RawMessage(`{"late":true}`)}}, Omitted: 2},
		Steps: []*runner.StepRecord{{
			ID: "s-1", StepID: "greet", Status: runner.StepFailed, Attempts: 2, Output: json.RawMessage(`"hi"`),
			Error: &runner.Error{Code: "HTTP_500", Message: "bad"}, StartedAt: &t1, FinishedAt: &t2,
			Conflict: json.RawMessage(`{"owner":"run-0"}`), State: json.RawMessage(`{"engineState":1}`),
			Input: json.RawMessage(`{"url":"https://x"}`), History: []runner.Attempt{{N: 2, StartedAt: t1, FinishedAt: t2,
				Error: &runner.Error{Code: "HTTP_500", Message: "bad"}, Request: "GET https://x", Status: 500}},
		}},
		RerunOf: "run-0", Trigger: runner.ScheduleTrigger(2, t0), CreatedAt: t0, StartedAt: &t1, FinishedAt: &t2,
		Definition: json.RawMessage(`{"engineDefinition":1}`), WakeAt: wakeAt, CancelRequested: true,
		StartToken: "engine-start-token", ParentRunID: "engine-parent", StartedBy: "engine-principal",
		Depth: 88, Claims: 77,
	}
}

const runJSON = `{"id":"run-1","workflowId":"wf-1","workflow":"hello","version":3,"environment":"test",` +
	`"status":"waiting","input":{"name":"Ada"},"output":{"ok":true},` +
	`"error":{"code":"STEP_FAILED","message":"boom","step":"greet"},` +
	`"steps":[{"id":"s-1","path":"s-1","stepId":"greet","status":"failed","attempts":2,"output":"hi",` +
	`"error":{"code":"HTTP_500","message":"bad"},"startedAt":"2026-11-30T12:00:01Z",` +
	`"finishedAt":"2026-11-30T12:00:02Z","conflict":{"owner":"run-0"},"input":{"url":"https://x"},` +
	`"history":[{"attempt":2,"startedAt":"2026-11-30T12:00:01Z","finishedAt":"2026-11-30T12:00:02Z",` +
	`"error":{"code":"HTTP_500","message":"bad"},"request":"GET https://x","status":500}]}],` +
	`"waitingOn":{"hook":{"token":"tok-1","message":"Ship it?","schema":{"type":"object"}},"sleepUntil":"2026-11-30T12:00:02Z"},"rerunOf":"run-0",` +
	`"trigger":{"type":"schedule","index":2,"at":"2026-11-30T12:00:00Z"},` +
	`"createdAt":"2026-11-30T12:00:00Z","startedAt":"2026-11-30T12:00:01Z","finishedAt":"2026-11-30T12:00:02Z",` +
	`"undeliveredPayloads":[{"token":"tok-1","payload":{"late":true}}],"undeliveredOmitted":2}`

// bareRun is a pending run with nothing but its ID and creation time; bareRunJSON its view.
func bareRun() *runner.Run {
	return &runner.Run{ID: "r", Status: runner.StatusPending, CreatedAt: t0}
}

const bareRunJSON = `{"id":"r","workflowId":"","workflow":"","version":0,"environment":"","status":"pending",` +
	`"input":null,"output":null,"error":null,"steps":null,"waitingOn":null,"createdAt":"2026-11-30T12:00:00Z",` +
	`"startedAt":null,"finishedAt":null}`

// runEngineOnly are the names and values of a run's engine state, which never reach the wire.
var runEngineOnly = []string{
	"engineDefinition", "definition", "2099", "wakeAt", "cancelRequested", "engine-start-token", "startToken",
	"engine-parent", "parentRunId", "engine-principal", "startedBy", "88", "depth", "77", "claims",
	"engineState", `"state"`,
}

func TestViews(t *testing.T) {
	t.Parallel()
	wf := &catalog.Workflow{ID: "wf-1", Name: "hello", Title: "Hello", Description: "Says hello.", Rev: 4,
		Definition: json.RawMessage(`{"name":"hello"}`), LatestVersion: 2, Published: true,
		WebhookDigest: "whk-secret", CreatedAt: t0, UpdatedAt: t1}
	expires := t2
	tok := &auth.Token{ID: "tok-1", Name: "ci", Hash: []byte("hash-bytes"), Scopes: auth.AdminScopes(),
		ExpiresAt: &expires, Audience: "/mcp", CreatedAt: t0}
	tests := []struct {
		name string
		view any
		want string
		// forbidden are the record's names and values that must not reach the wire.
		forbidden []string
	}{
		{"run", wire.RunOf(engineRun()), runJSON, runEngineOnly},
		{"run without steps or error", wire.RunOf(bareRun()), bareRunJSON, runEngineOnly},
		{"step", wire.StepOf(engineRun().Steps[0]), runJSON[strings.Index(runJSON, `{"id":"s-1"`):strings.Index(runJSON, `],"waitingOn"`)], runEngineOnly},
		{"error", wire.ErrorOf(&runner.Error{Code: "C", Message: "m"}), `{"code":"C","message":"m"}`, nil},
		{"waitingOn", wire.WaitingOnOf(&runner.WaitingOn{Hook: "h"}), `{"hook":{"token":"h"}}`, nil},
		{"queued", wire.WaitingOnOf(&runner.WaitingOn{Queue: &runner.QueuePlace{Key: "acme", Limit: 2, Active: []string{"r1", "r2"}, Ahead: 3}}),
			`{"queue":{"key":"acme","limit":2,"active":["r1","r2"],"ahead":3}}`, nil},
		{"queued, no run active", wire.WaitingOnOf(&runner.WaitingOn{Queue: &runner.QueuePlace{Limit: 1}}),
			`{"queue":{"key":"","limit":1,"active":[],"ahead":0}}`, nil},
		{"hook", wire.HookOf(&runner.Hook{Environment: runner.EnvProduction, Token: "t", RunID: "r", CreatedAt: t0}, nil),
			`{"token":"t","runId":"r","createdAt":"2026-11-30T12:00:00Z"}`, []string{"production", "environment"}},
		{"submitted", wire.SubmittedOf(&runner.SubmitResult{Run: bareRun()}), `{"data":` + bareRunJSON + `}`, runEngineOnly},
		{"reused", wire.SubmittedOf(&runner.SubmitResult{Run: bareRun(), Reused: true}), `{"data":` + bareRunJSON + `,"reused":true}`, nil},
		{"forwarded", wire.SubmittedOf(&runner.SubmitResult{Run: bareRun(), Forwarded: true}), `{"data":` + bareRunJSON + `,"forwarded":true}`, nil},
		{"workflow", wire.WorkflowOf(wf, "https://runner.example/webhooks/whk-secret"),
			`{"id":"wf-1","name":"hello","title":"Hello","description":"Says hello.","rev":4,"definition":{"name":"hello"},` +
				`"latestVersion":2,"published":true,"webhookUrl":"https://runner.example/webhooks/whk-secret",` +
				`"createdAt":"2026-11-30T12:00:00Z","updatedAt":"2026-11-30T12:00:01Z"}`, []string{"webhookToken", `"whk-secret"`}},
		{"unpublished workflow", wire.WorkflowOf(&catalog.Workflow{ID: "w", Name: "n", CreatedAt: t0, UpdatedAt: t0}, "u"),
			`{"id":"w","name":"n","rev":0,"definition":null,"latestVersion":null,"published":false,"webhookUrl":"u",` +
				`"createdAt":"2026-11-30T12:00:00Z","updatedAt":"2026-11-30T12:00:00Z"}`, nil},
		{"version", wire.VersionOf(&catalog.Version{WorkflowID: "wf-1", Version: 2, Definition: json.RawMessage(`{}`), Hash: "h", PublishedAt: t0}),
			`{"workflowId":"wf-1","version":2,"definition":{},"hash":"h","publishedAt":"2026-11-30T12:00:00Z"}`, nil},
		{"connection", wire.ConnectionOf(&catalog.Connection{ID: "c-1", Name: "stripe", Type: "basic", Header: "X-Key",
			Username: "ada", Hosts: []string{"api.stripe.com"}, Sealed: []byte("engine-sealed"), CreatedAt: t0}),
			`{"id":"c-1","name":"stripe","type":"basic","header":"X-Key","username":"ada","hosts":["api.stripe.com"],` +
				`"createdAt":"2026-11-30T12:00:00Z"}`, []string{"engine-sealed", "ZW5naW5lLXNlYWxlZA", "sealed", "secret"}},
		{"no connections", wire.ConnectionsOf(nil), `[]`, nil},
		{"token", wire.TokenOf(tok),
			`{"id":"tok-1","name":"ci","scopes":["admin"],"expiresAt":"2026-11-30T12:00:02Z","audience":"/mcp",` +
				`"createdAt":"2026-11-30T12:00:00Z"}`, []string{"hash-bytes", "aGFzaC1ieXRlcw"}},
		{"new token", wire.NewTokenOf(tok, "grt_secret"),
			`{"id":"tok-1","name":"ci","scopes":["admin"],"expiresAt":"2026-11-30T12:00:02Z","token":"grt_secret"}`,
			[]string{"hash-bytes", "aGFzaC1ieXRlcw"}},
		{"key", wire.KeyOf(&idempotency.Record{Scope: "p:me", Key: "k", Fingerprint: "fp-engine", Method: "POST", Path: "/api/x",
			RunID: "r", State: idempotency.StateDone, Status: 202, Header: map[string][]string{"Location": {"/engine-loc"}},
			Body: []byte("engine-body"), CreatedAt: t0, LockedUntil: wakeAt, ExpiresAt: t1}),
			`{"key":"k","state":"kept","method":"POST","path":"/api/x","status":202,"runId":"r",` +
				`"createdAt":"2026-11-30T12:00:00Z","expiresAt":"2026-11-30T12:00:01Z"}`,
			[]string{"p:me", "fp-engine", "engine-loc", "engine-body"}},
		{"key in progress", wire.KeyOf(&idempotency.Record{Key: "k", State: idempotency.StateInProgress, CreatedAt: t0, ExpiresAt: t0}),
			`{"key":"k","state":"in_progress","method":"","path":"","createdAt":"2026-11-30T12:00:00Z",` +
				`"expiresAt":"2026-11-30T12:00:00Z"}`, nil},
		{"grant", wire.GrantOf(&oauth.Grant{ID: "g", ClientID: "https://c.example/meta", ClientName: "Claude", PrincipalID: "tok-1",
			PrincipalName: "ci", Scope: "runs:read runs:write", CreatedAt: t0, RefreshHash: []byte("engine-refresh"),
			RefreshExpiresAt: t1, TokenIDs: []string{"engine-at-1", "engine-at-2"}, Issued: 2, Code: []byte("engine-code")}),
			`{"id":"g","clientId":"https://c.example/meta","clientName":"Claude","principalId":"tok-1","principal":"ci",` +
				`"scopes":["runs:read","runs:write"],"createdAt":"2026-11-30T12:00:00Z",` +
				`"refreshExpiresAt":"2026-11-30T12:00:01Z","tokensIssued":2}`,
			[]string{"engine-refresh", "ZW5naW5lLXJlZnJlc2g", "engine-at-1", "engine-code"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := json.Marshal(tc.view)
			require.NoError(t, err)
			require.JSONEq(t, tc.want, string(got))
			require.Equal(t, tc.want, string(got), "field order is part of the wire")
			for _, s := range tc.forbidden {
				require.NotContains(t, string(got), s)
			}
		})
	}
}

// TestEveryFieldMapped fills every field of each record and checks every field of its view
// is set, so a field added to a view and forgotten in its constructor fails here.
func TestEveryFieldMapped(t *testing.T) {
	t.Parallel()
	for name, v := range map[string]any{
		"run":   wire.RunOf(engineRun()),
		"step":  wire.StepOf(engineRun().Steps[0]),
		"error": wire.ErrorOf(engineRun().Error),
		"waiting": wire.WaitingOnOf(&runner.WaitingOn{Hook: "h", SleepUntil: &t0,
			Queue: &runner.QueuePlace{Key: "k", Limit: 1, Active: []string{"r"}, Ahead: 1}}),
		"hook":       wire.HookOf(&runner.Hook{Token: "t", RunID: "r", CreatedAt: t0}, &schemas.HookAsk{Message: "m", Schema: json.RawMessage(`{}`)}),
		"workflow":   wire.WorkflowOf(&catalog.Workflow{ID: "w", Name: "n", Title: "t", Description: "d", Rev: 1, Definition: json.RawMessage(`{}`), LatestVersion: 1, Published: true, CreatedAt: t0, UpdatedAt: t0}, "u"),
		"connection": wire.ConnectionOf(&catalog.Connection{ID: "i", Name: "n", Type: "t", Header: "h", Username: "u", Hosts: []string{"h"}, CreatedAt: t0}),
		"version":    wire.VersionOf(&catalog.Version{WorkflowID: "w", Version: 1, Definition: json.RawMessage(`{}`), Hash: "h", PublishedAt: t0}),
		"token":      wire.TokenOf(&auth.Token{ID: "i", Name: "n", Scopes: auth.AdminScopes(), ExpiresAt: &t0, Audience: "a", CreatedAt: t0}),
		"newToken":   wire.NewTokenOf(&auth.Token{ID: "i", Name: "n", Scopes: auth.AdminScopes(), ExpiresAt: &t0}, "s"),
		"key":        wire.KeyOf(&idempotency.Record{Key: "k", State: idempotency.StateDone, Method: "m", Path: "p", Status: 1, RunID: "r", CreatedAt: t0, ExpiresAt: t0}),
		"grant":      wire.GrantOf(&oauth.Grant{ID: "i", ClientID: "c", ClientName: "n", PrincipalID: "p", PrincipalName: "pn", Scope: "s", CreatedAt: t0, RefreshExpiresAt: t0, TokenIDs: []string{"t"}, Issued: 1}),
	} {
		rv := reflect.Indirect(reflect.ValueOf(v))
		for i := range rv.NumField() {
			if f := rv.Type().Field(i).Name; name == "step" && f == "Counts" {
				continue // set by RunOf past runner.MaxListedRecords: TestRunOfPastMaxListedRecords
			}
			require.False(t, rv.Field(i).IsZero(), "%s: field %s not mapped", name, rv.Type().Field(i).Name)
		}
	}
}

// TestRunsOf checks a list shows large outputs truncated and an empty list as [].
func TestRunsOf(t *testing.T) {
	t.Parallel()
	big := json.RawMessage(`"` + strings.Repeat("x", runner.MaxListedOutputBytes) + `"`)
	run := &runner.Run{ID: "r", Output: big, Steps: []*runner.StepRecord{{ID: "s", Output: big}}}

	listed := wire.RunsOf([]*runner.Run{run}, true)[0]
	marker := fmt.Sprintf(`{"truncated":true,"bytes":%d}`, len(big))
	require.JSONEq(t, marker, string(listed.Output))
	require.JSONEq(t, marker, string(listed.Steps[0].Output))
	require.Equal(t, big, run.Output, "the record is not changed")

	require.Equal(t, big, wire.RunsOf([]*runner.Run{run}, false)[0].Output)
	empty, err := json.Marshal(wire.RunsOf(nil, false))
	require.NoError(t, err)
	require.Equal(t, "[]", string(empty))
}

// TestRunOfPastMaxListedRecords: past runner.MaxListedRecords records a run's view lists
// its top-level records, each with the counts of the records under it.
func TestRunOfPastMaxListedRecords(t *testing.T) {
	t.Parallel()
	run := &runner.Run{ID: "r", Steps: []*runner.StepRecord{{ID: "each", Status: runner.StepRunning}, {ID: "done"}}}
	statuses := []runner.StepStatus{runner.StepCompleted, runner.StepFailed, runner.StepRunning, runner.StepWaiting}
	for i := range runner.MaxListedRecords {
		run.Steps = append(run.Steps, &runner.StepRecord{ID: "x", Path: fmt.Sprintf("each/%d/x", i), Status: statuses[i%4]})
	}
	v := wire.RunOf(run)
	require.Len(t, v.Steps, 2)
	n := runner.MaxListedRecords / 4
	require.Equal(t, &wire.StepCounts{Total: runner.MaxListedRecords, Completed: n, Failed: n, Running: n, Waiting: n}, v.Steps[0].Counts)
	require.Nil(t, v.Steps[1].Counts)
	require.Equal(t, "done", v.Steps[1].Path)

	run.Steps = run.Steps[:runner.MaxListedRecords]
	require.Len(t, wire.RunOf(run).Steps, runner.MaxListedRecords, "at the bound every record is listed")
}
