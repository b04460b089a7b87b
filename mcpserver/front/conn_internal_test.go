package front

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/auth"
)

// handlerFunc is a Handler of a test.
type handlerFunc func(ctx context.Context, raw json.RawMessage) mcp.JSONRPCMessage

func (f handlerFunc) HandleMessage(ctx context.Context, raw json.RawMessage) mcp.JSONRPCMessage {
	return f(ctx, raw)
}

// idOf is the id of a request, decoded.
func idOf(raw json.RawMessage) any {
	var m struct {
		ID any `json:"id"`
	}
	_ = json.Unmarshal(raw, &m)
	return m.ID
}

// session is an initialised mcp-go session of a test.
type session struct{}

func (session) Initialize()                                         {}
func (session) Initialized() bool                                   { return true }
func (session) NotificationChannel() chan<- mcp.JSONRPCNotification { return nil }
func (session) SessionID() string                                   { return "test" }

// memConn is a Conn over memory: what it is sent or replied goes to out, in order.
type memConn struct {
	calls   *Calls
	out     chan any
	answers sync.WaitGroup
	// refuse makes Admit refuse every task request.
	refuse bool
}

func (c *memConn) Send(msg any) error { c.out <- msg; return nil }
func (c *memConn) Reply(r Reply)      { c.out <- r }
func (c *memConn) Admit(Task, *Message) (string, bool, bool) {
	return "mem", true, !c.refuse
}
func (c *memConn) Go(answer func()) { c.answers.Go(answer) }
func (c *memConn) Calls() *Calls    { return c.calls }

// newConn is a memConn of principal "ada" whose calls (nil: none) h answers, bounded by
// cfg, until the test ends.
func newConn(t *testing.T, h Handler, cfg CallsConfig) (context.Context, *memConn) {
	t.Helper()
	ctx := auth.WithPrincipal(context.Background(), auth.Principal{ID: "ada"})
	c := &memConn{out: make(chan any, 1024)}
	if h != nil {
		c.calls = NewCalls(h, c.Send, cfg)
		c.calls.Serve(server.NewMCPServer("test", "1").WithContext(ctx, session{}))
		t.Cleanup(c.calls.Stop)
	}
	t.Cleanup(c.answers.Wait)
	return ctx, c
}

// next is the next message c was sent or replied.
func (c *memConn) next(t *testing.T) any {
	t.Helper()
	select {
	case m := <-c.out:
		return m
	case <-time.After(10 * time.Second):
		require.FailNow(t, "nothing was sent")
		return nil
	}
}

// none checks that nothing more was sent.
func (c *memConn) none(t *testing.T) {
	t.Helper()
	select {
	case m := <-c.out:
		require.FailNow(t, "sent", "%v", m)
	default:
	}
}
