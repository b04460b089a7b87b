// Package problem is the error vocabulary both faces share: the SPEC §3 codes, the one
// classification of an error into what a client may see (status, code, message, details),
// and the advice an agent gets on what to do next. REST (api), MCP (mcpserver) and the
// console each write it in their own envelope.
package problem

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/catalog"
	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/oauth"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/schemas"
)

// Error codes of the SPEC §3 envelope.
const (
	CodeValidation   = "VALIDATION_ERROR"
	CodeUnauthorized = "UNAUTHORIZED"
	CodeForbidden    = "FORBIDDEN"
	CodeNotFound     = "NOT_FOUND"
	CodeConflict     = "CONFLICT"
	CodeTooLarge     = "PAYLOAD_TOO_LARGE"
	CodeRateLimited  = "RATE_LIMITED"
	CodeInternal     = "INTERNAL"
	CodeUnavailable  = "UNAVAILABLE"
	// CodeMethodNotAllowed is a 405: the path exists, the method does not (SPEC §3 names
	// no code for it; the answer also carries Allow).
	CodeMethodNotAllowed = "METHOD_NOT_ALLOWED"
)

// Error is an error with its HTTP status and envelope code.
type Error struct {
	Status  int
	Code    string
	Message string
	Details []schemas.Problem
	// RetryAfter, when set, goes out as the Retry-After header (whole seconds, ≥ 1).
	RetryAfter time.Duration
}

func (e *Error) Error() string { return e.Message }

// New returns the error with status, code and message.
func New(status int, code, msg string) *Error {
	return &Error{Status: status, Code: code, Message: msg}
}

// problemsOf returns the problems carried by a validation-style error.
func problemsOf(err error) ([]schemas.Problem, bool) {
	var ve *schemas.ValidationError
	if errors.As(err, &ve) {
		return ve.Problems, true
	}
	var de *schemas.DecodeError
	if errors.As(err, &de) {
		return []schemas.Problem{{Path: de.Path, Message: de.Message}}, true
	}
	var ie *runner.InputError
	if errors.As(err, &ie) {
		return ie.Problems, true
	}
	return nil, false
}

// Classify maps an error to the status, code and message a client may see. It is the one
// mapping of the SPEC's codes, used by REST, MCP tool results and the console alike; ok is
// false for an error that is not the client's to see (a 500).
func Classify(err error) (e *Error, ok bool) {
	if errors.As(err, &e) {
		return e, true
	}
	if problems, ok := problemsOf(err); ok {
		return &Error{Status: http.StatusBadRequest, Code: CodeValidation, Message: err.Error(), Details: problems}, true
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return New(http.StatusRequestEntityTooLarge, CodeTooLarge, "request body is larger than "+strconv.FormatInt(mbe.Limit, 10)+" bytes"), true
	}
	var le *idempotency.LimitError
	if errors.As(err, &le) {
		e := New(http.StatusTooManyRequests, CodeRateLimited, err.Error())
		e.RetryAfter = max(time.Second, le.RetryAfter)
		return e, true
	}
	if errors.Is(err, runner.ErrTooManyWaits) {
		e := New(http.StatusTooManyRequests, CodeRateLimited, err.Error())
		e.RetryAfter = time.Second
		return e, true
	}
	for _, r := range rules {
		if errors.Is(err, r.target) {
			return New(r.status, r.code, err.Error()), true
		}
	}
	return nil, false
}

// rules maps the sentinel errors to their status and code.
var rules = []struct {
	target error
	status int
	code   string
}{
	{auth.ErrUnauthorized, http.StatusUnauthorized, CodeUnauthorized},
	{auth.ErrForbidden, http.StatusForbidden, CodeForbidden},
	{oauth.ErrNotFound, http.StatusNotFound, CodeNotFound},
	{auth.ErrScopeNotHeld, http.StatusForbidden, CodeForbidden},
	{auth.ErrInvalidName, http.StatusBadRequest, CodeValidation},
	{auth.ErrInvalidScope, http.StatusBadRequest, CodeValidation},
	{auth.ErrInvalidExpiry, http.StatusBadRequest, CodeValidation},
	{idempotency.ErrInvalidKey, http.StatusBadRequest, CodeValidation},
	{idempotency.ErrKeyMismatch, http.StatusUnprocessableEntity, CodeValidation},
	{idempotency.ErrInProgress, http.StatusConflict, CodeConflict},
	{idempotency.ErrAnswerNotKept, http.StatusConflict, CodeConflict},
	{catalog.ErrInvalidCursor, http.StatusBadRequest, CodeValidation},
	{runner.ErrInvalidCursor, http.StatusBadRequest, CodeValidation},
	{idempotency.ErrInvalidCursor, http.StatusBadRequest, CodeValidation},
	{idempotency.ErrNotFound, http.StatusNotFound, CodeNotFound},
	{catalog.ErrNotFound, http.StatusNotFound, CodeNotFound},
	{auth.ErrNotFound, http.StatusNotFound, CodeNotFound},
	{runner.ErrNotFound, http.StatusNotFound, CodeNotFound},
	{runner.ErrWorkflowNotFound, http.StatusNotFound, CodeNotFound},
	{catalog.ErrConflict, http.StatusConflict, CodeConflict},
	{runner.ErrNotPublished, http.StatusConflict, CodeConflict},
	{runner.ErrFinished, http.StatusConflict, CodeConflict},
	{runner.ErrHookConflict, http.StatusConflict, CodeConflict},
	{catalog.ErrSecretsDisabled, http.StatusServiceUnavailable, CodeUnavailable},
}

// ForAgent is Classify with the message an agent acts on: what went wrong and what to do
// next, naming the MCP tools that help.
func ForAgent(err error) (*Error, bool) {
	e, ok := Classify(err)
	if !ok {
		return nil, false
	}
	out := *e
	for _, a := range advice {
		if errors.Is(err, a.err) {
			out.Message += ": " + a.text
			break
		}
	}
	var conflict *runner.TokenConflictError
	var limit *idempotency.LimitError
	switch {
	case errors.As(err, &conflict) && conflict.OwnerRunID == "": // a run the caller may not see (SPEC §6)
		out.Message = fmt.Sprintf("another run already holds the start token %q; call again with other arguments, or once that run has ended", conflict.Token)
	case errors.As(err, &conflict):
		out.Message = fmt.Sprintf("run %s already holds the start token %q; read it with gorunner_get_run", conflict.OwnerRunID, conflict.Token)
	case errors.As(err, &limit):
		out.Message = fmt.Sprintf("too many idempotency keys are kept for you; retry after %v, or call without idempotencyKey", e.RetryAfter)
	}
	return &out, true
}

// advice says what an agent should do next after an error it can act on.
var advice = []struct {
	err  error
	text string
}{
	{idempotency.ErrKeyMismatch, "this idempotencyKey was already used with other arguments (or another environment); use a new key, or repeat the first call's arguments exactly"},
	{idempotency.ErrInProgress, "a call with this idempotencyKey is still being answered; retry the same call in a moment"},
	{idempotency.ErrAnswerNotKept, "a call with this idempotencyKey already started a run but its answer was too large to keep; find the run with gorunner_list_runs"},
	{idempotency.ErrInvalidKey, "idempotencyKey must be 1 to 255 characters"},
	{runner.ErrWorkflowNotFound, "the workflow no longer exists; list the tools again"},
	{runner.ErrNotPublished, "the workflow has no published version any more; list the tools again"},
	{runner.ErrTooManyWaits, "call gorunner_get_run without waitSeconds, or wait for one of your other calls to answer"},
	{runner.ErrNotFound, "no such run, or no run waits on that hook token (it may not be registered yet: retry shortly); " +
		"runIds come from a workflow tool's answer or gorunner_list_runs, hook tokens from a waiting run's waitingOn.hook"},
	{runner.ErrFinished, "the run has already finished, so there is nothing to cancel; read its outcome with gorunner_get_run"},
	{catalog.ErrNotFound, "no workflow has that name or ID; workflow names are the tool names tools/list gives, or what gorunner_find_workflows finds"},
}
