package idempotency

import (
	"bytes"
	"context"
	"io"
	"net/http"
)

const (
	// HeaderKey is the request header that carries the key.
	HeaderKey = "Idempotency-Key"
	// HeaderReplayed, set to "true", marks a replayed answer.
	HeaderReplayed = "Idempotency-Replayed"
)

// Middleware puts POST requests that carry an Idempotency-Key header through Do; other
// requests go straight to the handler. scopeOf says whose the key is and under which
// Policy (ok false: the request goes through without the key). onError writes Do's errors
// (ErrInvalidKey, ErrKeyMismatch, …) and body read errors (*http.MaxBytesError) in the
// api's envelope. The handler's answer is buffered; a replay carries its status,
// Content-Type, Location and body, and the header Idempotency-Replayed: true.
func (s *Service) Middleware(
	scopeOf func(*http.Request) (scope string, policy Policy, ok bool),
	onError func(http.ResponseWriter, *http.Request, error),
) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			keys, hasKey := r.Header[HeaderKey]
			if r.Method != http.MethodPost || !hasKey {
				next.ServeHTTP(w, r)
				return
			}
			scope, policy, ok := scopeOf(r)
			if !ok {
				next.ServeHTTP(w, r)
				return
			}
			body, err := io.ReadAll(r.Body)
			if err != nil {
				onError(w, r, err)
				return
			}
			req := Request{Scope: scope, Key: keys[0], Method: r.Method, Path: r.URL.Path,
				Query: r.URL.Query(), Body: body, Policy: policy}
			resp, err := s.Do(r.Context(), req, func(ctx context.Context) (*Response, error) {
				r2 := r.WithContext(ctx)
				r2.Body = io.NopCloser(bytes.NewReader(body))
				rec := &recorder{header: http.Header{}}
				next.ServeHTTP(rec, r2)
				return rec.response(), nil
			})
			if err != nil {
				onError(w, r, err)
				return
			}
			WriteResponse(w, resp)
		})
	}
}

// WriteResponse writes an answer Do or Admit gave: its header, status and body, and
// Idempotency-Replayed: true on a replay.
func WriteResponse(w http.ResponseWriter, resp *Response) {
	for name, values := range resp.Header {
		w.Header()[name] = values
	}
	if resp.Replayed {
		w.Header().Set(HeaderReplayed, "true")
	}
	w.WriteHeader(resp.Status)
	_, _ = w.Write(resp.Body)
}

// Capture is the answer write writes, buffered, for a caller to keep: a surface's error
// envelope rendered as an answer (webhooks keep failures, SPEC §4 rule 10).
func Capture(write func(http.ResponseWriter)) *Response {
	rec := &recorder{header: http.Header{}}
	write(rec)
	return rec.response()
}

// SetRunID tells keyed replay that the answer being written to w names run runID, so
// that the key's record names it even when the body is too big to keep: the handlers
// that start or resume a run call it, and nothing parses an answer to find its run. On a
// writer that is not keyed replay's (no key was sent) it does nothing.
func SetRunID(w http.ResponseWriter, runID string) {
	for {
		switch v := w.(type) {
		case *recorder:
			v.runID = runID
			return
		case interface{ Unwrap() http.ResponseWriter }:
			w = v.Unwrap()
		default:
			return
		}
	}
}

// recorder buffers a handler's answer so that Do can keep it.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
	runID  string // SetRunID's
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(b)
}

// response is the recorded answer; a handler that wrote nothing answered 200.
func (r *recorder) response() *Response {
	r.WriteHeader(http.StatusOK)
	return &Response{Status: r.status, Header: r.header, Body: r.body.Bytes(), RunID: r.runID}
}
