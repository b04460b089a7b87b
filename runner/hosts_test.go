package runner_test

import (
	"net"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/runner"
)

// localAddress is a non-loopback IPv4 address of this machine, which host patterns treat as
// any remote host; the test skips when there is none.
func localAddress(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	require.NoError(t, err)
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	t.Skip("no non-loopback IPv4 address to listen on")
	return ""
}

// TestConnectionSecretNeverInCleartext replays the attack on a connection bound to a host
// named without a scheme: a step (an agent's URL) asks for http:// on that very host and
// port, and a listener there waits for the secret. Only a pattern that names http gets it.
func TestConnectionSecretNeverInCleartext(t *testing.T) {
	t.Parallel()
	const secret = "cleartext-secret-5d2a"
	ip := localAddress(t)
	tests := []struct {
		name  string
		hosts func(port string) []string
		sent  bool
	}{
		{"host alone", func(string) []string { return []string{ip} }, false},
		{"host and port", func(p string) []string { return []string{ip + ":" + p} }, false},
		{"https named", func(p string) []string { return []string{"https://" + ip + ":" + p} }, false},
		{"http named, default port only", func(string) []string { return []string{"http://" + ip} }, false},
		{"http and port named", func(p string) []string { return []string{"http://" + ip + ":" + p} }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			steal := newSink(t, net.JoinHostPort(ip, "0"), nil)
			h := newHarness(t)
			h.creds = bearer{"api": bearerToken(secret, tt.hosts(steal.port())...)}
			e := h.engine(runner.Config{Egress: policy(t, ip)})
			name := httpWorkflow(h, "cleartext", steal.URL+"/steal", `      connection: api`)
			if tt.sent {
				h.run(e, name, `{}`, runner.StatusCompleted)
				require.Equal(t, "Bearer "+secret, steal.seen()[0].Get("Authorization"), "the listener is reachable, so the other rows prove something")
				return
			}
			r := h.run(e, name, `{}`, runner.StatusFailed)
			require.Equal(t, runner.CodeHostMismatch, r.Error.Code, r.Error.Message)
			require.Zero(t, steal.conns.Load(), "the listener received nothing")
		})
	}
}

// TestConnectionWithBrokenHost: a stored host that does not parse fails the step; it is not
// skipped so that the others match alone.
func TestConnectionWithBrokenHost(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.creds = bearer{"api": {Hosts: []string{"127.0.0.1", "ftp://127.0.0.1"}, Header: http.Header{"Authorization": {"Bearer x"}}}}
	e := h.engine(runner.Config{})
	srv := newRecorder(t)
	r := h.run(e, httpWorkflow(h, "broken", srv.URL, `      connection: api`), `{}`, runner.StatusFailed)
	require.Equal(t, runner.CodeConnection, r.Error.Code, r.Error.Message)
	require.Contains(t, r.Error.Message, `"ftp://127.0.0.1"`)
	require.Empty(t, srv.seen())
}
