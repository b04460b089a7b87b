package pgstore_test

import (
	"context"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/events"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/store"
	"github.com/gorunner/gorunner/store/pgstore"
	"github.com/gorunner/gorunner/store/pgstore/pgtest"
)

// TestUnreachableMarked: a store whose PostgreSQL goes away (here a TCP proxy in front of
// the test database, closed with its connections) answers every call, a read, a
// transaction or Ping, with store.ErrUnreachable; an error while PostgreSQL answers (no
// such run) or a call its caller gave up on is not marked.
func TestUnreachableMarked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema := pgtest.Schema(t)
	cfg := pgtest.Config(t, schema)
	p := newCutter(t, net.JoinHostPort(cfg.ConnConfig.Host, strconv.Itoa(int(cfg.ConnConfig.Port))))
	cfg.ConnConfig.Host, cfg.ConnConfig.Port = p.host()
	s, err := pgstore.OpenConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })

	_, err = s.GetRun(ctx, "none")
	require.ErrorIs(t, err, runner.ErrNotFound)
	require.NotErrorIs(t, err, store.ErrUnreachable)
	gone, cancel := context.WithCancel(ctx)
	cancel()
	_, err = s.GetRun(gone, "none")
	require.ErrorIs(t, err, context.Canceled)
	require.NotErrorIs(t, err, store.ErrUnreachable)

	p.cut()
	_, err = s.GetRun(ctx, "none")
	require.ErrorIs(t, err, store.ErrUnreachable)
	_, err = s.RequestCancel(ctx, "none", time.Now()) // a transaction
	require.ErrorIs(t, err, store.ErrUnreachable)
	_, _, err = s.ListRuns(ctx, runner.ListRunsParams{})
	require.ErrorIs(t, err, store.ErrUnreachable)
	require.ErrorIs(t, s.Ping(ctx), store.ErrUnreachable)
	_, err = s.Events().Subscribe(ctx)
	require.ErrorIs(t, err, store.ErrUnreachable)
}

// TestEventsRelisten: a listening connection that the server ends (as a restart or a cut
// would) is made again on its own: the subscriber is told it may have missed notices (All)
// and hears those sent after.
func TestEventsRelisten(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, schema := pgtest.Open(t)
	b := pgtest.OpenIn(t, schema)
	in, err := b.Events().Subscribe(ctx)
	require.NoError(t, err)

	conn, err := pgx.Connect(ctx, pgtest.URL(t))
	require.NoError(t, err)
	defer conn.Close(ctx)
	var ended int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE query = $1`, "LISTEN "+pgx.Identifier{"gorunner." + schema}.Sanitize()).Scan(&ended))
	require.Equal(t, 1, ended, "one listening connection")
	require.True(t, receive(t, in).All, "told of what it may have missed")

	require.NoError(t, a.Events().Publish(ctx, events.Message{Origin: "a", Topics: []events.Topic{events.Run("r1")}}))
	m := receive(t, in)
	require.Equal(t, events.Message{Origin: "a", Topics: []events.Topic{events.Run("r1")}}, m)
}

// receive waits for the next message of in.
func receive(t *testing.T, in <-chan events.Message) events.Message {
	t.Helper()
	select {
	case m, ok := <-in:
		require.True(t, ok, "the subscription closed")
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("no message")
		return events.Message{}
	}
}

// cutter forwards TCP connections to a server until cut, which also closes the open ones
// and refuses new ones.
type cutter struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

func newCutter(t *testing.T, target string) *cutter {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	c := &cutter{ln: ln}
	c.wg.Go(func() { c.serve(target) })
	t.Cleanup(c.cut)
	return c
}

// host is where the cutter listens, as pgconn.Config holds it.
func (c *cutter) host() (string, uint16) {
	addr := c.ln.Addr().(*net.TCPAddr)
	return addr.IP.String(), uint16(addr.Port)
}

func (c *cutter) serve(target string) {
	for {
		in, err := c.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", target)
		if err != nil {
			_ = in.Close()
			continue
		}
		c.mu.Lock()
		c.conns = append(c.conns, in, out)
		c.mu.Unlock()
		c.wg.Go(func() { _, _ = io.Copy(in, out); _ = in.Close() })
		c.wg.Go(func() { _, _ = io.Copy(out, in); _ = out.Close() })
	}
}

// cut stops accepting, closes every connection and waits for the copies to end.
func (c *cutter) cut() {
	_ = c.ln.Close()
	c.mu.Lock()
	for _, conn := range c.conns {
		_ = conn.Close()
	}
	c.conns = nil
	c.mu.Unlock()
	c.wg.Wait()
}
