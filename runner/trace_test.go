package runner_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/gorunner/gorunner/internal/tracing"
	"github.com/gorunner/gorunner/runner"
)

// traced is a tracer provider whose spans the test reads, as they end.
type traced struct {
	exp *tracetest.InMemoryExporter
	tp  *sdktrace.TracerProvider
}

func newTraced(t *testing.T) *traced {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return &traced{exp: exp, tp: tp}
}

// await waits for n spans to have ended and returns them by name.
func (tr *traced) await(t *testing.T, n int) map[string]tracetest.SpanStub {
	t.Helper()
	require.Eventually(t, func() bool { return len(tr.exp.GetSpans()) >= n }, 10*time.Second, time.Millisecond)
	spans := tr.exp.GetSpans()
	require.Len(t, spans, n)
	byName := map[string]tracetest.SpanStub{}
	for _, s := range spans {
		byName[s.Name] = s
	}
	return byName
}

// caller is the context of a caller's span, as a traceparent header brings it.
func caller(t *testing.T) (context.Context, trace.SpanContext) {
	ctx, span := newTraced(t).tp.Tracer("caller").Start(context.Background(), "caller")
	return ctx, span.SpanContext()
}

// admit starts name as a surface does: in the admission's span.
func admit(t *testing.T, e *runner.Engine, ctx context.Context, name, input string) *runner.Run {
	ctx, end := e.TraceAdmission(ctx, runner.TriggerAPI)
	res, err := e.Submit(ctx, runner.SubmitParams{Workflow: name, Input: json.RawMessage(input)})
	end(res.Answered(), err)
	require.NoError(t, err)
	return res.Run
}

func attrs(s tracetest.SpanStub) map[string]any {
	m := map[string]any{}
	for _, kv := range s.Attributes {
		m[string(kv.Key)] = kv.Value.AsInterface()
	}
	return m
}

func TestTraceSpanTree(t *testing.T) {
	h := newHarness(t)
	h.creds = bearer{"payments": bearerToken("s3cret-token", "127.0.0.1")}
	tr := newTraced(t)
	e := h.engine(runner.Config{Tracer: tr.tp.Tracer(tracing.ScopeName)})
	srv := newRecorder(t)
	name := h.define(fmt.Sprintf(`
name: three
input: {type: object}
steps:
  - {id: first, set: "${{ input.secret }}"}
  - id: call
    http: {url: "%s/charge", connection: payments, headers: {X-Api-Key: "${{ input.secret }}"}}
  - {id: last, set: 1}
`, srv.URL))
	ctx, parent := caller(t)
	r := admit(t, e, ctx, name, `{"secret": "input-secret-42"}`)
	r = h.await(e, r.ID, runner.StatusCompleted)

	spans := tr.await(t, 4)
	ad := spans["admit three"]
	require.Equal(t, parent.TraceID(), ad.SpanContext.TraceID(), "the admission joins the caller's trace")
	require.Equal(t, parent.SpanID(), ad.Parent.SpanID(), "the admission is the child of the caller's span")
	require.Equal(t, map[string]any{"gorunner.trigger": "api", "gorunner.run.id": r.ID, "gorunner.workflow": "three"}, attrs(ad))
	for _, id := range []string{"first", "call", "last"} {
		s, ok := spans["step "+id]
		require.True(t, ok, "a span for step %s", id)
		require.Equal(t, parent.TraceID(), s.SpanContext.TraceID())
		require.Equal(t, ad.SpanContext.SpanID(), s.Parent.SpanID(), "step %s is a child of the admission", id)
		a := attrs(s)
		require.Equal(t, r.ID, a["gorunner.run.id"])
		require.Equal(t, "three", a["gorunner.workflow"])
		require.Equal(t, id, a["gorunner.step.path"])
		require.Equal(t, step(r, id).StepID, a["gorunner.step.id"])
		require.Equal(t, int64(1), a["gorunner.step.attempt"])
		require.Equal(t, "completed", a["gorunner.step.status"])
	}
	sent := srv.seen()[0].traceparent
	call := spans["step call"].SpanContext
	require.Equal(t, fmt.Sprintf("00-%s-%s-01", call.TraceID(), call.SpanID()), sent, "the http step sends its attempt's traceparent")

	stored, err := h.store.GetRun(context.Background(), r.ID)
	require.NoError(t, err)
	require.Equal(t, fmt.Sprintf("00-%s-%s-01", ad.SpanContext.TraceID(), ad.SpanContext.SpanID()), stored.TraceParent)

	dump, err := json.Marshal(tr.exp.GetSpans())
	require.NoError(t, err)
	for _, secret := range []string{"s3cret-token", "input-secret-42"} {
		require.NotContains(t, string(dump), secret, "no secret, input or header lands in a span")
	}
}

func TestTraceFailedAttempts(t *testing.T) {
	h := newHarness(t)
	tr := newTraced(t)
	e := h.engine(runner.Config{Tracer: tr.tp.Tracer(tracing.ScopeName)})
	srv := newRecorder(t, 503, 503)
	name := h.define(fmt.Sprintf(`
name: flaky
input: {type: object}
steps:
  - id: call
    http: {url: "%s"}
    retry: {maxAttempts: 2, initialInterval: 1ms, maxInterval: 2ms}
`, srv.URL))
	r := admit(t, e, context.Background(), name, `{}`)
	h.await(e, r.ID, runner.StatusFailed)
	var attempts []map[string]any
	require.Eventually(t, func() bool { return len(tr.exp.GetSpans()) == 3 }, 10*time.Second, time.Millisecond)
	for _, s := range tr.exp.GetSpans() {
		if s.Name == "step call" {
			attempts = append(attempts, attrs(s))
			require.Equal(t, "HTTP_ERROR", s.Status.Description)
		}
	}
	require.Len(t, attempts, 2, "a span per attempt")
	require.Equal(t, []any{int64(1), int64(2)}, []any{attempts[0]["gorunner.step.attempt"], attempts[1]["gorunner.step.attempt"]})
	require.Equal(t, "HTTP_ERROR", attempts[1]["gorunner.error.code"])
	require.Equal(t, "failed", attempts[1]["gorunner.step.status"])
}

func TestTraceContinuesOnAnotherEngine(t *testing.T) {
	h := newHarness(t)
	first := newTraced(t)
	a := h.engine(runner.Config{Tracer: first.tp.Tracer(tracing.ScopeName)})
	name := h.define(`
name: waits
input: {type: object}
steps:
  - {id: wait, hook: {token: "w:1"}}
  - {id: after, set: 1}
`)
	ctx, parent := caller(t)
	r := admit(t, a, ctx, name, `{}`)
	h.await(a, r.ID, runner.StatusWaiting)
	ad := first.await(t, 2)["admit waits"]
	require.NoError(t, a.Stop(context.Background()))

	second := newTraced(t)
	b := h.engine(runner.Config{Tracer: second.tp.Tracer(tracing.ScopeName)}, h.open())
	_, err := b.Resume(context.Background(), runner.EnvProduction, "w:1", json.RawMessage(`{}`))
	require.NoError(t, err)
	h.await(b, r.ID, runner.StatusCompleted)
	spans := second.await(t, 2) // the hook's attempt that takes the payload, and after
	for _, id := range []string{"wait", "after"} {
		s := spans["step "+id]
		require.Equal(t, parent.TraceID(), s.SpanContext.TraceID(), "step %s, worked by another engine, stays in the run's trace", id)
		require.Equal(t, ad.SpanContext.SpanID(), s.Parent.SpanID())
	}
}

func TestTraceOff(t *testing.T) {
	h := newHarness(t)
	e := h.engine(runner.Config{})
	srv := newRecorder(t)
	name := httpWorkflow(h, "plain", srv.URL, "")
	ctx, _ := caller(t)
	end := func() func(*runner.Run, error) {
		c, end := e.TraceAdmission(ctx, runner.TriggerAPI)
		require.Equal(t, ctx, c, "no span without a tracer")
		return end
	}()
	res, err := e.Submit(ctx, runner.SubmitParams{Workflow: name, Input: json.RawMessage(`{}`)})
	end(res.Answered(), err)
	require.NoError(t, err)
	r := h.await(e, res.Run.ID, runner.StatusCompleted)
	require.Empty(t, r.TraceParent, "an untraced admission keeps no trace context")
	require.Empty(t, srv.seen()[0].traceparent, "an untraced http step sends none, whatever its caller's")
	require.Nil(t, e.Tracer())
}

// BenchmarkTraces measures a 3-step set run admitted in its admission's span, engine only
// (endsUnwritten: no store write), so that what tracing adds is not hidden behind the
// store: off (no Tracer, as with no OTEL endpoint set) beside the OpenTelemetry no-op
// tracer installed (what a global no-op would cost) and the SDK exporting in batches to an
// exporter that drops them (tracing on, less the network).
func BenchmarkTraces(b *testing.B) {
	sdk := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	b.Cleanup(func() { _ = sdk.Shutdown(context.Background()) })
	for _, tc := range []struct {
		name   string
		tracer trace.Tracer
	}{
		{"off", nil},
		{"noop_tracer", noop.NewTracerProvider().Tracer(tracing.ScopeName)},
		{"sdk_batched", sdk.Tracer(tracing.ScopeName)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			h := newHarness(b)
			e := h.engine(runner.Config{Tracer: tc.tracer}, endsUnwritten{h.store})
			name := h.define(bench3Step)
			input := json.RawMessage(`{"n": 1}`)
			b.ReportAllocs()
			for b.Loop() {
				ctx, end := e.TraceAdmission(context.Background(), runner.TriggerAPI)
				res, err := e.Submit(ctx, runner.SubmitParams{Workflow: name, Input: input})
				if err != nil {
					b.Fatal(err)
				}
				end(res.Written, nil)
			}
		})
	}
}
