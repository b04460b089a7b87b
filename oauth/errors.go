package oauth

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// RFC 6749 §4.1.2.1 and §5.2 error codes, RFC 7591 §3.2.2 and RFC 8707 §2.
const (
	errInvalidRequest          = "invalid_request"
	errInvalidClient           = "invalid_client"
	errInvalidGrant            = "invalid_grant"
	errUnauthorizedClient      = "unauthorized_client"
	errUnsupportedGrantType    = "unsupported_grant_type"
	errUnsupportedResponseType = "unsupported_response_type"
	errInvalidScope            = "invalid_scope"
	errAccessDenied            = "access_denied"
	errServerError             = "server_error"
	errTemporarilyUnavailable  = "temporarily_unavailable"
	errInvalidTarget           = "invalid_target"
	errInvalidRedirectURI      = "invalid_redirect_uri"
	errInvalidClientMetadata   = "invalid_client_metadata"
)

// oauthError is an error answer of the token, revoke or register endpoint, or of an
// authorization request (sent back to the client's redirect URI).
type oauthError struct {
	Code        string `json:"error"`
	Description string `json:"error_description,omitempty"`
	status      int
	retryAfter  time.Duration
}

func (e *oauthError) Error() string { return e.Code + ": " + e.Description }

func newError(code, desc string) *oauthError {
	status := http.StatusBadRequest
	switch code {
	case errServerError:
		status = http.StatusInternalServerError
	case errTemporarilyUnavailable:
		status = http.StatusServiceUnavailable
	}
	return &oauthError{Code: code, Description: desc, status: status}
}

// postOnly is the answer of the token, revoke or register endpoint to a method other than
// POST; writeError adds the Allow header (RFC 9110 §15.5.6).
func postOnly() *oauthError {
	e := newError(errInvalidRequest, "use POST")
	e.status = http.StatusMethodNotAllowed
	return e
}

// writeJSON answers v with the headers RFC 6749 §5.1 asks of every token response.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError answers e as RFC 6749 §5.2 JSON.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, e *oauthError) {
	if e.status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Basic realm="gorunner"`)
	}
	if e.status == http.StatusMethodNotAllowed {
		w.Header().Set("Allow", http.MethodPost)
	}
	if e.retryAfter > 0 {
		setRetryAfter(w, e.retryAfter)
	}
	if e.Code == errServerError { // temporarily_unavailable says what it was written to say
		s.log.ErrorContext(r.Context(), "oauth endpoint failed", "path", r.URL.Path, "error", e.Description)
		e = &oauthError{Code: e.Code, Description: "the server could not complete the request", status: e.status}
	}
	writeJSON(w, e.status, e)
}

// internal is a server_error: writeError logs err and never sends its text.
func internal(err error) *oauthError { return newError(errServerError, err.Error()) }

// withQuery returns u with params added to its query (RFC 6749 §4.1.2: keep the
// redirect URI's own query).
func withQuery(u string, params url.Values) string {
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	q := p.Query()
	for k, vs := range params {
		for _, v := range vs {
			if v != "" {
				q.Add(k, v)
			}
		}
	}
	p.RawQuery = q.Encode()
	return p.String()
}

// setRetryAfter says, in whole seconds and at least one, when to try again.
func setRetryAfter(w http.ResponseWriter, d time.Duration) {
	w.Header().Set("Retry-After", strconv.Itoa(int(max(time.Second, d).Round(time.Second)/time.Second)))
}
