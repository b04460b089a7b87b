package api

import (
	"bytes"
	"cmp"
	"errors"
	"net/http"
	"time"
	"unicode/utf8"
)

// Limits of the HTTP server NewHTTPServer builds (documented in docs/limits.md).
const (
	// ReadHeaderTimeout bounds reading a request's headers.
	ReadHeaderTimeout = 10 * time.Second
	// ReadTimeout bounds reading a whole request, body included: a body trickling in
	// slower is cut off.
	ReadTimeout = 30 * time.Second
	// WriteTimeout bounds writing an answer, except streaming and waiting answers (/mcp,
	// ?wait=, webhooks), which clear it once their request is read.
	WriteTimeout = 60 * time.Second
	// IdleTimeout is how long a keep-alive connection may stay idle between requests.
	IdleTimeout = 60 * time.Second
	// MaxHeaderBytes bounds a request's header lines.
	MaxHeaderBytes = 64 << 10
)

// HTTPLimits are the HTTP server's timeouts and sizes; zero fields take the constants
// above. Tests shorten them.
type HTTPLimits struct {
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	MaxHeaderBytes    int
}

// NewHTTPServer is the http.Server GoRunner serves h with, under limits (nil: the
// defaults).
func NewHTTPServer(h http.Handler, limits *HTTPLimits) *http.Server {
	l := HTTPLimits{}
	if limits != nil {
		l = *limits
	}
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: cmp.Or(l.ReadHeaderTimeout, ReadHeaderTimeout),
		ReadTimeout:       cmp.Or(l.ReadTimeout, ReadTimeout),
		WriteTimeout:      cmp.Or(l.WriteTimeout, WriteTimeout),
		IdleTimeout:       cmp.Or(l.IdleTimeout, IdleTimeout),
		MaxHeaderBytes:    cmp.Or(l.MaxHeaderBytes, MaxHeaderBytes),
	}
}

// bufferBody reads the whole request body (under the server's read deadline and
// limits.MaxBodyBytes) before the handler runs, so that nothing after it reads from a slow
// client.
func bufferBody(r *http.Request) ([]byte, error) {
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(r.Body); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, err
		}
		return nil, badRequest("", "reading the request body failed: "+err.Error())
	}
	r.Body.Close()
	r.Body = readCloser{bytes.NewReader(buf.Bytes())}
	return buf.Bytes(), nil
}

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }

// checkBody is the REST face's one UTF-8 check: a body that is not valid UTF-8 is refused
// with 400 before keyed replay or a handler sees it (encoding/json would silently turn its
// bad bytes into U+FFFD, or keep them in a RawMessage).
func (s *Server) checkBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := bufferBody(r)
		if err == nil && !utf8.Valid(body) {
			err = badRequest("", "request body is not valid UTF-8")
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// streaming reads the request body, then lifts the connection's read and write deadlines:
// the answer may stream or wait (MCP's SSE streams and waiting tool calls).
func (s *Server) streaming(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := bufferBody(r); err != nil {
			s.writeError(w, r, err)
			return
		}
		holdOpen(w)
		next.ServeHTTP(w, r)
	})
}

// holdOpen lifts the read and write deadlines of a request whose body has been read, for
// an answer that waits (?wait=, webhooks) or streams. Without this the read deadline
// would end the request's context mid-wait.
func holdOpen(w http.ResponseWriter) {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})  // not supported by test recorders: nothing to lift
	_ = rc.SetWriteDeadline(time.Time{}) // idem
}
