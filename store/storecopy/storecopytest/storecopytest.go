// Package storecopytest is the conformance suite of storecopy.Store: a store filled
// through its contracts with a record of every kind is copied into another, possibly of
// another kind, and everything reads back equal, through the contracts and as records.
package storecopytest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/catalog"
	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/oauth"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/store/storecopy"
)

// Store is a backend with every contract a copy moves the records of, a copy's source.
type Store interface {
	storecopy.Source
	catalog.Store
	auth.Store
	idempotency.Store
	runner.Store
	oauth.Store
}

// TargetStore is a Store a copy can also write into.
type TargetStore interface {
	Store
	storecopy.Target
}

// Opener opens a fresh, empty, isolated store, closed when t ends.
type Opener func(t *testing.T) Store

// TargetOpener opens a fresh, empty, isolated store to copy into, closed when t ends.
type TargetOpener func(t *testing.T) TargetStore

// Run fills a store from `from` with a record of every kind, copies it into one from
// `to`, and checks that both read the same; then that a second copy into it is refused.
func Run(t *testing.T, from Opener, to TargetOpener) {
	ctx := context.Background()
	src, dst := from(t), to(t)
	f := fill(t, src)
	require.NoError(t, storecopy.Copy(ctx, src, dst, nopProgress{}))
	requireSameRecords(t, src, dst)
	requireSameReads(t, f, src, dst)
	err := storecopy.Copy(ctx, src, dst, nopProgress{})
	require.ErrorIs(t, err, storecopy.ErrNotEmpty)
	require.ErrorContains(t, err, "workflows")
}

type nopProgress struct{}

func (nopProgress) Start(int64)                   {}
func (nopProgress) Advance(storecopy.Kind, int64) {}

// filled names what fill wrote.
type filled struct {
	workflowID, deletedID, digest string
	connection, token, scope, key string
	waitingRun, endedRun          string
	hookEnv, hookToken            string
	client, grant, grantToken     string
	now                           time.Time
}

// base is the time of everything fill writes: an hour ahead, so that what Redis keeps only
// until a record expires (codes, kept answers) is still there, with nanoseconds, which
// every store keeps.
var base = time.Now().UTC().Add(time.Hour).Truncate(time.Second).Add(789_123_456)

func fill(t *testing.T, s Store) filled {
	ctx := context.Background()
	f := filled{workflowID: "wf-alpha", deletedID: "wf-gone", digest: "digest-alpha", connection: "conn-1",
		token: "tok-1", scope: "p:alice", key: "key-1", waitingRun: "run-waiting", endedRun: "run-ended",
		hookEnv: "production", hookToken: "approve-1", client: "client-1", grant: "grant-1", grantToken: "tok-grant", now: base}
	fillCatalog(t, s, f)
	exp := base.Add(24 * time.Hour)
	scopes, err := auth.ParseScopeList("runs:read workflows:write")
	require.NoError(t, err)
	require.NoError(t, s.CreateToken(ctx, &auth.Token{ID: f.token, Name: "ci", Hash: []byte("hash-of-tok-1"), Scopes: scopes, ExpiresAt: &exp, Audience: "https://gr.example", CreatedAt: base}))
	require.NoError(t, s.CreateToken(ctx, &auth.Token{ID: f.grantToken, Name: "oauth", Hash: []byte("hash-of-grant"), Scopes: scopes, CreatedAt: base}))
	fillRuns(t, s, f)
	fillOAuth(t, s, f)
	return f
}

func fillCatalog(t *testing.T, s Store, f filled) {
	ctx := context.Background()
	for _, w := range []*catalog.Workflow{
		{ID: f.workflowID, Name: "alpha", Title: "Alpha", Rev: 1, Definition: json.RawMessage(`{"name":"alpha","steps":[]}`),
			WebhookDigest: f.digest, WebhookSealed: []byte("sealed-alpha"), CreatedAt: base, UpdatedAt: base},
		{ID: f.deletedID, Name: "gone", Rev: 1, Definition: json.RawMessage(`{"name":"gone"}`),
			WebhookDigest: "digest-gone", WebhookSealed: []byte("sealed-gone"), CreatedAt: base, UpdatedAt: base},
	} {
		require.NoError(t, s.CreateWorkflow(ctx, w))
		_, _, err := s.Publish(ctx, w.ID, "hash-"+w.ID, auth.Principal{ID: "alice", Scopes: auth.AdminScopes()}, base.Add(time.Second))
		require.NoError(t, err)
	}
	_, err := s.UpdateDraft(ctx, f.workflowID, &catalog.Workflow{Name: "alpha", Title: "Alpha 2", Definition: json.RawMessage(`{"name":"alpha","title":"Alpha 2"}`)}, 0, base.Add(2*time.Second))
	require.NoError(t, err)
	require.NoError(t, s.DeleteWorkflow(ctx, f.deletedID, base.Add(3*time.Second)))
	require.NoError(t, s.CreateConnection(ctx, &catalog.Connection{ID: f.connection, Name: "stripe", Type: "bearer",
		Hosts: []string{"api.stripe.com"}, Sealed: []byte("sealed-secret"), CreatedAt: base}))
}

// traceParent is the waiting run's trace context (runner.Run.TraceParent).
const traceParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

func fillRuns(t *testing.T, s Store, f filled) {
	ctx := context.Background()
	started := base.Add(time.Second)
	answer := &idempotency.Record{Scope: f.scope, Key: f.key, Fingerprint: "fp", Method: http.MethodPost,
		Path: "/api/workflows/alpha/run", RunID: f.waitingRun, State: idempotency.StateDone, Status: http.StatusAccepted,
		Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"data":{"id":"run-waiting"}}`),
		CreatedAt: base, ExpiresAt: base.Add(48 * time.Hour)}
	claim := idempotency.ClaimParams{Scope: f.scope, Key: f.key, Fingerprint: "fp", Method: http.MethodPost,
		Path: answer.Path, Now: base, LockTTL: time.Minute}
	run := &runner.Run{ID: f.waitingRun, WorkflowID: f.workflowID, Workflow: "alpha", Version: 1, Environment: f.hookEnv,
		Status: runner.StatusRunning, Input: json.RawMessage(`{"order":7}`), CreatedAt: base, StartedAt: &started,
		WakeAt: base, StartedBy: "alice", ActsFor: runner.Authority{{ID: "alice", Scopes: auth.AdminScopes()}},
		Concurrency: &runner.Concurrency{Key: "customer-7", Limit: 2}, TraceParent: traceParent}
	res, err := s.CreateRun(ctx, runner.CreateRunParams{Run: run, Owner: "worker-1", LeaseUntil: base.Add(time.Hour),
		Key: &idempotency.KeyWrite{Claim: claim, Answer: answer}})
	require.NoError(t, err)
	require.Equal(t, idempotency.Claimed, res.Outcome)
	run.Status, run.WaitingOn = runner.StatusWaiting, &runner.WaitingOn{Hook: f.hookToken}
	run.Steps = []*runner.StepRecord{
		{ID: "charge", StepID: "sid-1", Status: runner.StepCompleted, Attempts: 2, Output: json.RawMessage(`{"ok":true}`), StartedAt: &started, FinishedAt: &started},
		{ID: "approve", StepID: "sid-2", Status: runner.StepWaiting, Attempts: 1, StartedAt: &started, State: json.RawMessage(`{"asked":1}`)},
	}
	require.NoError(t, s.SaveRun(ctx, res.Lease, run, runner.SaveOptions{}))
	require.NoError(t, s.ClaimToken(ctx, &runner.Hook{Environment: f.hookEnv, Token: f.hookToken, RunID: f.waitingRun, CreatedAt: base}))
	_, err = s.EnqueuePayload(ctx, f.hookEnv, f.hookToken, json.RawMessage(`{"approved":true}`), base.Add(time.Minute))
	require.NoError(t, err)

	finished := base.Add(2 * time.Second)
	ended := &runner.Run{ID: f.endedRun, WorkflowID: f.workflowID, Workflow: "alpha", Version: 1, Environment: "test",
		Status: runner.StatusCompleted, Input: json.RawMessage(`{}`), Output: json.RawMessage(`{"done":1}`), CreatedAt: base,
		StartedAt: &started, FinishedAt: &finished, Steps: []*runner.StepRecord{
			{ID: "only", StepID: "sid-3", Status: runner.StepCompleted, Attempts: 1, Output: json.RawMessage(`"x<y"`), StartedAt: &started, FinishedAt: &finished},
		}}
	_, err = s.CreateRun(ctx, runner.CreateRunParams{Run: ended})
	require.NoError(t, err)
}

func fillOAuth(t *testing.T, s Store, f filled) {
	ctx := context.Background()
	require.NoError(t, s.CreateClient(ctx, &oauth.Client{ID: f.client, Name: "Claude", RedirectURIs: []string{"https://claude.ai/cb"},
		GrantTypes: []string{"authorization_code", "refresh_token"}, CreatedAt: base}))
	require.NoError(t, s.CreateCode(ctx, &oauth.Code{Hash: []byte("code-hash"), ClientID: f.client, ClientName: "Claude",
		RedirectURI: "https://claude.ai/cb", Challenge: "chal", Scope: "runs:read", PrincipalID: "alice", PrincipalName: "Alice",
		ExpiresAt: base.Add(10 * time.Minute)}))
	require.NoError(t, s.CreateGrant(ctx, &oauth.Grant{ID: f.grant, ClientID: f.client, ClientName: "Claude", PrincipalID: "alice",
		PrincipalName: "Alice", Scope: "runs:read", CreatedAt: base, RefreshHash: []byte("refresh-hash"),
		RefreshExpiresAt: base.Add(30 * 24 * time.Hour), TokenIDs: []string{f.grantToken}}))
	require.NoError(t, s.CreateSignInCode(ctx, &oauth.SignInCode{Hash: []byte("signin-hash"), PrincipalID: "alice",
		PrincipalName: "Alice", Scope: "admin", ExpiresAt: base.Add(time.Minute)}))
}

// requireSameRecords checks that both stores export the same records of every kind, and
// that the source holds some of each: the suite's data covers every kind.
func requireSameRecords(t *testing.T, src Store, dst TargetStore) {
	for _, tb := range storecopy.Tables {
		want, got := dump(t, src, tb), dump(t, dst, tb)
		require.NotEmpty(t, want, "the suite writes no %s", tb.Kind)
		require.Equal(t, want, got, "%s", tb.Kind)
	}
}

// dump is every record of t's kind in s, a line each in key order, text and bytes alike.
func dump(t *testing.T, s Store, tb storecopy.Table) []string {
	var lines []string
	err := s.ExportRecords(context.Background(), tb.Kind, 2, func(batch []storecopy.Record) error {
		require.LessOrEqual(t, len(batch), 2)
		for _, r := range batch {
			lines = append(lines, line(r))
		}
		return nil
	})
	require.NoError(t, err)
	slices.Sort(lines)
	return lines
}

// line writes r's fields in name order, as a store of any kind holds them: a field at its
// zero (0, "", nil) as absent, decimal text (Redis's numbers and times) as its number.
func line(r storecopy.Record) string {
	names := make([]string, 0, len(r.Fields))
	for n := range r.Fields {
		names = append(names, n)
	}
	slices.Sort(names)
	var b strings.Builder
	for _, n := range names {
		if v := canonical(r.Fields[n]); v != nil {
			fmt.Fprintf(&b, "%s=%#v ", n, v)
		}
	}
	return b.String()
}

func canonical(v any) any {
	if bs, ok := v.([]byte); ok {
		v = string(bs)
	}
	if s, ok := v.(string); ok {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			v = n
		}
	}
	if v == "" || v == int64(0) {
		return nil
	}
	return v
}

// requireSameReads checks that what the contracts read of f is the same in both stores.
func requireSameReads(t *testing.T, f filled, src Store, dst TargetStore) {
	ctx := context.Background()
	same := func(name string, read func(s Store) (any, error)) {
		t.Helper()
		want, err := read(src)
		require.NoError(t, err, name)
		got, err := read(dst)
		require.NoError(t, err, name)
		require.Equal(t, want, got, name)
	}
	same("workflow", func(s Store) (any, error) { return s.GetWorkflow(ctx, "alpha") })
	same("webhook", func(s Store) (any, error) { return s.GetWorkflowByWebhook(ctx, f.digest) })
	same("versions", func(s Store) (any, error) { return s.ListVersions(ctx, f.workflowID) })
	same("deleted version", func(s Store) (any, error) { return s.GetVersion(ctx, f.deletedID, 1) })
	same("catalog version", func(s Store) (any, error) { return s.CatalogVersion(ctx) })
	same("connection", func(s Store) (any, error) { return s.GetConnection(ctx, "stripe") })
	same("token", func(s Store) (any, error) { return s.TokenByHash(ctx, []byte("hash-of-tok-1")) })
	same("tokens", func(s Store) (any, error) { return s.ListTokens(ctx) })
	same("key", func(s Store) (any, error) { return s.Get(ctx, f.scope, f.key, f.now) })
	same("waiting run", func(s Store) (any, error) { return s.GetRun(ctx, f.waitingRun) })
	same("ended run", func(s Store) (any, error) { return s.GetRun(ctx, f.endedRun) })
	same("queue", func(s Store) (any, error) {
		waiting, err := s.GetRun(ctx, f.waitingRun) // active, so it holds a slot of its key
		if err != nil {
			return nil, err
		}
		later := *waiting
		later.ID, later.Status, later.CreatedAt = "run-later", runner.StatusQueued, waiting.CreatedAt.Add(time.Hour)
		return s.QueuePlace(ctx, &later)
	})
	same("hook", func(s Store) (any, error) { return s.GetHook(ctx, f.hookEnv, f.hookToken) })
	same("client", func(s Store) (any, error) { return s.ClientByID(ctx, f.client) })
	same("grant", func(s Store) (any, error) { return s.GrantByRefresh(ctx, []byte("refresh-hash")) })
	same("grant by token", func(s Store) (any, error) { return s.GrantByToken(ctx, f.grantToken) })
	same("payload", func(s Store) (any, error) { return s.NextPayload(ctx, f.waitingRun, f.hookEnv, f.hookToken) })
	same("sign-in code", func(s Store) (any, error) { return s.TakeSignInCode(ctx, []byte("signin-hash")) })
	same("code", func(s Store) (any, error) { return s.ExchangeCode(ctx, []byte("code-hash"), "grant-2") })
	run, err := dst.GetRun(ctx, f.waitingRun)
	require.NoError(t, err)
	require.True(t, run.CreatedAt.Equal(base), "times to the microsecond: %v", run.CreatedAt)
	require.Len(t, run.Steps, 2)
	require.Equal(t, traceParent, run.TraceParent, "a run keeps its trace context")
	requireNewPayloadsAfter(t, f, dst)
}

// requireNewPayloadsAfter checks that a payload queued on the target after the copy comes
// after the copied one: the target's sequence continues past the copied numbers.
func requireNewPayloadsAfter(t *testing.T, f filled, dst TargetStore) {
	ctx := context.Background()
	_, err := dst.EnqueuePayload(ctx, f.hookEnv, f.hookToken, json.RawMessage(`{"second":true}`), base.Add(2*time.Minute))
	require.NoError(t, err)
	p, err := dst.NextPayload(ctx, f.waitingRun, f.hookEnv, f.hookToken)
	require.NoError(t, err)
	require.True(t, bytes.Contains(p.Payload, []byte("approved")), "the copied payload comes first: %s", p.Payload)
}

// RequireEveryTable checks that every table a backend's schema holds, tables, is copied
// (storecopy.Tables) or derived (storecopy.Derived): a table added to a schema must say
// which, and a copied one needs a record in the suite's data.
func RequireEveryTable(t *testing.T, tables []string) {
	known := slices.Clone(storecopy.Derived)
	for _, tb := range storecopy.Tables {
		known = append(known, string(tb.Kind))
	}
	require.NotEmpty(t, tables)
	for _, name := range tables {
		require.Contains(t, known, name, "table %s is neither copied (storecopy.Tables) nor derived (storecopy.Derived)", name)
	}
}
