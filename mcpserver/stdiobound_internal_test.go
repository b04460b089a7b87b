package mcpserver

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"
)

// gauge counts the calls of a tool "gauge" inside its handler: how many are, at most were,
// and ever entered. Each stays until release lets one go, or its context ends.
type gauge struct {
	running, most, entered atomic.Int32
	release                chan struct{}
}

// gaugeTool adds the tool "gauge" to s's stdio environment (addTool); s serves no session
// yet.
func gaugeTool(s *Server) *gauge {
	g := &gauge{release: make(chan struct{})}
	addTool(s, "gauge", func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		n := g.running.Add(1)
		defer g.running.Add(-1)
		for m := g.most.Load(); n > m && !g.most.CompareAndSwap(m, n); m = g.most.Load() {
		}
		g.entered.Add(1)
		select {
		case <-g.release:
		case <-ctx.Done():
		}
		return mcp.NewToolResultText("ok"), nil
	})
	return g
}

// await waits until n calls entered the gauge in all and MaxStdioCalls are in it.
func (g *gauge) await(t *testing.T, n int32) {
	t.Helper()
	require.Eventually(t, func() bool {
		return g.entered.Load() >= n && g.running.Load() >= MaxStdioCalls
	}, 10*time.Second, time.Millisecond, "entered %d of %d", g.entered.Load(), n)
}

// TestStdioCallsNeverRunPastTheBound: with MaxStdioCalls calls running on a stdio
// session's workers, one ends; its worker, finding no call queued, is held as it goes idle
// (stdioWorkerIdle) while two more calls are read, the first taking the free place, the
// second queued. Let go, the worker must not run the queued one beside the others: never
// more than MaxStdioCalls calls run at once, and every call taken runs once a place frees.
func TestStdioCallsNeverRunPastTheBound(t *testing.T) {
	s := heldServer(t)
	g := gaugeTool(s)
	var hold atomic.Bool // the next worker going idle is held
	idling, resume := make(chan struct{}), make(chan struct{})
	s.stdioWorkerIdle = func() {
		if hold.CompareAndSwap(true, false) {
			idling <- struct{}{}
			<-resume
		}
	}
	c := serveStdioPipe(t, s)
	c.initialize(t)
	id := 0
	call := func() {
		id++
		c.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"gauge","arguments":{}}}`, id))
	}
	for range MaxStdioCalls {
		call()
	}
	g.await(t, MaxStdioCalls)
	for round := range int32(20) {
		hold.Store(true)
		g.release <- struct{}{}
		select {
		case <-idling:
		case <-time.After(10 * time.Second):
			require.FailNow(t, "the worker of the call let go never went idle")
		}
		call()
		call()
		c.send(t, `{"jsonrpc":"2.0","id":"read","method":"ping"}`)
		c.answer(t, `"read"`) // both calls were taken
		resume <- struct{}{}
		g.await(t, MaxStdioCalls+2*round+1)
		require.LessOrEqual(t, g.most.Load(), int32(MaxStdioCalls), "round %d", round)
		g.release <- struct{}{} // the queued call takes its place
		g.await(t, MaxStdioCalls+2*round+2)
		require.LessOrEqual(t, g.most.Load(), int32(MaxStdioCalls), "round %d", round)
	}
}
