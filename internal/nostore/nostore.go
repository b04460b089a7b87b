// Package nostore marks HTTP answers that no cache may keep.
package nostore

import "net/http"

// Set tells browsers, proxies and CDNs to keep no copy of the answer (RFC 9111 §5.2.2.5;
// Pragma for HTTP/1.0 caches, as the OAuth token endpoint sends). API and MCP answers
// carry secrets: a new token's secret, a rotated webhook token, the webhookUrl of every
// workflow view (the token is in it), hook tokens, run data and tool results.
func Set(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Pragma", "no-cache")
}

// Handler sets the headers before next runs, so that its errors carry them too.
func Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		Set(w)
		next.ServeHTTP(w, r)
	})
}
