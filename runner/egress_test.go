package runner_test

import (
	"bytes"
	"context"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/catalog"
	"github.com/gorunner/gorunner/examples"
	"github.com/gorunner/gorunner/runner"
)

// sink is a loopback HTTP listener that counts the connections it accepts and records the
// headers of every request; handler (optional) answers them.
type sink struct {
	*httptest.Server
	conns   atomic.Int32
	mu      sync.Mutex
	headers []http.Header
}

func newSink(t *testing.T, address string, handler http.HandlerFunc) *sink {
	t.Helper()
	s := unstartedSink(t, address, handler)
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// newH2Sink is a sink on loopback that speaks HTTP/2 over TLS, with a certificate that
// sinkRoots trusts.
func newH2Sink(t *testing.T, handler http.HandlerFunc) *sink {
	t.Helper()
	s := unstartedSink(t, "", handler)
	s.EnableHTTP2 = true
	s.StartTLS()
	t.Cleanup(s.Close)
	return s
}

// sinkRoots trusts s's certificate when s speaks TLS, and nothing else.
func sinkRoots(s *sink) *x509.CertPool {
	pool := x509.NewCertPool()
	if cert := s.Certificate(); cert != nil {
		pool.AddCert(cert)
	}
	return pool
}

func unstartedSink(t *testing.T, address string, handler http.HandlerFunc) *sink {
	t.Helper()
	s := &sink{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.headers = append(s.headers, r.Header.Clone())
		s.mu.Unlock()
		if handler != nil {
			handler(w, r)
			return
		}
		fmt.Fprint(w, "ok")
	}))
	if address != "" {
		ln, err := net.Listen("tcp", address)
		if err != nil {
			t.Skipf("cannot listen on %s: %v", address, err)
		}
		s.Listener.Close()
		s.Listener = ln
	}
	s.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			s.conns.Add(1)
		}
	}
	return s
}

func (s *sink) seen() []http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]http.Header(nil), s.headers...)
}

func (s *sink) port() string {
	return s.URL[len("http://"+s.Listener.Addr().(*net.TCPAddr).IP.String())+1:]
}

func policy(t *testing.T, allow ...string) *runner.EgressPolicy {
	t.Helper()
	p, err := runner.NewEgressPolicy(allow...)
	require.NoError(t, err)
	return p
}

// TestEgressPolicyRefusesNonPublicAddresses checks the policy on every kind of address it
// must refuse by default, in IPv4, IPv6 and IPv4-in-IPv6 forms, and on public ones.
func TestEgressPolicyRefusesNonPublicAddresses(t *testing.T) {
	t.Parallel()
	denied := []string{
		"127.0.0.1", "127.255.255.254", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1",
		"100.64.0.1", "100.127.255.254", "169.254.169.254", "0.0.0.0", "0.1.2.3", "224.0.0.1",
		"239.255.255.250", "255.255.255.255", "240.0.0.1", "192.0.0.8", "192.0.2.1", "198.18.0.1",
		"198.19.255.254", "198.51.100.7", "203.0.113.9", "2001::1", "2001:db8::1",
		"::1", "::", "fc00::1", "fd12:3456::1", "fe80::1", "fe80::1%eth0", "ff02::1", "fec0::1",
		"::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:169.254.169.254", "::ffff:0.0.0.0", "::127.0.0.1",
		"64:ff9b::7f00:1", "64:ff9b::a9fe:a9fe", "64:ff9b:1::1", "2002:7f00:1::", "2002:a00:1::1",
	}
	public := []string{"8.8.8.8", "1.1.1.1", "100.63.255.255", "100.128.0.0", "172.32.0.1", "198.20.0.1",
		"2001:4860:4860::8888",
		"2606:4700:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1"}
	p := policy(t)
	for _, s := range denied {
		ip := netip.MustParseAddr(s)
		err := p.Check("target.example", netip.AddrPortFrom(ip, 80))
		require.ErrorIs(t, err, runner.ErrEgressDenied, s)
		var ee *runner.EgressError
		require.ErrorAs(t, err, &ee)
		require.Equal(t, "target.example", ee.Host)
		require.Contains(t, err.Error(), "target.example", "the error names the host")
	}
	for _, s := range public {
		require.NoError(t, p.Check("target.example", netip.AddrPortFrom(netip.MustParseAddr(s), 443)), s)
	}
	var nilPolicy *runner.EgressPolicy
	require.ErrorIs(t, nilPolicy.Check("x", netip.MustParseAddrPort("127.0.0.1:80")), runner.ErrEgressDenied)
}

func TestEgressAllowRules(t *testing.T) {
	t.Parallel()
	p := policy(t, "127.0.0.1:9000", "10.0.0.0/8", " localhost:8080 ", "::ffff:192.168.1.5", "[fd00::1]:443", "db.internal")
	tests := []struct {
		host, addr string
		allowed    bool
	}{
		{"127.0.0.1", "127.0.0.1:9000", true},
		{"127.0.0.1", "127.0.0.1:9001", false},
		{"127.0.0.2", "127.0.0.2:9000", false},
		{"anything", "10.9.8.7:1", true},
		{"anything", "[::ffff:10.9.8.7]:1", true},
		{"localhost", "127.0.0.1:8080", true},
		{"LOCALHOST.", "[::1]:8080", true},
		{"localhost", "127.0.0.1:8081", false},
		{"127.0.0.1", "127.0.0.1:8080", false},
		{"x", "192.168.1.5:22", true},
		{"x", "192.168.1.6:22", false},
		{"x", "[fd00::1]:443", true},
		{"x", "[fd00::1]:80", false},
		{"db.internal", "172.20.0.3:5432", true},
		{"other.internal", "172.20.0.3:5432", false},
	}
	for _, tt := range tests {
		err := p.Check(tt.host, netip.MustParseAddrPort(tt.addr))
		if tt.allowed {
			require.NoError(t, err, "%s → %s", tt.host, tt.addr)
		} else {
			require.ErrorIs(t, err, runner.ErrEgressDenied, "%s → %s", tt.host, tt.addr)
		}
	}
	for _, bad := range []string{"", "10.0.0.0/33", "host:0", "host:99999", "bad host", "http://x", "*.example.com"} {
		_, err := runner.NewEgressPolicy(bad)
		require.Error(t, err, bad)
	}
}

// TestEgressDeniedWhenDialled calls loopback listeners for real with the default policy:
// by IP, by IPv6, through 0.0.0.0 and through a name resolving to loopback. Each step fails
// EGRESS_DENIED at once, naming the host, and no connection reaches the listener.
func TestEgressDeniedWhenDialled(t *testing.T) {
	t.Parallel()
	v4 := newSink(t, "", nil)
	tests := []struct {
		name string
		url  func() (string, *sink)
	}{
		{"127.0.0.1", func() (string, *sink) { return v4.URL + "/steal", v4 }},
		{"localhost", func() (string, *sink) { return "http://localhost:" + v4.port() + "/steal", v4 }},
		{"0.0.0.0", func() (string, *sink) { return "http://0.0.0.0:" + v4.port() + "/steal", v4 }},
		{"[::1]", func() (string, *sink) {
			v6 := newSink(t, "[::1]:0", nil)
			return v6.URL + "/steal", v6
		}},
	}
	h := newHarness(t)
	e := h.engine(runner.Config{Egress: policy(t)})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			target, s := tt.url()
			u, err := url.Parse(target)
			require.NoError(t, err)
			r := h.run(e, httpWorkflow(h, "denied", target, ""), `{}`, runner.StatusFailed)
			require.Equal(t, runner.CodeEgressDenied, r.Error.Code, r.Error.Message)
			require.Contains(t, r.Error.Message, u.Hostname())
			require.Equal(t, 1, step(r, "call").Attempts, "a refused address is not retried")
			require.Zero(t, s.conns.Load(), "nothing reached the listener")
		})
	}
}

// TestFetchStatusCannotExfiltrate replays the attack on the shipped fetch-status example,
// with its real definition, a real sealed connection and the real engine: an agent (or a
// prompt injection) passes the URL of a listener of its own. The secret must never reach it.
func TestFetchStatusCannotExfiltrate(t *testing.T) {
	t.Parallel()
	const secret = "status-secret-7c1e"
	tests := []struct {
		name  string
		allow []string
		hosts func(steal *sink) []string
		code  string
	}{
		{"no --http-allow", nil, func(s *sink) []string { return []string{"127.0.0.1:" + s.port()} }, runner.CodeEgressDenied},
		{"loopback allowed, connection bound elsewhere", []string{"127.0.0.1"}, func(*sink) []string { return []string{"status.example.com"} }, runner.CodeHostMismatch},
		{"connection bound elsewhere, nothing allowed", nil, func(*sink) []string { return []string{"status.example.com"} }, runner.CodeHostMismatch},
		{"loopback allowed, connection bound to another port", []string{"127.0.0.1"}, func(*sink) []string { return []string{"127.0.0.1:1"} }, runner.CodeHostMismatch},
		{"loopback allowed, connection bound to the listener", []string{"127.0.0.1"}, func(s *sink) []string { return []string{"127.0.0.1:" + s.port()} }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			steal := newSink(t, "", nil)
			h := newHarness(t)
			ctx := context.Background()
			cat, err := catalog.New(h.store, &catalog.Config{SecretKey: bytes.Repeat([]byte{9}, 32), Templates: examples.Workflows()})
			require.NoError(t, err)
			_, err = cat.InstallTemplates(ctx, auth.Local())
			require.NoError(t, err)
			_, err = cat.CreateConnection(ctx, catalog.ConnectionParams{Name: "status-api", Type: catalog.ConnBearer, Secret: secret, Hosts: tt.hosts(steal)})
			require.NoError(t, err)
			e, err := runner.New(h.store, cat, cat, &runner.Config{Egress: policy(t, tt.allow...), PollInterval: 10 * time.Millisecond})
			require.NoError(t, err)
			require.NoError(t, e.Start(ctx))
			t.Cleanup(func() { require.NoError(t, e.Stop(context.Background())) })

			input := fmt.Sprintf(`{"url": %q}`, steal.URL+"/steal")
			if tt.code == "" {
				r := h.run(e, "fetch-status", input, runner.StatusCompleted)
				require.Equal(t, "Bearer "+secret, steal.seen()[0].Get("Authorization"), "a bound host gets the secret, so the other rows prove something")
				require.Contains(t, string(r.Output), `"up":true`)
				return
			}
			r := h.run(e, "fetch-status", input, runner.StatusFailed)
			require.Equal(t, tt.code, r.Error.Code, r.Error.Message)
			require.Equal(t, 1, step(r, "call").Attempts)
			require.Zero(t, steal.conns.Load(), "the listener received nothing")
			require.NotContains(t, r.Error.Message, secret)
		})
	}
}

// TestRedirectDropsConnectionHeaders has an allowed, bound host redirect a signed request to
// another origin (another port of the same host, which the connection's hosts also match):
// the second listener must get neither the Authorization header, nor the connection's
// custom header, nor cookies; a redirect within the origin keeps them.
func TestRedirectDropsConnectionHeaders(t *testing.T) {
	t.Parallel()
	other := newSink(t, "", nil)
	first := newSink(t, "", func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/same":
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
		case "/elsewhere":
			http.Redirect(w, r, other.URL+"/landed", http.StatusTemporaryRedirect)
		}
	})
	h := newHarness(t)
	h.creds = bearer{"signed": {Hosts: []string{"127.0.0.1"}, Header: http.Header{
		"Authorization": {"Bearer s3cret"}, "X-Api-Key": {"k3y"}, "Cookie": {"session=c00kie"},
	}}}
	e := h.engine(runner.Config{})
	name := httpWorkflow(h, "redirected", first.URL+"/same", `      connection: signed
      headers: {Accept: application/json}`)
	h.run(e, name, `{}`, runner.StatusCompleted)

	firstSeen := first.seen()
	require.Len(t, firstSeen, 2)
	for _, hd := range firstSeen {
		require.Equal(t, "Bearer s3cret", hd.Get("Authorization"), "same origin keeps the credential")
		require.Equal(t, "k3y", hd.Get("X-Api-Key"))
	}
	otherSeen := other.seen()
	require.Len(t, otherSeen, 1)
	for _, name := range []string{"Authorization", "X-Api-Key", "Cookie"} {
		require.Empty(t, otherSeen[0].Get(name), name)
	}
	require.Equal(t, "application/json", otherSeen[0].Get("Accept"), "the step's own headers follow")
}

// TestRedirectToDeniedAddress has an allowed host redirect to addresses the policy refuses:
// the step fails EGRESS_DENIED at once and nothing reaches them.
func TestRedirectToDeniedAddress(t *testing.T) {
	t.Parallel()
	denied := newSink(t, "", nil)
	tests := []struct{ name, location string }{
		{"another loopback port", denied.URL + "/steal"},
		{"cloud metadata", "http://169.254.169.254/latest/meta-data/"},
		{"a name resolving to loopback", "http://localhost:" + denied.port() + "/steal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			allowed := newSink(t, "", func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, tt.location, http.StatusFound)
			})
			h := newHarness(t)
			e := h.engine(runner.Config{Egress: policy(t, "127.0.0.1:"+allowed.port())})
			r := h.run(e, httpWorkflow(h, "hop", allowed.URL+"/start", ""), `{}`, runner.StatusFailed)
			require.Equal(t, runner.CodeEgressDenied, r.Error.Code, r.Error.Message)
			require.Equal(t, 1, step(r, "call").Attempts)
			require.Len(t, allowed.seen(), 1)
			require.Zero(t, denied.conns.Load())
		})
	}
}

// TestHostPatterns checks how connection hosts match request URLs.
func TestHostPatterns(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pattern, url string
		match        bool
	}{
		{"api.example.com", "https://api.example.com/x", true},
		{"api.example.com", "https://API.example.com./x", true},
		{"api.example.com", "https://api.example.com:443/x", true},
		{"api.example.com", "https://api.example.com:8443/x", false},
		{"api.example.com", "http://api.example.com/x", false},
		{"api.example.com", "http://api.example.com:443/x", false},
		{"api.example.com", "https://evil.example/x?api.example.com", false},
		{"api.example.com", "https://api.example.com.evil.example/", false},
		{"api.example.com:8443", "https://api.example.com:8443/", true},
		{"api.example.com:8443", "http://api.example.com:8443/", false},
		{"api.example.com:443", "https://api.example.com/", true},
		{"api.example.com:443", "http://api.example.com/", false},
		{"https://api.example.com", "https://api.example.com/", true},
		{"https://api.example.com", "http://api.example.com:443/", false},
		{"http://api.example.com", "http://api.example.com/", true},
		{"http://api.example.com", "http://api.example.com:8080/", false},
		{"http://api.example.com", "https://api.example.com/", false},
		{"HTTP://api.example.com:8080", "http://api.example.com:8080/", true},
		{"*.example.com", "https://a.b.example.com/", true},
		{"*.example.com", "http://a.example.com/", false},
		{"*.example.com", "https://example.com/", false},
		{"*.example.com", "https://badexample.com/", false},
		{"10.0.0.5", "http://10.0.0.5/", false},
		{"[fd00::1]", "https://[fd00::1]/", true},
		{"127.0.0.1", "http://[::ffff:127.0.0.1]:9000/", true},
		{"127.0.0.1", "https://127.0.0.1:9443/", true},
		{"127.0.0.1:9000", "http://127.0.0.1:9000/", true},
		{"127.0.0.1:9000", "http://127.0.0.1:9001/", false},
		{"http://127.0.0.1", "http://127.0.0.1:9000/", true},
		{"http://127.0.0.1", "https://127.0.0.1:9000/", false},
		{"localhost", "http://localhost:3000/", true},
		{"localhost", "http://localhost.evil.example/", false},
		{"[::1]:9000", "http://[::1]:9000/", true},
		{"[::1]:9000", "http://[::1]:9001/", false},
	}
	for _, tt := range tests {
		p, err := runner.ParseHostPattern(tt.pattern)
		require.NoError(t, err, tt.pattern)
		u, err := url.Parse(tt.url)
		require.NoError(t, err)
		require.Equal(t, tt.match, p.Matches(u), "%s vs %s", tt.pattern, tt.url)
	}
	for in, want := range map[string]string{
		"HTTPS://API.Example.com.:8443": "https://api.example.com:8443",
		"http://[::FFFF:127.0.0.1]":     "http://127.0.0.1",
		"*.Example.com":                 "*.example.com",
	} {
		p, err := runner.ParseHostPattern(in)
		require.NoError(t, err, in)
		require.Equal(t, want, p.String())
	}
	for _, bad := range []string{"ftp://api.example.com", "https://api.example.com/path", "://api.example.com", "https://", "http://api.example.com:0"} {
		_, err := runner.ParseHostPattern(bad)
		require.Error(t, err, bad)
	}
	label := strings.Repeat("a", 63)
	atLimit := strings.Join([]string{label, label, label, strings.Repeat("b", 61)}, ".")
	require.Len(t, atLimit, runner.MaxHostLength)
	_, err := runner.ParseHostPattern(atLimit)
	require.NoError(t, err)
	_, err = runner.ParseHostPattern(strings.Join([]string{label, label, label, strings.Repeat("b", 62)}, "."))
	require.Error(t, err, "one character past MaxHostLength")
}

// TestResponseHeaderBomb has a host answer with megabytes of headers, hundreds of thousands
// of them (before MaxResponseHeaderBytes, 8 MB of them completed the step, cost the process
// over 500 MB and stored all of them as the step's output): the step fails
// RESPONSE_TOO_LARGE at once, without retries; headers up to the limit still come through.
// Over HTTP/2 the bomb failed as a network error and was retried.
func TestResponseHeaderBomb(t *testing.T) {
	t.Parallel()
	headers := func(n int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			for i := range n {
				w.Header()[fmt.Sprintf("X-H%d", i)] = []string{"v"}
			}
			w.Header().Set("X-Proto", r.Proto)
			fmt.Fprint(w, "ok")
		}
	}
	tests := []struct {
		proto   string
		newSink func(t *testing.T, handler http.HandlerFunc) *sink
	}{
		{"HTTP/1.1", func(t *testing.T, handler http.HandlerFunc) *sink { return newSink(t, "", handler) }},
		{"HTTP/2.0", newH2Sink},
	}
	for _, tt := range tests {
		t.Run(tt.proto, func(t *testing.T) {
			t.Parallel()
			bomb := tt.newSink(t, headers(20_000)) // 200 KB; 400,000 (5 MB) went through as well
			fits := tt.newSink(t, headers(1000))
			h := newHarness(t)
			e := h.newEngine(runner.Config{})
			runner.TrustTLS(runner.HTTPClient(e), sinkRoots(bomb)) // fits has the same certificate
			h.start(e)

			r := h.run(e, httpWorkflow(h, "bomb", bomb.URL+"/", ""), `{}`, runner.StatusFailed)
			require.Equal(t, runner.CodeResponseTooLarge, r.Error.Code, r.Error.Message)
			require.Contains(t, r.Error.Message, "response headers over")
			require.Equal(t, 1, step(r, "call").Attempts, "the same answer would come again: not retried")
			require.Len(t, bomb.seen(), 1)

			r = h.run(e, httpWorkflow(h, "fits", fits.URL+"/", ""), `{}`, runner.StatusCompleted)
			out := jsonOf(t, r.Output).(map[string]any)
			require.Equal(t, "v", out["headers"].(map[string]any)["x-h999"])
			require.Equal(t, tt.proto, out["headers"].(map[string]any)["x-proto"])
		})
	}
}

// TestHeadersTooLarge gives HeadersTooLarge the errors the client of http steps returns
// from real servers, over both protocols: net/http has no error value for headers over the
// limit, so a Go release that words them otherwise fails here rather than retrying bombs.
// Over HTTP/2, headers a little over the limit and far over it fail differently.
func TestHeadersTooLarge(t *testing.T) {
	t.Parallel()
	bomb := func(n int) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			for i := range n {
				w.Header()[fmt.Sprintf("X-H%d", i)] = []string{"v"}
			}
		}
	}
	hangUp := func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) }
	plain := func(t *testing.T, handler http.HandlerFunc) *sink { return newSink(t, "", handler) }
	tests := []struct {
		name    string
		newSink func(t *testing.T, handler http.HandlerFunc) *sink
		handler http.HandlerFunc
		want    bool
	}{
		{"HTTP/1.1 bomb", plain, bomb(20_000), true},
		{"HTTP/2 a little over", newH2Sink, bomb(1700), true},
		{"HTTP/2 bomb", newH2Sink, bomb(20_000), true},
		{"HTTP/1.1 hang-up", plain, hangUp, false},
		{"HTTP/2 hang-up", newH2Sink, hangUp, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := tt.newSink(t, tt.handler)
			client := runner.NewHTTPClient(policy(t, "127.0.0.1"))
			runner.TrustTLS(client, sinkRoots(srv))
			resp, err := client.Get(srv.URL)
			if err == nil {
				resp.Body.Close()
			}
			var ue *url.Error
			require.ErrorAs(t, err, &ue)
			require.Equal(t, tt.want, runner.HeadersTooLarge(ue.Err), "%v", ue.Err)
		})
	}
}
