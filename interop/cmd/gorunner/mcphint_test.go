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

// TestMCPSaysWhenNothingIsPublished: `gorunner mcp` on a store that publishes no workflow
// says so on stderr, with what to do; with --examples it publishes them and says nothing.
func TestMCPSaysWhenNothingIsPublished(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		hint bool
	}{{nil, true}, {[]string{"--examples"}, false}} {
		cmd := exec.Command(binary(t), append([]string{"mcp", "--data-dir", t.TempDir()}, tc.args...)...)
		cmd.Env = append(os.Environ(), "GORUNNER_TOKEN=", "GORUNNER_LOG_LEVEL=info")
		stdin, err := cmd.StdinPipe()
		require.NoError(t, err)
		defer stdin.Close()
		stderr := &syncbuf.Buffer{}
		cmd.Stderr = stderr
		require.NoError(t, cmd.Start())
		require.Eventually(t, func() bool { return strings.Contains(stderr.String(), "serving MCP over stdio") }, 30*time.Second, 20*time.Millisecond)
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
