package mcpserver_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/mcpserver"
)

// isError matches a JSON-RPC error answer.
func isError(m map[string]any) bool { return m["error"] != nil }

// requireLineTooLong checks the answer to a line over the stdio cap.
func requireLineTooLong(t *testing.T, m map[string]any) {
	t.Helper()
	require.Nil(t, m["id"])
	require.EqualValues(t, -32600, m["error"].(map[string]any)["code"])
	require.Contains(t, m["error"].(map[string]any)["message"], fmt.Sprint(mcpserver.MaxStdioLineBytes))
}

// An endless line (no newline ever comes) is refused once it passes the cap, while it is
// still being sent; the server skips it to its newline and the session goes on.
func TestStdioEndlessLineIsRefusedAndTheSessionGoesOn(t *testing.T) {
	f := newFixture(t, greetDef)
	c := f.stdio(t)
	stop, sent := make(chan struct{}), make(chan error, 1)
	go func() {
		chunk := bytes.Repeat([]byte("x"), 64<<10)
		for {
			select {
			case <-stop:
				_, err := c.w.Write([]byte("\n"))
				sent <- err
				return
			default:
			}
			if _, err := c.w.Write(chunk); err != nil {
				sent <- err
				return
			}
		}
	}()
	refusal := c.next(t, isError) // the old reader held the line and never answered
	close(stop)
	require.NoError(t, <-sent)
	requireLineTooLong(t, refusal)
	c.send(t, map[string]any{"id": 7, "method": "ping"})
	require.Contains(t, c.next(t, byID(7)), "result")
}

// A line of exactly MaxStdioLineBytes (newline included) is served; one byte more is not.
func TestStdioLineCapBoundary(t *testing.T) {
	f := newFixture(t, greetDef)
	c := f.stdio(t)
	padded := func(id int, size int) []byte {
		msg := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, id)
		return []byte(msg + strings.Repeat(" ", size-len(msg)-1) + "\n")
	}
	_, err := c.w.Write(padded(1, mcpserver.MaxStdioLineBytes))
	require.NoError(t, err)
	require.Contains(t, c.next(t, byID(1)), "result")
	_, err = c.w.Write(padded(2, mcpserver.MaxStdioLineBytes+1))
	require.NoError(t, err)
	requireLineTooLong(t, c.next(t, isError))
	c.send(t, map[string]any{"id": 3, "method": "ping"})
	require.Contains(t, c.next(t, byID(3)), "result")
}
