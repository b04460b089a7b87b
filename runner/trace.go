package runner

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/gorunner/gorunner/internal/tracing"
)

// Tracer is Config.Tracer: nil when the engine does not trace.
func (e *Engine) Tracer() trace.Tracer { return e.cfg.Tracer }

// TraceAdmission starts the span of one admission by trigger (a Trigger type), the child
// of ctx's span: the caller's traceparent (tracing.Extract, tracing.WithParent), or the
// step span of a parent run's workflow step. A run admitted with the returned context
// keeps the span as its TraceParent, so that the spans of its step attempts are its
// children wherever they run. end ends the span with the run admitted or reused (nil:
// none) and the admission's error. Without Config.Tracer it returns ctx and an end that
// does nothing.
func (e *Engine) TraceAdmission(ctx context.Context, trigger string) (_ context.Context, end func(*Run, error)) {
	if e.cfg.Tracer == nil {
		return ctx, endNoAdmission
	}
	ctx, span := e.cfg.Tracer.Start(ctx, "admit", trace.WithAttributes(tracing.Trigger.String(trigger)))
	return ctx, func(r *Run, err error) { endAdmission(span, r, err) }
}

func endNoAdmission(*Run, error) {}

// endAdmission names the admission's span after its run's workflow and ends it. An error
// marks it failed without its text, which may quote the input.
func endAdmission(span trace.Span, r *Run, err error) {
	if r != nil {
		span.SetName("admit " + r.Workflow)
		span.SetAttributes(tracing.RunID.String(r.ID), tracing.Workflow.String(r.Workflow))
	}
	if err != nil {
		span.SetStatus(codes.Error, "admission refused")
	}
	span.End()
}

// traceParent is what a run admitted with ctx keeps as its TraceParent: the traceparent
// of ctx's span when the engine traces.
func (e *Engine) traceParent(ctx context.Context) string {
	if e.cfg.Tracer == nil {
		return ""
	}
	return tracing.TraceParent(ctx)
}

// attempt runs one attempt of step s (runAttempt), in a span of its own when the engine
// traces: the child of the run's admission span (Run.TraceParent), named after the step,
// with the run, the step's path, stepId, kind and attempt, and how the attempt left the
// step. The context the step's kind runs with carries it: an http step sends its
// traceparent.
func (x *execution) attempt(ctx context.Context, s *stepExec) flow {
	tracer := x.e.cfg.Tracer
	if tracer == nil {
		return x.runAttempt(ctx, s)
	}
	ctx, span := tracer.Start(tracing.WithParent(ctx, x.r.TraceParent), "step "+s.rec.ID, trace.WithAttributes(
		tracing.RunID.String(x.r.ID), tracing.Workflow.String(x.r.Workflow), tracing.StepPath.String(PathOf(s.rec)),
		tracing.StepID.String(s.rec.StepID), tracing.StepKind.String(s.kind.Name), tracing.Attempt.Int(s.rec.Attempts)))
	f := x.runAttempt(ctx, s)
	endAttempt(span, s.rec)
	return f
}

// endAttempt records the step's status and error code on an attempt's span and ends it.
func endAttempt(span trace.Span, rec *StepRecord) {
	attrs := []attribute.KeyValue{tracing.StepStatus.String(string(rec.Status))}
	if rec.Error != nil && rec.Status != StepCompleted {
		attrs = append(attrs, tracing.ErrorCode.String(rec.Error.Code))
		span.SetStatus(codes.Error, rec.Error.Code)
	}
	span.SetAttributes(attrs...)
	span.End()
}
