package runner

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"time"
)

// SetMaxHTTPTimeout sets the cap on one http attempt of engines made with c, so that a test
// sees it cut an attempt without waiting schemas.MaxHTTPTimeout.
func SetMaxHTTPTimeout(c *Config, d time.Duration) { c.maxHTTPTimeout = d }

// HTTPTimeout is httpTimeout, for tests of the timeout an attempt gets.
var HTTPTimeout = httpTimeout

// NestsDeeper is nestsDeeper, for tests of the JSON bodies kept as text.
var NestsDeeper = nestsDeeper

// HeadersTooLarge is headersTooLarge, for tests against the errors real servers cause.
var HeadersTooLarge = headersTooLarge

// NewHTTPClient is newHTTPClient, for tests of what the client of http steps refuses.
var NewHTTPClient = newHTTPClient

// HTTPClient is the client of e's http steps.
func HTTPClient(e *Engine) *http.Client { return e.client }

// TrustTLS makes c, a client of http steps not yet used, trust the certificates in pool (a
// test server's) instead of the system's.
func TrustTLS(c *http.Client, pool *x509.CertPool) {
	c.Transport.(*http.Transport).TLSClientConfig = &tls.Config{RootCAs: pool}
}

// Slots reports the worker slots of e taken, the runs waiting to take one again after their
// http attempt, and the http attempts it has in flight.
func Slots(e *Engine) (taken, waiting, httpInFlight int) {
	e.mu.Lock()
	taken, waiting = e.takenLocked(), len(e.slotWait)
	e.mu.Unlock()
	e.httpBound.mu.Lock()
	defer e.httpBound.mu.Unlock()
	return taken, waiting, e.httpBound.inFlight
}
