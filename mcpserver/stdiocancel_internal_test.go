package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/stack/stacktest"
)

// heldServer is a Server on a fresh SQLite store whose one tool, "held", starts a run that
// stays in its http step until the test ends.
func heldServer(t *testing.T) *Server {
	t.Helper()
	ctx := context.Background()
	hold := make(chan struct{})
	gate := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-hold:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(gate.Close)
	allow, err := runner.NewEgressPolicy("127.0.0.1")
	require.NoError(t, err)
	st := stacktest.New(t, stacktest.Config{Runner: runner.Config{Egress: allow}})
	wf, err := st.Catalog.Create(ctx, fmt.Appendf(nil, `{"name":"held","input":{"type":"object"},"steps":[{"id":"gate","http":{"url":%q}}]}`, gate.URL))
	require.NoError(t, err)
	_, _, err = st.Catalog.Publish(ctx, wf.ID, auth.Local())
	require.NoError(t, err)
	s, err := New(Deps{Catalog: st.Catalog, Engine: st.Engine, Idempotency: st.Idempotency}, &Config{ToolTimeout: time.Minute})
	require.NoError(t, err)
	require.NoError(t, s.Start(ctx))
	t.Cleanup(func() { require.NoError(t, s.Stop(context.Background())) })
	t.Cleanup(func() { close(hold) }) // first: the engine stops once its run is let go
	return s
}

// stdioPipe is a client of a stdio session served over pipes.
type stdioPipe struct {
	in   io.WriteCloser
	msgs chan map[string]any // closed once the session is over and its output read
}

// serveStdioPipe serves s over stdio pipes to a client, as the admin principal.
func serveStdioPipe(t *testing.T, s *Server) *stdioPipe {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p := &stdioPipe{in: inW, msgs: make(chan map[string]any, 64)}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = s.ServeStdio(context.Background(), auth.Principal{ID: "agent", Scopes: auth.AdminScopes()}, inR, outW)
		outW.Close()
	}()
	go func() {
		defer close(p.msgs)
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				p.msgs <- m
			}
		}
	}()
	t.Cleanup(func() {
		inW.Close()
		outR.Close()
		<-served
	})
	return p
}

// send writes one line.
func (p *stdioPipe) send(t *testing.T, line string) {
	t.Helper()
	_, err := io.WriteString(p.in, line+"\n")
	require.NoError(t, err)
}

// answer waits for the response to request id (a JSON value), returning it and the
// messages read before it.
func (p *stdioPipe) answer(t *testing.T, id string) (resp map[string]any, before []map[string]any) {
	t.Helper()
	var want any
	require.NoError(t, json.Unmarshal([]byte(id), &want))
	for m := range p.msgs {
		if reflect.DeepEqual(m["id"], want) {
			return m, before
		}
		before = append(before, m)
	}
	require.FailNow(t, "the session ended without answering "+id)
	return nil, nil
}

// rest ends the session's input and returns before with every message the session wrote
// after it, once the session is over (every worker done).
func (p *stdioPipe) rest(t *testing.T, before []map[string]any) []map[string]any {
	t.Helper()
	require.NoError(t, p.in.Close())
	for m := range p.msgs { // closed once ServeStdio has returned
		before = append(before, m)
	}
	return before
}

// TestStdioCancelOvertakesNoCall: over a real stdio pipe, a tools/call on the session's
// own workers (a plain one, and one plainToolsCall cannot tell, which mcp-go's worker pool
// used to take), then notifications/cancelled naming it, read while the call's worker has
// not yet reached MCPServer.HandleMessage (held there until a ping sent after the cancel is
// answered, i.e. until every line before the ping went through mcp-go's reader). The
// cancel, read before the call registered itself with mcp-go, must still reach it: the
// call stops waiting for its run (long before its one-minute timeout) and is not answered.
func TestStdioCancelOvertakesNoCall(t *testing.T) {
	calls := map[string]string{
		"plain":     `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"held","arguments":{}}}`,
		"not plain": `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"held","arguments":{"s":"a\\b"}}}`,
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			s := heldServer(t)
			entered, release := make(chan struct{}, 1), make(chan struct{})
			s.beforeStdioCall = func(*stdioCalls) {
				entered <- struct{}{}
				<-release
			}
			c := serveStdioPipe(t, s)
			c.initialize(t)
			c.send(t, call)
			awaitEntered(t, entered)
			c.send(t, cancelLine(1))
			c.send(t, `{"jsonrpc":"2.0","id":"after","method":"ping"}`)
			c.answer(t, `"after"`)
			close(release)

			cancelled := s.metrics.calls.WithLabelValues("held", outcomeError)
			require.Eventually(t, func() bool {
				var m dto.Metric
				return cancelled.Write(&m) == nil && m.GetCounter().GetValue() == 1
			}, 10*time.Second, 10*time.Millisecond,
				"the cancel was lost: the call still waits for its run")
			require.NoError(t, c.in.Close())
			for m := range c.msgs { // closed once ServeStdio has returned: every worker is done
				require.NotEqual(t, float64(1), m["id"], "a cancelled call is not answered: %v", m)
			}
		})
	}
}

// TestStdioCancelOfAQueuedCall: with MaxStdioCalls calls held on a stdio session's
// workers, one more waits in the session's queue. Cancelled there, it is never run; the
// held ones, cancelled while held, are run with their context cancelled; none is answered.
func TestStdioCancelOfAQueuedCall(t *testing.T) {
	s := heldServer(t)
	entered, release := make(chan struct{}, MaxStdioCalls+1), make(chan struct{})
	s.beforeStdioCall = func(*stdioCalls) {
		entered <- struct{}{}
		<-release
	}
	c := serveStdioPipe(t, s)
	c.initialize(t)
	call := func(id int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"held","arguments":{}}}`, id)
	}
	for id := 1; id <= MaxStdioCalls; id++ {
		c.send(t, call(id))
	}
	for range MaxStdioCalls {
		awaitEntered(t, entered)
	}
	queued := MaxStdioCalls + 1
	c.send(t, call(queued))
	for id := 1; id <= queued; id++ {
		c.send(t, cancelLine(id))
	}
	c.send(t, `{"jsonrpc":"2.0","id":"after","method":"ping"}`)
	_, before := c.answer(t, `"after"`)
	close(release)
	for _, m := range c.rest(t, before) {
		require.NotContains(t, m, "id", "a cancelled call is not answered: %v", m)
	}
	require.Empty(t, entered, "the queued call ran although cancelled")
}

// initialize opens a 2025-11-25 session, and waits until mcp-go has read
// notifications/initialized.
func (p *stdioPipe) initialize(t *testing.T) {
	t.Helper()
	p.send(t, `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	p.answer(t, `"init"`)
	p.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	p.send(t, `{"jsonrpc":"2.0","id":"ready","method":"ping"}`)
	p.answer(t, `"ready"`) // read after notifications/initialized, in order
}

// cancelLine is notifications/cancelled naming request id.
func cancelLine(id int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d,"reason":"no longer needed"}}`, id)
}

// awaitEntered waits for a call to reach Server.beforeStdioCall.
func awaitEntered(t *testing.T, entered <-chan struct{}) {
	t.Helper()
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		require.FailNow(t, "the call never reached the session's workers")
	}
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

// addTool adds to s's stdio environment a tool with no input schema, made one of the
// companions, which the call hook lets through.
func addTool(s *Server, name string, handler server.ToolHandlerFunc) {
	s.companionSchemas[name] = nil
	s.envs[runner.EnvProduction].mcp.AddTool(mcp.NewTool(name), handler)
}

// probeTool adds to s's stdio environment (addTool) a tool "probe" that, once entered,
// waits for release, then answers "cancelled" when its context ended meanwhile, else "ok";
// s serves no session yet.
func probeTool(s *Server) (entered chan struct{}, release chan struct{}) {
	entered, release = make(chan struct{}, 1), make(chan struct{})
	addTool(s, "probe", func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		entered <- struct{}{}
		<-release
		if ctx.Err() != nil {
			return mcp.NewToolResultText("cancelled"), nil
		}
		return mcp.NewToolResultText("ok"), nil
	})
	return entered, release
}

// TestStdioCancelOfAnotherIDWithTheSameText: a notifications/cancelled naming no call, but
// an ID with the text of a running call's ID (the string "1" for the call 1: mcp-go keys
// the requests it cancels by fmt's %v of the ID, whatever its type), cancels nothing: the
// call, once released, answers as not cancelled.
func TestStdioCancelOfAnotherIDWithTheSameText(t *testing.T) {
	cases := []struct{ call, cancel string }{
		{`1`, `"1"`},
		{`"1"`, `1`},
		{`"1e+06"`, `1000000`},
		{`"true"`, `true`},
		{`"<nil>"`, `null`},
		{`"[1]"`, `[1]`},
	}
	for _, tc := range cases {
		t.Run(tc.call+" cancel "+tc.cancel, func(t *testing.T) {
			s := heldServer(t)
			entered, release := probeTool(s)
			c := serveStdioPipe(t, s)
			c.initialize(t)
			c.send(t, `{"jsonrpc":"2.0","id":`+tc.call+`,"method":"tools/call","params":{"name":"probe","arguments":{}}}`)
			awaitEntered(t, entered) // in the tool handler: mcp-go has the call among its requests
			c.send(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`+tc.cancel+`}}`)
			c.send(t, `{"jsonrpc":"2.0","id":"after","method":"ping"}`)
			c.answer(t, `"after"`) // every line before the ping went through mcp-go's reader
			close(release)
			resp, _ := c.answer(t, tc.call)
			require.Contains(t, fmt.Sprint(resp["result"]), "text:ok", "the call was cancelled by a cancel naming %s: %v", tc.cancel, resp)
		})
	}
}

// TestStdioCancelWithANullID: notifications/cancelled with "id": null, which mcp-go takes
// for a notification, reaches a running call as one without an id does: the call is not
// answered.
func TestStdioCancelWithANullID(t *testing.T) {
	s := heldServer(t)
	entered, release := probeTool(s)
	c := serveStdioPipe(t, s)
	c.initialize(t)
	c.send(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"probe","arguments":{}}}`)
	awaitEntered(t, entered)
	c.send(t, `{"jsonrpc":"2.0","id":null,"method":"notifications/cancelled","params":{"requestId":1}}`)
	c.send(t, `{"jsonrpc":"2.0","id":"after","method":"ping"}`)
	_, before := c.answer(t, `"after"`)
	close(release)
	for _, m := range c.rest(t, before) {
		require.NotEqual(t, float64(1), m["id"], "a cancelled call is not answered: %v", m)
	}
}

// taken is how many calls the session holds registered for their cancels.
func (c *stdioCalls) taken() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.calls)
}

// TestStdioCancelFloodOfUnknownIDs: 100,000 (-short: 10,000) notifications/cancelled
// naming requests the session never had (numbers and strings), with a tools/call after
// every 1,000, keep nothing: once a call is answered the session holds at most that call,
// and none once it is forgotten; every call is answered, none cancelled.
func TestStdioCancelFloodOfUnknownIDs(t *testing.T) {
	s := heldServer(t)
	addTool(s, "echo", func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("ok"), nil
	})
	var calls atomic.Pointer[stdioCalls]
	s.beforeStdioCall = func(c *stdioCalls) { calls.Store(c) }
	c := serveStdioPipe(t, s)
	c.initialize(t)
	const every = 1_000
	cancels := 100_000
	if testing.Short() {
		cancels = 10_000
	}
	var flood []byte
	for i := every; i <= cancels; i += every {
		flood = flood[:0]
		for n := i - every + 1; n <= i; n++ {
			id := strconv.Itoa(1_000_000 + n)
			if n%2 == 0 {
				id = strconv.Quote("gone-" + id)
			}
			flood = append(flood, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`+id+"}}\n"...)
		}
		_, err := c.in.Write(flood)
		require.NoError(t, err)
		id := strconv.Quote(fmt.Sprint("call-", i/every))
		c.send(t, `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{"name":"echo","arguments":{}}}`)
		resp, _ := c.answer(t, id)
		require.Contains(t, fmt.Sprint(resp["result"]), "text:ok", "call %s: %v", id, resp)
		require.LessOrEqual(t, calls.Load().taken(), 1, "after %d cancels", i)
	}
	require.Eventually(t, func() bool { return calls.Load().taken() == 0 }, 10*time.Second, time.Millisecond)
}
