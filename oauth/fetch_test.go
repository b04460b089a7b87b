package oauth_test

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"

	"github.com/gorunner/gorunner/oauth"
)

// couldNotFetch begins the one answer to a metadata document that could not be fetched.
const couldNotFetch = "could not fetch the client metadata document"

// authURL is an authorization request of clientID, as anyone may send it.
func (e *env) authURL(clientID string) string {
	return e.config(clientID, "runs:write").AuthCodeURL("s", oauth2.S256ChallengeOption(oauth2.GenerateVerifier()))
}

// tokenWith sends a token request naming clientID, which must resolve it first.
func (e *env) tokenWith(clientID string) (int, map[string]any) {
	return e.postForm(oauth.TokenPath, url.Values{"grant_type": {"authorization_code"}, "client_id": {clientID},
		"code": {"nope"}, "code_verifier": {oauth2.GenerateVerifier()}, "redirect_uri": {redirectURI}})
}

func (e *env) fetchesOf(path string) int {
	e.docsMu.Lock()
	defer e.docsMu.Unlock()
	return e.fetches[path]
}

// TestFailedClientDocumentCached performs the amplification attack: many unauthenticated
// authorize (and token) requests naming one client_id URL whose document is missing.
// GoRunner fetches it once per FailedClientDocumentTTL, on the injected clock, and
// serves the failure meanwhile; once that time ends, the fixed document works.
func TestFailedClientDocumentCached(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.clients.URL + "/later.json"
	for range 20 {
		page := e.open(e.browser(), e.authURL(id))
		require.Equal(t, http.StatusBadRequest, page.Status)
		require.Contains(t, page.Body, couldNotFetch)
	}
	st, body := e.tokenWith(id)
	require.Equal(t, http.StatusBadRequest, st)
	require.Equal(t, "invalid_client", body["error"])
	require.Equal(t, 1, e.fetchesOf("/later.json"), "one fetch for every request within the negative-cache time")

	e.serveDocument("/later.json", fmt.Sprintf(`{"client_id":%q,"redirect_uris":[%q]}`, id, redirectURI))
	e.clock.Advance(oauth.FailedClientDocumentTTL - time.Second)
	require.Equal(t, http.StatusBadRequest, e.open(e.browser(), e.authURL(id)).Status, "the failure still stands")
	require.Equal(t, 1, e.fetchesOf("/later.json"))
	e.clock.Advance(time.Second)
	require.Equal(t, http.StatusOK, e.open(e.browser(), e.authURL(id)).Status, "fetched again once the failure expired")
	require.Equal(t, 2, e.fetchesOf("/later.json"))
}

// TestClientDocumentFetchesBounded holds as many fetches as the bound allows on a
// document server that answers only when released, then sends another authorize and
// token request: each is refused at once with 503 and Retry-After, without a fetch.
// Once the held fetches end, the same client works.
func TestClientDocumentFetchesBounded(t *testing.T) {
	t.Parallel()
	const bound = 2
	e := newEnvWith(t, func(c *oauth.Config) { c.MaxClientDocumentFetches = bound })
	slow := newSlowDocuments(t, bound)
	urls := make([]string, bound)
	for i := range urls {
		urls[i] = e.authURL(fmt.Sprintf("%s/held%d.json", slow.URL, i))
	}
	held := getAll(urls)
	for range bound {
		<-slow.arrived
	}

	id := e.documentClient("Waiting")
	page := e.open(e.browser(), e.authURL(id))
	require.Equal(t, http.StatusServiceUnavailable, page.Status)
	require.Contains(t, page.Body, "too many client metadata documents")
	require.Equal(t, "1", page.Header.Get("Retry-After"))
	st, body := e.tokenWith(id)
	require.Equal(t, http.StatusServiceUnavailable, st)
	require.Equal(t, "temporarily_unavailable", body["error"])
	require.Contains(t, body["error_description"], "too many client metadata documents")
	require.Zero(t, e.fetchesOf("/waiting.json"), "refused, not queued")

	slow.free()
	for range bound {
		require.Equal(t, http.StatusBadRequest, <-held)
	}
	require.Equal(t, http.StatusOK, e.open(e.browser(), e.authURL(id)).Status, "a refusal is not cached")
	require.Equal(t, 1, e.fetchesOf("/waiting.json"))
}

// TestClientDocumentFetchesShared asks for one uncached document five times at once, with
// one fetch allowed at a time: the requests share the first one's fetch (the document
// server sees one request) and all get its answer, instead of four refusals for a slot.
func TestClientDocumentFetchesShared(t *testing.T) {
	t.Parallel()
	const asking = 5
	e := newEnvWith(t, func(c *oauth.Config) { c.MaxClientDocumentFetches = 1 })
	slow := newSlowDocuments(t, asking)
	answers := getAll(slices.Repeat([]string{e.authURL(slow.URL + "/shared.json")}, asking))
	<-slow.arrived
	require.Eventually(t, func() bool { return e.oauth.SharingFetches() == asking }, 10*time.Second, time.Millisecond,
		"every request joins the fetch under way")
	slow.free()
	for range asking {
		require.Equal(t, http.StatusBadRequest, <-answers, "the shared fetch's answer: no such document")
	}
	require.EqualValues(t, 1, slow.served.Load())
}

// slowDocuments is a client document server that holds every request until free, then
// answers 404; arrived has a value as each request comes in (up to the n given).
type slowDocuments struct {
	*httptest.Server
	arrived chan struct{}
	served  atomic.Int32
	free    func()
}

func newSlowDocuments(t *testing.T, n int) *slowDocuments {
	release := make(chan struct{})
	d := &slowDocuments{arrived: make(chan struct{}, n), free: sync.OnceFunc(func() { close(release) })}
	d.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.served.Add(1)
		d.arrived <- struct{}{}
		<-release
		http.NotFound(w, r)
	}))
	t.Cleanup(d.Close)
	t.Cleanup(d.free) // before d.Close, which waits for its handlers
	return d
}

// getAll gets each of urls at once and sends each answer's status (0: none) as it comes.
func getAll(urls []string) <-chan int {
	statuses := make(chan int, len(urls))
	for _, u := range urls {
		go func() {
			resp, err := http.Get(u)
			if err != nil {
				statuses <- 0
				return
			}
			resp.Body.Close()
			statuses <- resp.StatusCode
		}()
	}
	return statuses
}

// TestClientDocumentErrorsHidePorts performs a port scan of the loopback interface through
// the authorize page and the token endpoint of a GoRunner served on loopback: client_id
// URLs name a closed port, a port whose service speaks something else than HTTP, one that
// hangs up at once and an HTTP server without the document. Every answer reads the same
// (the URL aside), so none tells which ports are open.
func TestClientDocumentErrorsHidePorts(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	require.NoError(t, closed.Close())
	targets := map[string]string{
		"closed port":        "http://" + closed.Addr().String() + "/client.json",
		"SSH banner":         "http://" + listenTCP(t, "SSH-2.0-OpenSSH_9.6\r\n") + "/client.json",
		"hangs up":           "http://" + listenTCP(t, "") + "/client.json",
		"HTTP, no such path": e.clients.URL + "/client.json",
	}
	var pages, descriptions []string
	for name, id := range targets {
		page := e.open(e.browser(), e.authURL(id))
		require.Equal(t, http.StatusBadRequest, page.Status, name)
		require.Contains(t, page.Body, couldNotFetch, name)
		pages = append(pages, strings.ReplaceAll(page.Body, id, "URL"))
		st, body := e.tokenWith(id)
		require.Equal(t, http.StatusBadRequest, st, name)
		descriptions = append(descriptions, strings.ReplaceAll(body["error_description"].(string), id, "URL"))
	}
	for i := range pages {
		require.Equal(t, pages[0], pages[i])
		require.Equal(t, descriptions[0], descriptions[i])
	}
}

// listenTCP serves on loopback a service that writes banner to each connection and hangs
// up, and returns its address.
func listenTCP(t *testing.T, banner string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte(banner))
			_ = c.Close()
		}
	}()
	return ln.Addr().String()
}

// TestClientDocumentFetchesPaced performs the fetch flood: authorize requests naming
// ever new client_id URLs on a document server that answers at once, so the bound on
// fetches at once never bites. Past DefaultClientDocumentFetchBurst (the clock stands
// still) each is refused with 503 and Retry-After without a fetch, while a cached
// document and a cached failure still answer as before; a second later,
// DefaultClientDocumentFetchesPerSecond more are fetched.
func TestClientDocumentFetchesPaced(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cached := e.documentClient("Cached")
	require.Equal(t, http.StatusOK, e.open(e.browser(), e.authURL(cached)).Status)
	flood := func(i int) string { return fmt.Sprintf("%s/flood%d.json", e.clients.URL, i) }
	fetched := func() int {
		e.docsMu.Lock()
		defer e.docsMu.Unlock()
		n := 0
		for _, c := range e.fetches {
			n += c
		}
		return n
	}

	for i := range oauth.DefaultClientDocumentFetchBurst - 1 {
		page := e.open(e.browser(), e.authURL(flood(i)))
		require.Equal(t, http.StatusBadRequest, page.Status, "within the burst: fetched, and missing")
		require.Contains(t, page.Body, couldNotFetch)
	}
	require.Equal(t, oauth.DefaultClientDocumentFetchBurst, fetched())
	for i := range 10 {
		page := e.open(e.browser(), e.authURL(flood(100+i)))
		require.Equal(t, http.StatusServiceUnavailable, page.Status, "past the burst")
		require.Contains(t, page.Body, "too many client metadata documents")
		require.Equal(t, "1", page.Header.Get("Retry-After"))
		st, body := e.tokenWith(flood(200 + i))
		require.Equal(t, http.StatusServiceUnavailable, st)
		require.Equal(t, "temporarily_unavailable", body["error"])

		require.Equal(t, http.StatusOK, e.open(e.browser(), e.authURL(cached)).Status, "a cached document costs nothing")
		page = e.open(e.browser(), e.authURL(flood(0)))
		require.Equal(t, http.StatusBadRequest, page.Status, "a cached failure costs nothing")
		require.Contains(t, page.Body, couldNotFetch)
	}
	require.Equal(t, oauth.DefaultClientDocumentFetchBurst, fetched(), "no fetch past the budget")

	e.clock.Advance(time.Second)
	for i := range oauth.DefaultClientDocumentFetchesPerSecond {
		require.Equal(t, http.StatusBadRequest, e.open(e.browser(), e.authURL(flood(100+i))).Status, "fetched once paced")
	}
	require.Equal(t, http.StatusServiceUnavailable, e.open(e.browser(), e.authURL(flood(300))).Status)
	require.Equal(t, oauth.DefaultClientDocumentFetchBurst+oauth.DefaultClientDocumentFetchesPerSecond, fetched())
}
