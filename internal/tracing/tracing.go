// Package tracing exports GoRunner's OpenTelemetry traces over OTLP (SPEC §7), configured
// by the standard OTEL_* environment variables as the OpenTelemetry SDK reads them, and
// carries W3C trace context in and out: the traceparent of an HTTP request or of an MCP
// call's _meta, and the one a run keeps (runner.Run.TraceParent) so that its steps join
// its trace on whichever process works them.
//
// With no OTLP endpoint variable set, Setup builds nothing and returns a nil *Provider,
// whose Tracer is nil: the engine and the servers then start no span and read no header.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// ServiceName is the service.name traces carry unless OTEL_SERVICE_NAME (or
// OTEL_RESOURCE_ATTRIBUTES) names another.
const ServiceName = "gorunner"

// ScopeName is the instrumentation scope of GoRunner's spans.
const ScopeName = "github.com/gorunner/gorunner"

// Header is the W3C trace context header, and the MCP _meta key, that carries a
// traceparent.
const Header = "traceparent"

// Provider is the SDK's tracer provider, built by Setup; nil means tracing is off.
type Provider struct {
	sdk *sdktrace.TracerProvider
}

// Enabled reports whether the environment (read by getenv) asks for traces: an OTLP
// endpoint variable is set, the SDK is not disabled (OTEL_SDK_DISABLED=true) and the
// traces exporter is not "none".
func Enabled(getenv func(string) string) bool {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") || getenv("OTEL_TRACES_EXPORTER") == "none" {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Setup builds the tracer provider from the process's environment when Enabled, exporting
// in batches over OTLP, and nil when not. version is service.version. The exporter, the
// batching, the sampler and the resource read the OTEL_* variables the SDK reads:
// OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT, _HEADERS, _TIMEOUT, _COMPRESSION, _CERTIFICATE,
// _PROTOCOL (http/protobuf, the default, or grpc); OTEL_BSP_*; OTEL_TRACES_SAMPLER(_ARG);
// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES.
func Setup(ctx context.Context, version string) (*Provider, error) {
	if !Enabled(os.Getenv) {
		return nil, nil
	}
	exp, err := exporter(ctx, os.Getenv)
	if err != nil {
		return nil, err
	}
	res, err := resource.Merge(resource.NewSchemaless(semconv.ServiceName(ServiceName), semconv.ServiceVersion(version)),
		resource.Environment())
	if err != nil {
		return nil, errors.Join(fmt.Errorf("reading OTEL_RESOURCE_ATTRIBUTES: %w", err), exp.Shutdown(ctx))
	}
	return &Provider{sdk: sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))}, nil
}

// exporter is the OTLP exporter of the protocol the environment names:
// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL, else
// http/protobuf (the OTLP default). Any other protocol (http/json) is an error.
func exporter(ctx context.Context, getenv func(string) string) (*otlptrace.Exporter, error) {
	protocol := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if protocol == "" {
		protocol = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	var exp *otlptrace.Exporter
	var err error
	switch protocol {
	case "", "http/protobuf":
		exp, err = otlptracehttp.New(ctx)
	case "grpc":
		exp, err = otlptracegrpc.New(ctx)
	default:
		return nil, fmt.Errorf("OTLP protocol %q: GoRunner exports traces over http/protobuf or grpc", protocol)
	}
	if err != nil {
		return nil, fmt.Errorf("building the OTLP trace exporter (%s): %w", protocol, err)
	}
	return exp, nil
}

// Tracer is the provider's tracer of GoRunner's spans; nil when p is nil (tracing off).
func (p *Provider) Tracer() trace.Tracer {
	if p == nil {
		return nil
	}
	return p.sdk.Tracer(ScopeName)
}

// Shutdown exports the spans still batched and stops the exporter, within ctx; nil p is a
// no-op.
func (p *Provider) Shutdown(ctx context.Context) error {
	if p == nil {
		return nil
	}
	if err := p.sdk.Shutdown(ctx); err != nil {
		return fmt.Errorf("flushing traces: %w", err)
	}
	return nil
}

// propagator is the W3C trace context propagator: traceparent and tracestate.
var propagator = propagation.TraceContext{}

// Extract is ctx carrying the remote span context of h's traceparent as the parent of the
// spans started from it; ctx as it is when h has none (or an invalid one).
func Extract(ctx context.Context, h http.Header) context.Context {
	if h.Get(Header) == "" {
		return ctx
	}
	return propagator.Extract(ctx, propagation.HeaderCarrier(h))
}

// WithParent is ctx carrying traceparent (a W3C traceparent value, such as
// runner.Run.TraceParent or an MCP call's _meta.traceparent) as the parent of the spans
// started from it; ctx as it is for "" or an invalid value.
func WithParent(ctx context.Context, traceparent string) context.Context {
	if traceparent == "" {
		return ctx
	}
	return propagator.Extract(ctx, propagation.MapCarrier{Header: traceparent})
}

// TraceParent is the W3C traceparent of ctx's span, "" when ctx has no valid span context.
func TraceParent(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	propagator.Inject(ctx, c)
	return c[Header]
}

// Inject sets h's traceparent (and tracestate) to ctx's span, when ctx has a valid one.
func Inject(ctx context.Context, h http.Header) {
	if trace.SpanContextFromContext(ctx).IsValid() {
		propagator.Inject(ctx, propagation.HeaderCarrier(h))
	}
}

// Middleware puts the request's traceparent in its context (Extract), for the spans its
// handlers start; with tracer nil (tracing off) it is next itself.
func Middleware(tracer trace.Tracer) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if tracer == nil {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get(Header) != "" {
				r = r.WithContext(Extract(r.Context(), r.Header))
			}
			next.ServeHTTP(w, r)
		})
	}
}

// The attributes of GoRunner's spans. They name the run and the step only: never a run's
// input or output, a step's headers or a connection's secret.
const (
	// RunID is the run's ID, on admission and step spans.
	RunID = attribute.Key("gorunner.run.id")
	// Workflow is the run's workflow name.
	Workflow = attribute.Key("gorunner.workflow")
	// Trigger is what started the admission (runner.Trigger types).
	Trigger = attribute.Key("gorunner.trigger")
	// StepPath is the step record's path (docs/control-flow.md).
	StepPath = attribute.Key("gorunner.step.path")
	// StepID is the step invocation's stepId (the idempotency key of its effects).
	StepID = attribute.Key("gorunner.step.id")
	// StepKind is the step's kind (http, mcp, set, workflow, …).
	StepKind = attribute.Key("gorunner.step.kind")
	// Attempt is the attempt's number, from 1.
	Attempt = attribute.Key("gorunner.step.attempt")
	// StepStatus is the step record's status when the attempt ended.
	StepStatus = attribute.Key("gorunner.step.status")
	// ErrorCode is the step's error code (SPEC error codes) when the attempt failed.
	ErrorCode = attribute.Key("gorunner.error.code")
)
