package main_test

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestMCPMetricsAddr runs `gorunner mcp --metrics-addr 127.0.0.1:0` and reads its /metrics
// after a tools/call over stdio: the stdio process counts tool calls, runs and store calls
// as serve does.
func TestMCPMetricsAddr(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := startServe(t, dir, "--examples")
	token := s.adminToken(t)
	s.stop()

	cmd := exec.Command(binary(t), "mcp", "--data-dir", dir, "--metrics-addr", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "GORUNNER_LOG_LEVEL=info", "GORUNNER_TOKEN="+token)
	logs, stderr := io.Pipe()
	cmd.Stderr = stderr
	t.Cleanup(func() { _ = stderr.Close() }) // after the process is waited for, ending the scan
	addr := make(chan string, 1)
	go scanMetricsAddr(logs, addr)
	m := startRawMCPCmd(t, cmd)

	res := m.request(t, 1, "tools/call", map[string]any{"name": "greet", "arguments": map[string]any{"name": "Ada"}}, time.Minute)
	require.Equal(t, "completed", res["structuredContent"].(map[string]any)["status"], res)

	var metricsURL string
	select {
	case a := <-addr:
		metricsURL = "http://" + a + "/metrics"
	case <-time.After(time.Minute):
		require.FailNow(t, "gorunner mcp logged no metrics address")
	}
	res2, err := http.Get(metricsURL)
	require.NoError(t, err)
	defer res2.Body.Close()
	require.Equal(t, http.StatusOK, res2.StatusCode)
	body, err := io.ReadAll(res2.Body)
	require.NoError(t, err)
	for _, want := range []string{
		`gorunner_mcp_tool_calls_total{outcome="ok",tool="greet"} 1`,
		`gorunner_runs_finished_total{status="completed",workflow="greet"} 1`,
		`gorunner_store_duration_seconds_count{op="create_run"}`,
		`go_goroutines`,
	} {
		require.Contains(t, string(body), want)
	}
}

var metricsAddrLine = regexp.MustCompile(`msg="serving metrics" addr=(\S+)`)

// scanMetricsAddr copies a `gorunner mcp` log to the test's stderr and sends the metrics
// address it logs.
func scanMetricsAddr(log io.Reader, addr chan<- string) {
	sc := bufio.NewScanner(log)
	for sc.Scan() {
		os.Stderr.Write(append(sc.Bytes(), '\n'))
		if m := metricsAddrLine.FindSubmatch(sc.Bytes()); m != nil {
			select {
			case addr <- string(m[1]):
			default:
			}
		}
	}
}
