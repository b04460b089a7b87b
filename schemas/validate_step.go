package schemas

import (
	"errors"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/gorunner/gorunner/expression"
	"github.com/gorunner/gorunner/internal/names"
)

// httpMethods are the methods an http step may use, written in upper case.
var httpMethods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}

// MaxAttempts is the highest retry.maxAttempts a step may set.
const MaxAttempts = 100

// MaxHTTPTimeout is the longest timeout an http step may set: one attempt holds one of the
// engine's few workers for all of it (a sleep, a hook or a child run waits without one), so
// a slow-trickle server answering a longer one could take every worker for years. Work that
// takes longer belongs behind a callback (a hook) or a poll (sleep, then http).
const MaxHTTPTimeout = 15 * time.Minute

// step validates step s, found at pointer p, the i-th of its list.
func (v *validator) step(p string, s *Step, i int) {
	v.stepBody(p, s, i)
	v.onError(p+"/onError", s.OnError)
	if s.Compensate != nil {
		v.compensate(p+"/compensate", s.Compensate, i)
	}
	v.compound(p, s, i)
}

// stepBody validates what every step has, a compensation too: its kind, if, retry and the
// kind's fields, whose expressions read the steps before position i of the list.
func (v *validator) stepBody(p string, s *Step, i int) {
	v.kinds(p, s)
	if s.If != "" {
		v.template(p+"/if", s.If, i)
	}
	if s.Retry != nil {
		v.retry(p+"/retry", s.Retry)
	}
	if s.Set != nil {
		v.template(p+"/set", s.Set.Value, i)
	}
	if s.HTTP != nil {
		v.http(p+"/http", s.HTTP, i)
		v.httpTimeout(p+"/timeout", s)
	}
	if s.Hook != nil {
		v.hook(p+"/hook", s.Hook, i)
	}
	if s.Sleep != nil {
		v.sleep(p+"/sleep", s.Sleep, i)
	}
	if s.Run != nil {
		v.run(p+"/run", s.Run, i)
	}
	if s.Workflow != nil {
		v.workflow(p+"/workflow", s.Workflow, i)
	}
	if s.Fail != nil {
		v.required(p+"/fail/message", s.Fail.Message, i)
	}
	if s.MCP != nil {
		v.mcp(p+"/mcp", s.MCP, i)
		v.httpTimeout(p+"/timeout", s)
	}
}

func (v *validator) kinds(p string, s *Step) {
	kinds := s.Kinds()
	switch len(kinds) {
	case 0:
		v.add(p, "step has no kind: give it one of %s", strings.Join(kindNames(), ", "))
	case 1:
	default:
		v.add(p, "step has %d kinds (%s); exactly one is allowed", len(kinds), strings.Join(kinds, ", "))
	}
	for k := range s.Custom {
		if !v.opts.CustomKinds[k] {
			v.add(p+"/"+escapePointer(k), "unknown step kind %q", k)
		}
	}
}

func (v *validator) retry(p string, r *Retry) {
	if r.MaxAttempts < 0 || r.MaxAttempts > MaxAttempts {
		v.add(p+"/maxAttempts", "maxAttempts must be between 1 and %d", MaxAttempts)
	}
	if r.MaxInterval != 0 && r.MaxInterval < r.InitialInterval {
		v.add(p+"/maxInterval", "maxInterval (%s) must not be less than initialInterval (%s)",
			r.MaxInterval.Std(), r.InitialInterval.Std())
	}
	if r.BackoffCoefficient != 0 && r.BackoffCoefficient < 1 {
		v.add(p+"/backoffCoefficient", "backoffCoefficient must be at least 1")
	}
}

func (v *validator) http(p string, h *HTTPStep, i int) {
	if h.Method != "" && !slices.Contains(httpMethods, h.Method) {
		v.add(p+"/method", "method %q must be one of %s", h.Method, strings.Join(httpMethods, ", "))
	}
	if t := v.required(p+"/url", h.URL, i); t != nil && t.Static() {
		if u, err := url.Parse(h.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			v.add(p+"/url", "url %q must be an absolute http or https URL", h.URL)
		}
	}
	for k, val := range h.Headers {
		v.template(p+"/headers/"+escapePointer(k), val, i)
	}
	for k, val := range h.Query {
		v.template(p+"/query/"+escapePointer(k), val, i)
	}
	if h.Body != nil {
		v.template(p+"/body", h.Body, i)
	}
}

func (v *validator) httpTimeout(p string, s *Step) {
	if s.Timeout.Std() > MaxHTTPTimeout {
		v.add(p, "step %q: timeout %s is over %s, the longest one http attempt may take; for longer work, have the server call back a hook step",
			s.ID, s.Timeout, Duration(MaxHTTPTimeout))
	}
}

func (v *validator) hook(p string, h *HookStep, i int) {
	v.required(p+"/token", h.Token, i)
	v.onConflict(p+"/onConflict", h.OnConflict)
	if h.Payload != nil {
		v.template(p+"/payload", h.Payload, i)
	}
	if h.Ask != nil {
		v.ask(p+"/ask", h.Ask, i)
	}
}

func (v *validator) sleep(p string, s *SleepStep, i int) {
	switch {
	case s.Duration == 0 && s.Until == "":
		v.add(p, "sleep needs a duration or an until time")
	case s.Duration != 0 && s.Until != "":
		v.add(p, "sleep takes a duration or an until time, not both")
	case s.Until != "":
		t := v.template(p+"/until", s.Until, i)
		if t == nil || !t.Static() {
			return
		}
		until, err := time.Parse(time.RFC3339, s.Until)
		if err != nil {
			v.add(p+"/until", "until %q must be an RFC 3339 time such as 2030-01-02T15:04:05Z", s.Until)
		} else if err := CheckUntil(until, time.Now()); err != nil {
			v.add(p+"/until", "%v", err)
		}
	}
}

func (v *validator) run(p string, r *RunStep, i int) {
	switch r.Action {
	case RunActionStatus, RunActionResult, RunActionCancel:
		v.required(p+"/runId", r.RunID, i)
		if r.Token != "" {
			v.add(p+"/token", "token is only for action resume")
		}
		if r.Payload != nil {
			v.add(p+"/payload", "payload is only for action resume")
		}
	case RunActionResume:
		v.required(p+"/token", r.Token, i)
		if r.RunID != "" {
			v.add(p+"/runId", "runId is not used by action resume, which addresses a hook by token")
		}
		if r.Payload != nil {
			v.template(p+"/payload", r.Payload, i)
		}
	case "":
		v.add(p+"/action", "action is required: status, result, cancel or resume")
	default:
		v.add(p+"/action", "action %q must be one of status, result, cancel, resume", r.Action)
	}
}

func (v *validator) workflow(p string, w *WorkflowStep, i int) {
	if t := v.required(p+"/name", w.Name, i); t != nil && t.Static() && !names.Valid(w.Name) {
		v.add(p+"/name", "workflow name %q must match %s", w.Name, names.Pattern)
	}
	if w.Input != nil {
		v.template(p+"/input", w.Input, i)
	}
}

// required reports a missing string field, else compiles it as a template.
func (v *validator) required(path, s string, step int) *expression.Template {
	if s == "" {
		v.add(path, "%s is required", path[strings.LastIndexByte(path, '/')+1:])
		return nil
	}
	return v.template(path, s, step)
}

// template compiles val found at path, evaluated by step number step (len(steps) for the
// result), and checks that it reads only steps that ran before. It returns nil on errors.
func (v *validator) template(path string, val any, step int) *expression.Template {
	t := v.compile(path, val)
	if t == nil {
		return nil
	}
	for _, ref := range t.Refs() {
		v.ref(path, ref, step)
	}
	return t
}

// compile compiles val and reports a compile error at the path of the bad expression.
func (v *validator) compile(path string, val any) *expression.Template {
	t, err := expression.CompileWith(val, v.vars()...)
	if err == nil {
		return t
	}
	var ce *expression.CompileError
	if errors.As(err, &ce) {
		v.add(path+ce.Path, "%s", ce.Message())
	} else {
		v.add(path, "%v", err)
	}
	return nil
}
