package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorunner/gorunner/expression"
	"github.com/gorunner/gorunner/internal/tracing"
	"github.com/gorunner/gorunner/schemas"
)

const (
	// MaxResponseBody is the largest response body an http step reads.
	MaxResponseBody = 10 << 20
	// MaxResponseHeaderBytes bounds the status line and headers of a response an http step
	// reads (Go's default is 10 MiB, which a hostile server fills with hundreds of thousands
	// of headers that cost the process over 50 times their size).
	MaxResponseHeaderBytes = 64 << 10
	// defaultHTTPTimeout bounds an http step attempt without a timeout.
	defaultHTTPTimeout = 30 * time.Second
	// HTTPBusyDelay is how long, at least, a run whose http attempt found
	// Config.HTTPConcurrency or Config.HTTPPerWorkflow full waits before it is due again;
	// runs already due are claimed before it. The runs of one workflow handed back are due
	// HTTPBusyDelay/HTTPPerWorkflow apart (httpBounds.backOff), so that however many wait,
	// they come back at most HTTPPerWorkflow per HTTPBusyDelay: handing back costs a claim
	// and a write, and a crowd of runs must not turn into a stream of writes.
	HTTPBusyDelay = time.Second
)

// httpBounds counts the http attempts in flight in an engine, in all and by workflow,
// within Config.HTTPConcurrency and Config.HTTPPerWorkflow.
type httpBounds struct {
	total, perWorkflow int

	mu         sync.Mutex
	inFlight   int
	byWorkflow map[string]int
	// backAt is, by workflow, when the next of its runs handed back is due at the earliest.
	// The schedules that have passed are dropped when it reaches pruneAt entries, which is
	// then twice those left (at least total): a crowd of workflows with schedules still to
	// come costs a look at each once per doubling, not once per run handed back.
	backAt  map[string]time.Time
	pruneAt int
}

func newHTTPBounds(total, perWorkflow int) httpBounds {
	return httpBounds{total: total, perWorkflow: perWorkflow, byWorkflow: map[string]int{}, backAt: map[string]time.Time{}, pruneAt: total}
}

// backOff is when a run of workflow handed back at now for a full bound is due again:
// HTTPBusyDelay on, or after the runs of workflow handed back before it, spaced
// HTTPBusyDelay/perWorkflow apart.
func (b *httpBounds) backOff(workflow string, now time.Time) time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	at := now.Add(HTTPBusyDelay)
	if next, ok := b.backAt[workflow]; ok && next.After(at) {
		at = next
	}
	if len(b.backAt) >= b.pruneAt {
		for w, next := range b.backAt {
			if next.Before(now) {
				delete(b.backAt, w)
			}
		}
		b.pruneAt = max(2*len(b.backAt), b.total)
	}
	b.backAt[workflow] = at.Add(HTTPBusyDelay / time.Duration(b.perWorkflow))
	return at
}

// take counts an attempt of a run of workflow in flight, unless either bound is full
// (false: nothing counted).
func (b *httpBounds) take(workflow string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.inFlight >= b.total || b.byWorkflow[workflow] >= b.perWorkflow {
		return false
	}
	b.inFlight++
	b.byWorkflow[workflow]++
	return true
}

// done counts an attempt take counted as no longer in flight.
func (b *httpBounds) done(workflow string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.inFlight--
	if b.byWorkflow[workflow]--; b.byWorkflow[workflow] == 0 {
		delete(b.byWorkflow, workflow)
	}
}

// runHTTP makes one request. Network errors, timeouts, 429 and 5xx are retryable; another
// 4xx, an address the egress policy refuses, an unknown connection or one not bound to the
// URL's host fail the step at once.
func runHTTP(ctx context.Context, s *stepExec) (outcome, error) {
	var hs schemas.HTTPStep
	if err := s.eval(s.st.HTTP, &hs); err != nil {
		return outcome{}, err
	}
	timeout := httpTimeout(s.st.Timeout.Std(), s.engine().cfg.maxHTTPTimeout)
	runCtx := ctx // the timeout bounds the request, not the wait for a slot after it
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := s.newRequest(ctx, &hs)
	if err != nil {
		return outcome{}, err
	}
	s.request, s.status = req.Method+" "+req.URL.Redacted(), 0
	var (
		resp *http.Response
		body []byte
	)
	s.offline(runCtx, func() {
		// classified at once: the wait for a slot after it must not make it a timeout
		if resp, body, err = send(s.engine().client, req); err != nil {
			err = requestError(ctx, req, err, timeout)
		}
	})
	if err != nil {
		return outcome{}, err
	}
	s.status = resp.StatusCode
	if len(body) > MaxResponseBody {
		return outcome{}, permanent(CodeResponseTooLarge, "%s %s: response body over %d bytes", req.Method, req.URL.Redacted(), MaxResponseBody)
	}
	if resp.StatusCode >= 400 {
		return outcome{}, statusError(req, resp, body, s.engine().now())
	}
	return outcome{output: map[string]any{
		"status":  resp.StatusCode,
		"headers": headerMap(resp.Header),
		"body":    decodeBody(resp.Header.Get("Content-Type"), body),
	}}, nil
}

// send makes req and reads its response's body, up to one byte over MaxResponseBody.
func send(client *http.Client, req *http.Request) (*http.Response, []byte, error) {
	resp, err := client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBody+1))
	return resp, body, err
}

// httpTimeout is how long one attempt of an http step whose timeout is asked may take:
// defaultHTTPTimeout when it asks none, at most limit (schemas.MaxHTTPTimeout outside
// tests). Validation refuses more, but a definition stored before the cap may still ask it.
func httpTimeout(asked, limit time.Duration) time.Duration {
	if asked <= 0 {
		asked = defaultHTTPTimeout
	}
	return min(asked, limit)
}

func (s *stepExec) newRequest(ctx context.Context, hs *schemas.HTTPStep) (*http.Request, error) {
	u, err := url.Parse(hs.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, permanent(CodeInvalidStep, "step %q: url %q is not an absolute http(s) URL", s.st.ID, hs.URL)
	}
	if len(hs.Query) > 0 {
		q := u.Query()
		for k, v := range hs.Query {
			q.Set(k, v)
		}
		u.RawQuery = q.Encode()
	}
	cred, err := s.credential(ctx, hs.Connection, u)
	if err != nil {
		return nil, err
	}
	body, contentType, err := encodeBody(hs.Body)
	if err != nil {
		return nil, permanent(CodeInvalidStep, "step %q: body: %v", s.st.ID, err)
	}
	method := strings.ToUpper(hs.Method)
	if method == "" {
		method = http.MethodGet
		if hs.Body != nil {
			method = http.MethodPost
		}
	}
	if cred != nil {
		ctx = withConnectionHeaders(ctx, cred.Header)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, permanent(CodeInvalidStep, "step %q: %v", s.st.ID, err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for k, v := range hs.Headers {
		req.Header.Set(k, v)
	}
	if hs.IdempotencyKey == nil || *hs.IdempotencyKey {
		req.Header.Set("Idempotency-Key", s.rec.StepID)
	}
	if s.engine().cfg.Tracer != nil && req.Header.Get(tracing.Header) == "" {
		tracing.Inject(ctx, req.Header) // the attempt's span, unless the step sends its own
	}
	if cred != nil {
		for k, vs := range cred.Header {
			req.Header[k] = vs
		}
	}
	return req, nil
}

// credential finds the step's connection, if it names one, and makes sure it is bound to
// the host of u, so that its secret goes nowhere else.
func (s *stepExec) credential(ctx context.Context, connection string, u *url.URL) (*Credential, error) {
	if connection == "" {
		return nil, nil
	}
	creds := s.engine().creds
	if creds == nil {
		return nil, permanent(CodeConnection, "step %q: connection %q: no connections are configured", s.st.ID, connection)
	}
	cred, err := creds.Credential(ctx, connection)
	if err != nil {
		return nil, permanent(CodeConnection, "step %q: connection %q: %v", s.st.ID, connection, err)
	}
	patterns, err := s.engine().hosts.patterns(cred.Hosts)
	if err != nil {
		return nil, permanent(CodeConnection, "step %q: connection %q: %v", s.st.ID, connection, err)
	}
	if !boundTo(patterns, u) {
		hosts := "none; give it hosts"
		if len(cred.Hosts) > 0 {
			hosts = strings.Join(cred.Hosts, ", ")
		}
		return nil, permanent(CodeHostMismatch, "step %q: connection %q is not bound to host %s (its hosts: %s)",
			s.st.ID, connection, u.Host, hosts)
	}
	return cred, nil
}

// encodeBody sends a string as it is (text/plain) and any other value as JSON.
func encodeBody(v any) (io.Reader, string, error) {
	switch b := v.(type) {
	case nil:
		return nil, "", nil
	case string:
		return strings.NewReader(b), "text/plain; charset=utf-8", nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, "", err
	}
	return bytes.NewReader(raw), "application/json", nil
}

func requestError(ctx context.Context, req *http.Request, err error, timeout time.Duration) error {
	var denied *EgressError
	if errors.As(err, &denied) {
		return permanent(CodeEgressDenied, "%s %s: %v", req.Method, req.URL.Redacted(), denied)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	switch {
	case headersTooLarge(err):
		return permanent(CodeResponseTooLarge, "%s %s: response headers over %d bytes (%v)", req.Method, req.URL.Redacted(), MaxResponseHeaderBytes, err)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return retryable(CodeTimeout, "%s %s: no answer within %s", req.Method, req.URL.Redacted(), timeout)
	}
	return retryable(CodeNetwork, "%s %s: %v", req.Method, req.URL.Redacted(), err)
}

// headersTooLarge reports whether err, the cause of a failed request, is the client refusing
// response headers over MaxResponseHeaderBytes, which a retry would only get again.
// net/http has no error value for it, so its texts are matched here, and tested against real
// servers so that a Go release that rewords them fails a test rather than retrying bombs:
// over HTTP/1.1 one text; over HTTP/2 (where the limit is the SETTINGS_MAX_HEADER_LIST_SIZE
// the client announces) another when the headers end soon after the limit, and a bare
// connection PROTOCOL_ERROR when they go on well past it. That last one is also all a
// server breaking HTTP/2 otherwise gets, which a retry does not mend either.
func headersTooLarge(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "server response headers exceeded") ||
		strings.Contains(msg, "http2: response header list larger than advertised limit") ||
		msg == "connection error: PROTOCOL_ERROR"
}

func statusError(req *http.Request, resp *http.Response, body []byte, now time.Time) error {
	msg := fmt.Sprintf("%s %s: %s", req.Method, req.URL.Redacted(), resp.Status)
	if snippet := strings.TrimSpace(string(body)); snippet != "" {
		msg += ": " + truncate(snippet, 200)
	}
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 {
		return &stepError{code: CodeHTTP, msg: msg, retryable: true, retryAfter: parseRetryAfter(resp.Header.Get("Retry-After"), now)}
	}
	return &stepError{code: CodeHTTP, msg: msg}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// parseRetryAfter reads a Retry-After header: delay seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if secs, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && secs > 0 {
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// headerMap gives response headers with lower-case names, repeated values joined.
func headerMap(h http.Header) map[string]string {
	out := make(map[string]string, len(h))
	for k, vs := range h {
		out[strings.ToLower(k)] = strings.Join(vs, ", ")
	}
	return out
}

// decodeBody decodes a JSON body (application/json or +json); anything else is a string,
// and so is JSON nested deeper than expression.MaxValueDepth: encoding/json decodes up to
// 10,000 levels, but a body that deep, once in the step's record, is deeper than that and
// the run could not be saved (it stayed running, its worker retrying the save).
func decodeBody(contentType string, body []byte) any {
	if len(body) == 0 {
		return nil
	}
	mt, _, _ := mime.ParseMediaType(contentType)
	if (mt == "application/json" || strings.HasSuffix(mt, "+json")) && !nestsDeeper(body, expression.MaxValueDepth) {
		if v, err := decodeJSON(body); err == nil {
			return v
		}
	}
	return string(body)
}

// nestsDeeper reports whether the JSON text b opens more than limit arrays and objects
// inside one another.
func nestsDeeper(b []byte, limit int) bool {
	depth, inString, escaped := 0, false, false
	for _, c := range b {
		switch {
		case escaped:
			escaped = false
		case inString:
			escaped, inString = c == '\\', c != '"'
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			if depth++; depth > limit {
				return true
			}
		case c == ']' || c == '}':
			depth--
		}
	}
	return false
}
