package main_test

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"testing"

	"github.com/creack/pty"
	"github.com/stretchr/testify/require"
)

const slowYAML = `name: slow-hello
input: { type: object, properties: { name: { type: string } } }
steps:
  - id: pause
    sleep: { duration: 1s }
  - id: greet
    set: { message: "Hello, ${{ input.name }}!" }
`

// TestRunWaitLiveOnTerminal runs `gorunner run --wait` in a pseudo-terminal and checks the
// live view: lines redrawn in place, a spinner while the sleep step runs, a mark and a
// duration per finished step, and the result.
func TestRunWaitLiveOnTerminal(t *testing.T) {
	t.Parallel()
	s := startServe(t, t.TempDir())
	_, stderr, code := cli(t, s, "workflow", "apply", writeFile(t, t.TempDir(), "slow.yaml", slowYAML))
	require.Equal(t, 0, code, stderr)

	cmd := exec.Command(binary(t), "run", "slow-hello", "--input", `{"name": "Ada"}`, "--wait", "--data-dir", s.dataDir)
	cmd.Env = append(os.Environ(), "GORUNNER_URL="+s.url, "GORUNNER_TOKEN=")
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 24, Cols: 100})
	require.NoError(t, err)
	defer tty.Close()
	var screen bytes.Buffer
	copied := make(chan struct{})
	go func() {
		_, _ = io.Copy(&screen, tty) // ends with EIO once the command has exited
		close(copied)
	}()
	require.NoError(t, cmd.Wait())
	<-copied

	out := screen.String()
	require.Contains(t, out, "\x1b[?25l", "the cursor is hidden while the view redraws")
	require.Contains(t, out, "\x1b[3A", "the header and two step lines are redrawn in place")
	require.Regexp(t, `[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]\x1b\[0m pause\s+(running|waiting)`, out, "a spinner while the sleep step runs")
	require.Regexp(t, `✓\x1b\[0m pause\s+completed 1(\.\d)?s`, out, "the sleep step ends with its duration")
	require.Regexp(t, `✓\x1b\[0m greet\s+completed \d+(\.\d+)?[mµn]?s`, out)
	require.Contains(t, out, `completed`+"\x1b[0m"+` in 1`)
	require.Contains(t, out, `→ {"message":"Hello, Ada!"}`)
	require.Contains(t, out, "\x1b[?25h", "the cursor is shown again")
}
