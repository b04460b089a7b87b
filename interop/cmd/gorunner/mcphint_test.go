package main_test

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/internal/syncbuf"
)

// startMCP starts `gorunner mcp` as local (env added to the environment) over a new data
// directory, with its client's stdin held open, and waits until it serves; it returns the
// command and its stderr.
func startMCP(t *testing.T, env []string, args ...string) (*exec.Cmd, *syncbuf.Buffer) {
	t.Helper()
	cmd := exec.Command(binary(t), append([]string{"mcp", "--data-dir", t.TempDir()}, args...)...)
	cmd.Env = append(append(os.Environ(), "GORUNNER_TOKEN="), env...)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	t.Cleanup(func() { stdin.Close() })
	stderr := &syncbuf.Buffer{}
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	require.Eventually(t, func() bool { return strings.Contains(stderr.String(), "serving MCP over stdio") }, 30*time.Second, 20*time.Millisecond)
	return cmd, stderr
}

// TestMCPSaysWhenNothingIsPublished: `gorunner mcp` on a store that publishes no workflow
// says so on stderr, with what to do; with --examples it publishes them and says nothing.
func TestMCPSaysWhenNothingIsPublished(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		hint bool
	}{{nil, true}, {[]string{"--examples"}, false}} {
		cmd, stderr := startMCP(t, []string{"GORUNNER_LOG_LEVEL=info"}, tc.args...)
		if tc.hint {
			require.Contains(t, stderr.String(), "no workflow is published")
			require.Contains(t, stderr.String(), "--examples")
		} else {
			require.NotContains(t, stderr.String(), "no workflow is published")
			require.Contains(t, stderr.String(), "example workflow created and published")
		}
		require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
		requireExitsCleanly(t, cmd, 15*time.Second)
	}
}
