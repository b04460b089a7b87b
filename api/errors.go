package api

import (
	"context"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/gorunner/gorunner/problem"
	"github.com/gorunner/gorunner/schemas"
	"github.com/gorunner/gorunner/store"
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

// writeError answers with the envelope for err. Unknown errors are 500: logged with the
// request ID, their text never sent.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	e, ok := problem.Classify(err)
	if !ok {
		s.log.ErrorContext(r.Context(), "request failed", slog.String("method", r.Method), slog.String("route", routeOf(r)), slog.Any("error", err))
		e = s.internal(r.Context(), err)
	}
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(e.RetryAfter.Seconds()))))
	}
	writeJSON(w, e.Status, ErrorBody{Error: ErrorObject{Code: e.Code, Message: e.Message, Details: e.Details}})
}

// internal is the answer to an unexpected error err: 503 UNAVAILABLE with Retry-After when
// the store could not serve it (store.Unavailable: the client should retry; nothing was
// half done, since every change is one store transaction), else 500 INTERNAL.
func (s *Server) internal(ctx context.Context, err error) *problem.Error {
	if store.Unavailable(ctx, err, s.cfg.Ready) {
		e := problem.New(http.StatusServiceUnavailable, problem.CodeUnavailable, "the store cannot be reached; retry shortly")
		e.RetryAfter = time.Second
		return e
	}
	return problem.New(http.StatusInternalServerError, problem.CodeInternal, "internal error; the server log has the details")
}
