package api

import (
	"context"
	"errors"
	"log/slog"
	"math"
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
)

// ErrorBody is the error envelope: {"error": {...}}.
type ErrorBody struct {
	Error ErrorObject `json:"error"`
}

// ErrorObject describes one failed request.
type ErrorObject struct {
	Code    string            `json:"code"`
	Message string            `json:"message"`
	Details []schemas.Problem `json:"details,omitempty"`
}

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

func errorf(status int, code, msg string) *Error {
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
// mapping of the SPEC's codes, used by REST and by MCP tool results alike; ok is false for
// an error that is not the client's to see (a 500).
func Classify(err error) (e *Error, ok bool) {
	if errors.As(err, &e) {
		return e, true
	}
	if problems, ok := problemsOf(err); ok {
		return &Error{Status: http.StatusBadRequest, Code: CodeValidation, Message: err.Error(), Details: problems}, true
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return errorf(http.StatusRequestEntityTooLarge, CodeTooLarge, "request body is larger than "+strconv.FormatInt(mbe.Limit, 10)+" bytes"), true
	}
	var le *idempotency.LimitError
	if errors.As(err, &le) {
		e := errorf(http.StatusTooManyRequests, CodeRateLimited, err.Error())
		e.RetryAfter = max(time.Second, le.RetryAfter)
		return e, true
	}
	if errors.Is(err, runner.ErrTooManyWaits) {
		e := errorf(http.StatusTooManyRequests, CodeRateLimited, err.Error())
		e.RetryAfter = time.Second
		return e, true
	}
	type rule struct {
		target error
		status int
		code   string
	}
	for _, r := range []rule{
		{auth.ErrUnauthorized, http.StatusUnauthorized, CodeUnauthorized},
		{auth.ErrForbidden, http.StatusForbidden, CodeForbidden},
		{oauth.ErrForbidden, http.StatusForbidden, CodeForbidden},
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
	} {
		if errors.Is(err, r.target) {
			return errorf(r.status, r.code, err.Error()), true
		}
	}
	return nil, false
}

// writeError answers with the envelope for err. Unknown errors are 500: logged with the
// request ID, their text never sent.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	e, ok := Classify(err)
	if !ok {
		s.log.ErrorContext(r.Context(), "request failed", slog.String("method", r.Method), slog.String("route", routeOf(r)), slog.Any("error", err))
		e = s.internal(r.Context())
	}
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(e.RetryAfter.Seconds()))))
	}
	writeJSON(w, e.Status, ErrorBody{Error: ErrorObject{Code: e.Code, Message: e.Message, Details: e.Details}})
}

// storeCheckTimeout bounds the store check that tells an outage from a bug.
const storeCheckTimeout = 500 * time.Millisecond

// internal is the answer to an unexpected error: 503 UNAVAILABLE with Retry-After when the
// store cannot be reached (the client should retry; nothing was half done, since every
// change is one store transaction), else 500 INTERNAL.
func (s *Server) internal(ctx context.Context) *Error {
	if s.cfg.Ready != nil {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeCheckTimeout)
		defer cancel()
		if s.cfg.Ready(ctx) != nil {
			e := errorf(http.StatusServiceUnavailable, CodeUnavailable, "the store cannot be reached; retry shortly")
			e.RetryAfter = time.Second
			return e
		}
	}
	return errorf(http.StatusInternalServerError, CodeInternal, "internal error; the server log has the details")
}
