package api

import (
	"context"
	"errors"
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

// storeCheckTimeout bounds the store check that tells an outage from a bug.
const storeCheckTimeout = 500 * time.Millisecond

// internal is the answer to an unexpected error err: 503 UNAVAILABLE with Retry-After when
// the store could not be reached (the client should retry; nothing was half done, since
// every change is one store transaction), else 500 INTERNAL. An error the store marked
// store.ErrUnreachable (a dial refused, a connection cut) is taken for that whatever a
// check of the store says after it: the store may be back by then, as when it restarts.
// Any other network error (the client's own connection, an HTTP step's call) is not the
// store's.
func (s *Server) internal(ctx context.Context, err error) *problem.Error {
	if errors.Is(err, store.ErrUnreachable) || s.storeDown(ctx) {
		e := problem.New(http.StatusServiceUnavailable, problem.CodeUnavailable, "the store cannot be reached; retry shortly")
		e.RetryAfter = time.Second
		return e
	}
	return problem.New(http.StatusInternalServerError, problem.CodeInternal, "internal error; the server log has the details")
}

// storeDown checks the store (Config.Ready), within storeCheckTimeout.
func (s *Server) storeDown(ctx context.Context) bool {
	if s.cfg.Ready == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeCheckTimeout)
	defer cancel()
	return s.cfg.Ready(ctx) != nil
}
