package main_test

import (
	"io"
	"net"
	"net/url"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/store/pgstore/pgtest"
)

// TestPostgresThreeProcesses is threeProcesses on one PostgreSQL schema.
func TestPostgresThreeProcesses(t *testing.T) {
	t.Parallel()
	threeProcesses(t, pgtest.StoreURL(t))
}

// TestPostgresOutage is storeOutage on the test database reached through a proxy of the
// test's own, which the outage closes (cutting every connection, refusing new ones) and
// then opens again on the same port: the shared server is never touched.
func TestPostgresOutage(t *testing.T) {
	t.Parallel()
	storeOutage(t, newPGProxy(t, pgtest.StoreURL(t)))
}

// pgProxy forwards TCP connections to PostgreSQL while started.
type pgProxy struct {
	store  *url.URL // the store URL, its host the proxy's
	target string
	mu     sync.Mutex
	ln     net.Listener
	conns  []net.Conn
	wg     sync.WaitGroup
}

func newPGProxy(t *testing.T, store string) *pgProxy {
	t.Helper()
	u, err := url.Parse(store)
	require.NoError(t, err)
	p := &pgProxy{store: u, target: u.Host}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p.store.Host = ln.Addr().String()
	p.serve(ln)
	t.Cleanup(func() { p.stop(t) })
	return p
}

func (p *pgProxy) url() string { return p.store.String() }

// start listens again on the proxy's port.
func (p *pgProxy) start(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("tcp", p.store.Host)
	require.NoError(t, err)
	p.serve(ln)
}

func (p *pgProxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	p.wg.Go(func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", p.target)
			if err != nil {
				_ = in.Close()
				continue
			}
			p.mu.Lock()
			if p.ln != ln { // stopped while this connection was being made: it goes too
				p.mu.Unlock()
				_, _ = in.Close(), out.Close()
				return
			}
			p.conns = append(p.conns, in, out)
			p.mu.Unlock()
			p.wg.Go(func() { _, _ = io.Copy(in, out); _ = in.Close() })
			p.wg.Go(func() { _, _ = io.Copy(out, in); _ = out.Close() })
		}
	})
}

// stop closes the listener and every connection, and waits for the copies to end.
func (p *pgProxy) stop(t *testing.T) {
	t.Helper()
	p.mu.Lock()
	if p.ln != nil {
		_ = p.ln.Close()
	}
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.ln, p.conns = nil, nil
	p.mu.Unlock()
	p.wg.Wait()
}
