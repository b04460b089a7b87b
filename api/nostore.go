package api

import "net/http"

// noStore tells browsers, proxies and CDNs to keep no copy of the answer (RFC 9111
// §5.2.2.5; Pragma for HTTP/1.0 caches, as the OAuth token endpoint sends). API answers
// carry secrets: a new token's secret, a rotated webhook token, the webhookUrl of every
// workflow view (the token is in it), hook tokens and run data. Every API route gets it,
// set before anything else runs, so that errors and keyed replays carry it too and a
// route added later cannot forget it; the router's 404 and 405 answers set it themselves.
func noStore(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		setNoStore(w)
		next.ServeHTTP(w, r)
	})
}

func setNoStore(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Pragma", "no-cache")
}
