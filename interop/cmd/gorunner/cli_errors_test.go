package main_test

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const failingYAML = `name: charge
input: { type: object }
steps:
  - id: refuse
    fail: { message: card declined }
`

const hookYAML = `name: confirm
input: { type: object, properties: { id: { type: string } } }
steps:
  - id: wait
    hook: { token: "confirm:${{ input.id }}" }
`

// TestCLIExitCodesAndMessages checks that every bad situation ends with one line saying
// what to do, the exit code the docs promise, and no stack trace.
func TestCLIExitCodesAndMessages(t *testing.T) {
	t.Parallel()
	s := startServe(t, t.TempDir())
	files := t.TempDir()
	_, stderr, code := cli(t, s, "workflow", "apply",
		writeFile(t, files, "charge.yaml", failingYAML), writeFile(t, files, "confirm.yaml", hookYAML))
	require.Equal(t, 0, code, stderr)

	revoked := revokedToken(t, s)
	closed := closedAddress(t)
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		code int
		want string
	}{
		{"completed", nil, []string{"run", "confirm", "--input", `{"id": "1"}`}, 0, ""},
		{"failed run", nil, []string{"run", "charge", "--wait"}, 1, "failed: FAILED at step refuse: card declined"},
		{"still waiting", nil, []string{"run", "confirm", "--input", `{"id": "2"}`, "--wait", "--timeout", "2s"}, 3, "is still waiting after 2s; follow it with: gorunner runs get"},
		{"zero timeout", nil, []string{"run", "charge", "--wait", "--timeout", "0s"}, 2, "--timeout must be positive, got 0s"},
		{"negative expiry", nil, []string{"token", "create", "x", "--expires", "-1h"}, 2, "a token's lifetime must be positive: --expires -1h0m0s"},
		{"bad scope", nil, []string{"token", "create", "x", "--scope", "runs:write", "--scope", "bogus"}, 2, `--scope: invalid scope "bogus": want admin, workflows:write, runs:write or runs:read`},
		{"bad narrowed scope", nil, []string{"token", "create", "x", "--scope", "runs:read:owner=me"}, 2, `--scope: invalid scope "runs:read:owner=me": narrow with workflow=NAME or tag=TAG`},
		{"blank token name", nil, []string{"token", "create", " "}, 2, `token name must be 1 to 100 characters: " "`},
		{"unknown flag", nil, []string{"run", "charge", "--inptu", "{}"}, 2, "unknown flag: --inptu; see 'gorunner run --help'"},
		{"unknown command", nil, []string{"workflow", "aply"}, 2, `unknown command "aply" for "gorunner workflow"`},
		{"missing argument", nil, []string{"runs", "get"}, 2, "accepts 1 arg(s), received 0; see 'gorunner runs get --help'"},
		{"bad JSON input", nil, []string{"run", "charge", "--input", "{name: Ada}"}, 2, "--input is not valid JSON"},
		{"missing input file", nil, []string{"run", "charge", "--input", "@nope.json"}, 2, "--input: cannot read nope.json: no such file or directory"},
		{"missing workflow file", nil, []string{"workflow", "apply", "nope.yaml"}, 2, "cannot read nope.yaml: no such file or directory"},
		{"bad output", nil, []string{"workflow", "list", "-o", "xml"}, 2, `-o "xml": use table or json`},
		{"max depth zero", nil, []string{"serve", "--max-depth", "0"}, 2, "--max-depth must be at least 1, got 0"},
		{"max depth from env", []string{"GORUNNER_MAX_DEPTH=-1"}, []string{"mcp"}, 2, "--max-depth must be at least 1, got -1"},
		{"lease ttl zero", nil, []string{"serve", "--lease-ttl", "0"}, 2, "--lease-ttl must be at least 1s, got 0s"},
		{"lease ttl from env", []string{"GORUNNER_LEASE_TTL=-1s"}, []string{"mcp"}, 2, "--lease-ttl must be at least 1s, got -1s"},
		{"bad log level", []string{"GORUNNER_LOG_LEVEL=loud"}, []string{"serve", "--addr", "127.0.0.1:0"}, 2, `--log-level "loud": use debug, info, warn or error`},
		{"bad log format", nil, []string{"mcp", "--log-format", "xml"}, 2, `--log-format "xml": use text or json`},
		{"bad store", []string{"GORUNNER_STORE=ftp://x"}, []string{"serve", "--addr", "127.0.0.1:0"}, 2, `--store "ftp://x": use sqlite:PATH, redis://HOST:PORT/DB or postgres://USER@HOST:PORT/DB`},
		{"store without path", nil, []string{"mcp", "--store", "sqlite:"}, 2, "--store sqlite: needs a path"},
		{"bad public URL", []string{"GORUNNER_PUBLIC_URL=javascript:alert(1)"}, []string{"serve", "--addr", "127.0.0.1:0"}, 2, `--public-url: public URL "javascript:alert(1)": want an absolute http(s) URL`},
		{"negative shutdown timeout", []string{"GORUNNER_SHUTDOWN_TIMEOUT=-5s"}, []string{"serve"}, 2, "--shutdown-timeout must not be negative, got -5s"},
		{"unreachable server", []string{"GORUNNER_URL=http://" + closed}, []string{"workflow", "list"}, 1, "cannot reach GoRunner at http://" + closed + ": start it with `gorunner serve`, or set GORUNNER_URL"},
		{"revoked token", []string{"GORUNNER_TOKEN=" + revoked}, []string{"runs", "list"}, 1, "the server refused the token (revoked or wrong): set GORUNNER_TOKEN to a valid token"},
		{"unknown workflow", nil, []string{"run", "nope"}, 1, "NOT_FOUND:"},
		{"bad --http-allow", nil, []string{"serve", "--http-allow", "127.0.0.1", "--http-allow", "not a host"}, 2, `--http-allow: http allow rule "not a host": not a CIDR, IP address or host name`},
		{"bad GORUNNER_HTTP_ALLOW", []string{"GORUNNER_HTTP_ALLOW=10.0.0.0/8,host:0"}, []string{"mcp"}, 2, `--http-allow: http allow rule "host:0": port "0" is not 1-65535`},
		{"no hook", nil, []string{"hook", "resume", "confirm:9", "--payload", "{}"}, 1, "NOT_FOUND:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := cliEnv(t, s, tc.env, tc.args...)
			require.Equal(t, tc.code, code, stderr)
			if tc.want == "" {
				require.Empty(t, stderr)
				return
			}
			require.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %q", stderr)
			require.Contains(t, stderr, tc.want)
			require.NotContains(t, stderr, "goroutine")
		})
	}

	out, stderr, code := cli(t, s, "hook", "resume", "confirm:1", "--payload", `{"ok": true}`, "-o", "table")
	require.Equal(t, 0, code, stderr)
	require.Regexp(t, `^confirm:1: payload delivered to run [0-9a-f-]{36}, now completed\n$`, out)
}

// TestServeChecksFlagsBeforeListening: serve refuses a bad flag with exit code 2 and a
// message naming it before it opens anything. The address it is given is held by the
// test, so a serve that listened first would fail on the address instead; its data
// directory would exist.
func TestServeChecksFlagsBeforeListening(t *testing.T) {
	t.Parallel()
	held, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { held.Close() })
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"public URL", nil, []string{"--public-url", "runner.example"}, `--public-url: public URL "runner.example": want an absolute http(s) URL`},
		{"public URL with user info", []string{"GORUNNER_PUBLIC_URL=https://u:p@runner.example"}, nil, "--public-url: public URL"},
		{"public URL with a query", nil, []string{"--public-url", "https://runner.example/?a=1"}, "--public-url: public URL"},
		{"allowed origin with a path", nil, []string{"--allowed-origins", "https://a.example,https://b.example/app"}, `--allowed-origins: origin "https://b.example/app": want SCHEME://HOST[:PORT]`},
		{"allowed origin null", []string{"GORUNNER_ALLOWED_ORIGINS=null"}, nil, `--allowed-origins: origin "null"`},
		{"log format", nil, []string{"--log-format", "xml"}, `--log-format "xml": use text or json`},
		{"log level", []string{"GORUNNER_LOG_LEVEL=loud"}, nil, `--log-level "loud"`},
		{"store", nil, []string{"--store", "ftp://x"}, `--store "ftp://x": use sqlite:PATH, redis://HOST:PORT/DB or postgres://USER@HOST:PORT/DB`},
		{"store without path", nil, []string{"--store", "sqlite:"}, "--store sqlite: needs a path"},
		{"http allow", nil, []string{"--http-allow", "not a host"}, `--http-allow: http allow rule "not a host"`},
		{"lease ttl", nil, []string{"--lease-ttl", "1ms"}, "--lease-ttl must be at least 1s"},
		{"address without a port", nil, []string{"--addr", "8080"}, `--addr "8080": want HOST:PORT`}, // the last --addr wins
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dataDir := filepath.Join(t.TempDir(), "data")
			cmd := exec.Command(binary(t), append([]string{"serve", "--addr", held.Addr().String(), "--data-dir", dataDir}, tc.args...)...)
			cmd.Env = append(os.Environ(), tc.env...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee, stderr.String())
			require.Equal(t, 2, ee.ExitCode(), stderr.String())
			require.Equal(t, 1, strings.Count(stderr.String(), "\n"), "one line: %q", stderr.String())
			require.Contains(t, stderr.String(), tc.want)
			require.NoDirExists(t, dataDir, "nothing opened")
		})
	}
}

// revokedToken creates a token through the API and revokes it.
func revokedToken(t *testing.T, s *server) string {
	t.Helper()
	status, body := call(t, s.adminToken(t), "POST", s.url+"/api/tokens", `{"name": "gone"}`)
	require.Equal(t, 201, status, body)
	tok := body["data"].(map[string]any)
	status, _ = call(t, s.adminToken(t), "DELETE", s.url+"/api/tokens/"+tok["id"].(string), "")
	require.Equal(t, 204, status)
	return tok["token"].(string)
}

// closedAddress is a loopback address nothing listens on.
func closedAddress(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}
