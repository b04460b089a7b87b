package redisstore_test

import (
	"context"
	"io"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/store"
	"github.com/gorunner/gorunner/store/redisstore"
)

// TestUnreachableMarked: a store whose Redis goes away (here a TCP proxy in front of the
// test Redis, closed with its connections) answers every call, a command or a script, with
// store.ErrUnreachable; an error while Redis answers (no such run) or
// a call its caller gave up on is not marked.
func TestUnreachableMarked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	u, err := url.Parse(redisURL(t))
	require.NoError(t, err)
	p := newProxy(t, u.Host)
	u.Host = p.addr()
	q := u.Query()
	q.Set("max_retries", "-1") // the first failure answers: no retries to wait through
	u.RawQuery = q.Encode()
	s, err := redisstore.Open(ctx, u.String(), &redisstore.Config{Prefix: "gorunner-test:" + randomHex(t) + ":"})
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

	p.close()
	_, err = s.GetRun(ctx, "none") // HGETALL
	require.ErrorIs(t, err, store.ErrUnreachable)
	var opErr *net.OpError
	require.ErrorAs(t, err, &opErr, "the driver's error rides along")
	_, err = s.RequestCancel(ctx, "none", time.Now()) // a script
	require.ErrorIs(t, err, store.ErrUnreachable)
	_, _, err = s.ListRuns(ctx, runner.ListRunsParams{})
	require.ErrorIs(t, err, store.ErrUnreachable)
	require.ErrorIs(t, s.Ping(ctx), store.ErrUnreachable)
}

// proxy forwards TCP connections to a Redis until close, which also cuts the open ones,
// counting the bytes it forwards either way.
type proxy struct {
	ln     net.Listener
	mu     sync.Mutex
	conns  []net.Conn
	closed bool
	wg     sync.WaitGroup
	bytes  atomic.Int64
}

func newProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &proxy{ln: ln}
	p.wg.Add(1)
	go p.serve(target)
	t.Cleanup(p.close)
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) serve(target string) {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		r, err := net.Dial("tcp", target)
		if err != nil {
			_ = c.Close()
			continue
		}
		if !p.track(c, r) {
			return
		}
		p.wg.Add(2)
		go p.pipe(c, r)
		go p.pipe(r, c)
	}
}

// track keeps c and r to cut at close; it closes them and reports false once closed.
func (p *proxy) track(c, r net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		_, _ = c.Close(), r.Close()
		return false
	}
	p.conns = append(p.conns, c, r)
	return true
}

func (p *proxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	_, _ = io.Copy(counting{dst, &p.bytes}, src)
	_ = dst.Close()
}

// counting is a writer that adds what it writes to n.
type counting struct {
	w io.Writer
	n *atomic.Int64
}

func (c counting) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n.Add(int64(n))
	return n, err
}

// close stops accepting, cuts every connection and waits for the copies to end.
func (p *proxy) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns, p.closed = nil, true
	p.mu.Unlock()
	p.wg.Wait()
}
