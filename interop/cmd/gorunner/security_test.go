package main_test

import (
	"bufio"
	"context"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/internal/syncbuf"
)

// TestDataFilesArePrivate starts serve under umask 000 on a data directory it creates:
// the directory is 0700 and the database (with -wal and -shm), admin-token and secret.key
// are 0600. stdout is a pipe, so the admin token is not printed; the log names its file.
func TestDataFilesArePrivate(t *testing.T) {
	t.Parallel()
	dataDir := filepath.Join(t.TempDir(), "fresh")
	logs := &syncbuf.Buffer{}
	cmd := exec.Command("sh", append([]string{"-c", `umask 000; exec "$0" "$@"`, binary(t)}, serveArgs(dataDir)...)...)
	cmd.Env = append(os.Environ(), "GORUNNER_LOG_LEVEL=info")
	cmd.Stderr = logs
	s := startServeCmd(t, cmd, dataDir)
	token := s.adminToken(t)
	status, _ := call(t, token, "POST", s.url+"/api/workflows", `{"name": "w", "input": {"type": "object"}, "steps": [{"id": "a", "set": 1}]}`)
	require.Equal(t, http.StatusCreated, status)

	dir, err := os.Stat(dataDir)
	require.NoError(t, err)
	require.Equal(t, fs.FileMode(0o700), dir.Mode().Perm(), "data directory")
	for _, name := range []string{"gorunner.db", "gorunner.db-wal", "gorunner.db-shm", "admin-token", "secret.key"} {
		fi, err := os.Stat(filepath.Join(dataDir, name))
		require.NoError(t, err)
		require.Equal(t, fs.FileMode(0o600), fi.Mode().Perm(), name)
	}
	require.Contains(t, logs.String(), filepath.Join(dataDir, "admin-token"), "the log says where the token is")
	s.stop()
	require.NotContains(t, s.stdout.String(), token, "the token is not printed when stdout is not a terminal")
	require.NotContains(t, logs.String(), token, "nor logged")
}

// TestAdminTokenPrintedOnTerminal runs serve with a terminal as stdout (script(1) gives it
// one): the token is printed there, once.
func TestAdminTokenPrintedOnTerminal(t *testing.T) {
	t.Parallel()
	script, err := exec.LookPath("script")
	if err != nil {
		t.Skip("script(1) is not installed: no terminal to give serve")
	}
	dataDir := t.TempDir()
	line := strings.Join(append([]string{binary(t)}, serveArgs(dataDir)...), " ")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, script, "-qec", line, "/dev/null")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
		_ = cmd.Wait()
	}()
	sc := bufio.NewScanner(out)
	var printed string
	for sc.Scan() {
		text := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(text, "Admin token") && sc.Scan() {
			printed = strings.TrimSpace(sc.Text())
		}
		if strings.HasPrefix(text, "GoRunner listening on") {
			break
		}
	}
	raw, err := os.ReadFile(filepath.Join(dataDir, "admin-token"))
	require.NoError(t, err)
	require.Equal(t, strings.TrimSpace(string(raw)), printed)
}

// TestPublicURLAndAllowedOrigins: --public-url names every absolute URL whatever the Host
// header says, and GORUNNER_ALLOWED_ORIGINS adds browser origins for /mcp.
func TestPublicURLAndAllowedOrigins(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	cmd := exec.Command(binary(t), serveArgs(dataDir, "--public-url", "https://runner.example:8443/")...)
	cmd.Env = append(os.Environ(), "GORUNNER_LOG_LEVEL=warn", "GORUNNER_ALLOWED_ORIGINS=https://a.example,https://b.example")
	cmd.Stderr = os.Stderr
	s := startServeCmd(t, cmd, dataDir)
	token := s.adminToken(t)
	status, body := call(t, token, "POST", s.url+"/api/workflows", `{"name": "w", "input": {"type": "object"}, "steps": [{"id": "a", "set": 1}]}`, "Host", "evil.example")
	require.Equal(t, http.StatusCreated, status)
	require.True(t, strings.HasPrefix(body["data"].(map[string]any)["webhookUrl"].(string), "https://runner.example:8443/webhooks/"), body)

	post := func(origin, tok string) *http.Response {
		req, err := http.NewRequest("POST", s.url+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Origin", origin)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		res.Body.Close()
		return res
	}
	require.Equal(t, http.StatusOK, post("https://b.example", token).StatusCode)
	require.Equal(t, http.StatusOK, post("https://runner.example:8443", token).StatusCode)
	require.Equal(t, http.StatusForbidden, post("http://evil.example", token).StatusCode)
	challenge := post("https://a.example", "").Header.Get("WWW-Authenticate")
	require.Contains(t, challenge, `resource_metadata="https://runner.example:8443/.well-known/oauth-protected-resource/mcp"`)
}
