package main_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// binary builds the real gorunner binary once per test process.
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "gorunner-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "gorunner")
		out, err := exec.Command("go", "build", "-race", "-o", binPath, "github.com/gorunner/gorunner/cmd/gorunner").CombinedOutput()
		if err != nil {
			buildErr = &buildError{out: string(out), err: err}
		}
	})
	require.NoError(t, buildErr)
	return binPath
}

type buildError struct {
	out string
	err error
}

func (e *buildError) Error() string { return e.err.Error() + ": " + e.out }

// server is one running `gorunner serve`.
type server struct {
	cmd     *exec.Cmd
	url     string
	dataDir string
	stdout  *bytes.Buffer
}

// startServe starts `gorunner serve` on a free port and waits until it listens.
func startServe(t *testing.T, dataDir string, args ...string) *server {
	t.Helper()
	return startServeLogging(t, dataDir, os.Stderr, args...)
}

// startServeLogging is startServe with the server's log (its stderr) going to logs.
func startServeLogging(t *testing.T, dataDir string, logs io.Writer, args ...string) *server {
	t.Helper()
	cmd := exec.Command(binary(t), serveArgs(dataDir, args...)...)
	cmd.Env = append(os.Environ(), "GORUNNER_LOG_LEVEL=warn")
	cmd.Stderr = logs
	return startServeCmd(t, cmd, dataDir)
}

// serveArgs are the arguments of `gorunner serve` on a free port over dataDir.
func serveArgs(dataDir string, args ...string) []string {
	return append([]string{"serve", "--addr", "127.0.0.1:0", "--data-dir", dataDir}, args...)
}

// startServeCmd starts cmd, a `gorunner serve`, and waits until it listens.
func startServeCmd(t *testing.T, cmd *exec.Cmd, dataDir string) *server {
	t.Helper()
	pipe, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	s := &server{cmd: cmd, dataDir: dataDir, stdout: &bytes.Buffer{}}
	t.Cleanup(func() { s.stop() })
	urlc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			line := sc.Text()
			s.stdout.WriteString(line + "\n")
			if rest, ok := strings.CutPrefix(line, "GoRunner listening on "); ok {
				urlc <- rest
			}
		}
	}()
	select {
	case s.url = <-urlc:
	case <-time.After(60 * time.Second):
		t.Fatal("gorunner serve did not start listening")
	}
	return s
}

func (s *server) stop() {
	if s.cmd.ProcessState == nil {
		_ = s.cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = s.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = s.cmd.Process.Kill()
			<-done
		}
	}
}

func (s *server) adminToken(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(s.dataDir, "admin-token"))
	require.NoError(t, err)
	return strings.TrimSpace(string(raw))
}

func call(t *testing.T, token, method, url, body string, header ...string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	req.Host = req.Header.Get("Host") // the Host header is sent from req.Host; empty means the URL's
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	var out map[string]any
	if len(raw) > 0 {
		require.NoError(t, json.Unmarshal(raw, &out), string(raw))
	}
	return res.StatusCode, out
}

// TestFirstWorkflowWalkthrough walks the curl flow of docs/getting-started.md against the
// real binary, asserting each answer (TestDocsExamples runs the page's text itself).
func TestFirstWorkflowWalkthrough(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := startServe(t, dir, "--examples")
	token := s.adminToken(t)
	require.NotContains(t, s.stdout.String(), token, "the admin token is not printed: stdout is a pipe, not a terminal")
	info, err := os.Stat(filepath.Join(dir, "admin-token"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())

	def := `{
	  "name": "hello",
	  "description": "Says hello.",
	  "input": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
	  "steps": [{"id": "greet", "set": {"message": "Hello, ${{ input.name }}!"}}]
	}`
	status, body := call(t, token, "POST", s.url+"/api/workflows", def, "Content-Type", "application/json")
	require.Equal(t, 201, status, body)
	status, body = call(t, token, "POST", s.url+"/api/workflows/hello/publish", "")
	require.Equal(t, 201, status, body)
	require.EqualValues(t, 1, body["data"].(map[string]any)["version"])
	status, body = call(t, token, "GET", s.url+"/api/workflows/hello", "")
	require.Equal(t, 200, status)
	require.Equal(t, true, body["data"].(map[string]any)["published"])

	status, first := call(t, token, "POST", s.url+"/api/workflows/hello/run", `{"name": "Ada"}`, "Idempotency-Key", "hello-ada-1")
	require.Equal(t, 202, status, first)
	status, again := call(t, token, "POST", s.url+"/api/workflows/hello/run", `{"name": "Ada"}`, "Idempotency-Key", "hello-ada-1")
	require.Equal(t, 202, status)
	runID := first["data"].(map[string]any)["id"].(string)
	require.Equal(t, runID, again["data"].(map[string]any)["id"])

	status, body = call(t, token, "GET", s.url+"/api/runs/"+runID+"?wait=30s", "")
	require.Equal(t, 200, status)
	run := body["data"].(map[string]any)
	require.Equal(t, "completed", run["status"], run)
	require.Equal(t, map[string]any{"message": "Hello, Ada!"}, run["output"])

	status, body = call(t, token, "GET", s.url+"/api/workflows/greet", "")
	require.Equal(t, 200, status, "--examples published the greet example")
	require.Equal(t, true, body["data"].(map[string]any)["published"])
}

// TestSecondStartChangesNothing restarts serve --examples on the same data directory.
func TestSecondStartChangesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := startServe(t, dir, "--examples")
	token := s.adminToken(t)
	_, before := call(t, token, "GET", s.url+"/api/workflows", "")
	s.stop()
	s2 := startServe(t, dir, "--examples")
	require.NotContains(t, s2.stdout.String(), "Admin token", "no new admin token on a second start")
	_, after := call(t, token, "GET", s2.url+"/api/workflows", "")
	require.Len(t, after["data"], len(before["data"].([]any)))
	require.Len(t, after["data"], 8, "the eight shipped examples")
	for _, page := range []map[string]any{before, after} {
		for _, w := range page["data"].([]any) {
			w := w.(map[string]any)
			w["webhookUrl"] = w["webhookUrl"].(string)[strings.Index(w["webhookUrl"].(string), "/webhooks/"):]
		}
	}
	require.Equal(t, before["data"], after["data"], "the second start changed nothing but the port in links")
}
