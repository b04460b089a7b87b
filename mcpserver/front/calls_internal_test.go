package front

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"
)

// gate is a Handler whose calls wait, once entered, until release lets one go or their
// context ends; it counts how many are in it, at most were, and ever entered, and answers
// "cancelled" for a call whose context ended, else "ok".
type gate struct {
	running, most, entered atomic.Int32
	in                     chan struct{}
	release                chan struct{}
}

func newGate() *gate { return &gate{in: make(chan struct{}, 1024), release: make(chan struct{})} }

func (g *gate) HandleMessage(ctx context.Context, raw json.RawMessage) mcp.JSONRPCMessage {
	n := g.running.Add(1)
	defer g.running.Add(-1)
	for m := g.most.Load(); n > m && !g.most.CompareAndSwap(m, n); m = g.most.Load() {
	}
	g.entered.Add(1)
	g.in <- struct{}{}
	select {
	case <-g.release:
	case <-ctx.Done():
	}
	text := "ok"
	if ctx.Err() != nil {
		text = "cancelled"
	}
	return mcp.NewJSONRPCResultResponse(mcp.NewRequestId(idOf(raw)), mcp.NewToolResultText(text))
}

// await waits until a call entered the gate.
func (g *gate) await(t *testing.T) {
	t.Helper()
	select {
	case <-g.in:
	case <-time.After(10 * time.Second):
		require.FailNow(t, "no call entered")
	}
}

// callLine is a plain tools/call with the given id (a JSON value).
func callLine(id string) []byte {
	return []byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"gate","arguments":{}}}`)
}

// cancelLine is notifications/cancelled naming request id (a JSON value).
func cancelLine(id string) []byte {
	return []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + id + `,"reason":"no longer needed"}}`)
}

// noTasks is a task layer that takes nothing.
type noTasks struct{}

func (noTasks) Task(context.Context, *Message) (Task, bool) { return nil, false }

// TestCallsCancelReachesACallNotYetHandled: a tools/call taken by Calls (a plain one, and
// one plainToolsCall cannot tell), then notifications/cancelled naming it, read before the
// call reached the handler (mcp-go's HandleMessage, which registers it for cancels only
// then): the cancel is taken, the call's context is cancelled, and the call is not
// answered.
func TestCallsCancelReachesACallNotYetHandled(t *testing.T) {
	lines := map[string][]byte{
		"plain":     callLine("1"),
		"not plain": []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"gate","arguments":{"s":"a\\b"}}}`),
	}
	for name, line := range lines {
		t.Run(name, func(t *testing.T) {
			entered, release, cancelled := make(chan struct{}), make(chan struct{}), make(chan bool, 1)
			ctx, c := newConn(t, handlerFunc(func(ctx context.Context, raw json.RawMessage) mcp.JSONRPCMessage {
				close(entered)
				<-release
				cancelled <- ctx.Err() != nil
				return mcp.NewJSONRPCResultResponse(mcp.NewRequestId(idOf(raw)), mcp.NewToolResultText("ok"))
			}), CallsConfig{Max: 4, MaxQueued: 4})
			r := NewRouter(noTasks{}, &Replies{})
			outcome, _ := r.Route(ctx, line, c)
			require.Equal(t, Taken, outcome)
			<-entered
			outcome, _ = r.Route(ctx, cancelLine("1"), c)
			require.Equal(t, Taken, outcome, "the cancel is the front layer's")
			close(release)
			require.True(t, <-cancelled)
			c.calls.Stop()
			c.none(t)
		})
	}
}

// TestCallsCancelOfAQueuedCall: with Max calls held, one more waits in the queue.
// Cancelled there, it is never run; the held ones, cancelled while held, end with their
// context cancelled; none is answered.
func TestCallsCancelOfAQueuedCall(t *testing.T) {
	const max = 3
	g := newGate()
	ctx, c := newConn(t, g, CallsConfig{Max: max, MaxQueued: 2})
	r := NewRouter(noTasks{}, &Replies{})
	for id := 1; id <= max+1; id++ {
		outcome, _ := r.Route(ctx, callLine(strconv.Itoa(id)), c)
		require.Equal(t, Taken, outcome)
	}
	for range max {
		g.await(t)
	}
	for id := max + 1; id >= 1; id-- { // the queued one first: the others' end would free it a place
		outcome, _ := r.Route(ctx, cancelLine(strconv.Itoa(id)), c)
		require.Equal(t, Taken, outcome)
	}
	require.Eventually(t, func() bool { return g.running.Load() == 0 }, 10*time.Second, time.Millisecond)
	c.calls.Stop()
	require.Equal(t, int32(max), g.entered.Load(), "the queued call ran although cancelled")
	c.none(t)
}

// TestCallsNeverRunPastTheBound: with Max calls running, one ends at a time while two
// more are taken, the first into the free place, the second into the queue, round after
// round: never more than Max run at once, and every call taken runs once a place frees.
func TestCallsNeverRunPastTheBound(t *testing.T) {
	const max = 4
	g := newGate()
	ctx, c := newConn(t, g, CallsConfig{Max: max, MaxQueued: 8})
	r := NewRouter(noTasks{}, &Replies{})
	id := 0
	call := func() {
		id++
		outcome, _ := r.Route(ctx, callLine(strconv.Itoa(id)), c)
		require.Equal(t, Taken, outcome)
	}
	for range max {
		call()
		g.await(t)
	}
	for round := range 50 {
		g.release <- struct{}{}
		call()
		call()
		g.await(t)
		require.LessOrEqual(t, g.most.Load(), int32(max), "round %d", round)
		g.release <- struct{}{} // the queued call takes its place
		g.await(t)
		require.LessOrEqual(t, g.most.Load(), int32(max), "round %d", round)
	}
	require.Equal(t, int32(max+100), g.entered.Load())
}

// taken is how many calls c holds registered for their cancels.
func (c *Calls) taken() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.calls)
}

// TestCallsCancelFloodOfUnknownIDs: 100,000 (-short: 10,000) notifications/cancelled
// naming requests the session never had (numbers and strings), with a tools/call after
// every 1,000, keep nothing: they are mcp-go's, and once a call is answered the session
// holds at most that call, none once it is forgotten; every call is answered, none
// cancelled.
func TestCallsCancelFloodOfUnknownIDs(t *testing.T) {
	ctx, c := newConn(t, handlerFunc(func(_ context.Context, raw json.RawMessage) mcp.JSONRPCMessage {
		return mcp.NewJSONRPCResultResponse(mcp.NewRequestId(idOf(raw)), mcp.NewToolResultText("ok"))
	}), CallsConfig{Max: 4, MaxQueued: 4})
	r := NewRouter(noTasks{}, &Replies{})
	const every = 1_000
	cancels := 100_000
	if testing.Short() {
		cancels = 10_000
	}
	for i := every; i <= cancels; i += every {
		for n := i - every + 1; n <= i; n++ {
			id := strconv.Itoa(1_000_000 + n)
			if n%2 == 0 {
				id = strconv.Quote("gone-" + id)
			}
			outcome, _ := r.Route(ctx, cancelLine(id), c)
			require.Equal(t, Pass, outcome)
		}
		id := strconv.Quote(fmt.Sprint("call-", i/every))
		outcome, _ := r.Route(ctx, callLine(id), c)
		require.Equal(t, Taken, outcome)
		resp, ok := c.next(t).(mcp.JSONRPCResponse)
		require.True(t, ok)
		require.Equal(t, fmt.Sprint("call-", i/every), resp.ID.Value())
		require.LessOrEqual(t, c.calls.taken(), 1, "after %d cancels", i)
	}
	require.Eventually(t, func() bool { return c.calls.taken() == 0 }, 10*time.Second, time.Millisecond)
}

// TestCallKey: request IDs mcp-go's decoding takes for the same share a key; strings and
// numbers never do; what is no ID has none.
func TestCallKey(t *testing.T) {
	key := func(id string) string {
		k, ok := callKey([]byte(id))
		require.True(t, ok, id)
		return k
	}
	require.Equal(t, key(`1`), key(`1.0`))
	require.Equal(t, key(`1`), key(`1e0`))
	require.Equal(t, key(`"a"`), key(`"\u0061"`))
	require.NotEqual(t, key(`1`), key(`"1"`))
	require.NotEqual(t, key(`1`), key(`2`))
	for _, id := range []string{`1e6`, `100000`, `1e21`, `0.0001`, `1e-7`, `-0`, `12345678901234567890`, `"1"`} {
		var v any
		require.NoError(t, json.Unmarshal([]byte(id), &v))
		require.Equal(t, fmt.Sprint(v), key(id)[1:], "%s: a key is the text mcp-go keys cancels by", id)
	}
	for _, id := range []string{``, `null`, `true`, `{}`, `[1]`, `"unterminated`} {
		_, ok := callKey([]byte(id))
		require.False(t, ok, id)
	}
}
