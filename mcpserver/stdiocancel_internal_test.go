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
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
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

// awaitEntered waits for a call to enter its tool.
func awaitEntered(t *testing.T, entered <-chan struct{}) {
	t.Helper()
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		require.FailNow(t, "the call never reached its tool")
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
