package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/stack/stacktest"
	"github.com/gorunner/gorunner/store"
)

// TestNew: a nil Config takes the defaults (PublicURL has none: it is required), the
// PublicURL is kept as an origin, and a missing service is an error naming it.
func TestNew(t *testing.T) {
	t.Parallel()
	st := stacktest.New(t, stacktest.Config{})
	all := Deps{Catalog: st.Catalog, Auth: st.Auth, Engine: st.Engine, Idempotency: st.Idempotency}
	for _, tc := range []struct {
		name    string
		drop    func(*Deps) // removes a service from all
		cfg     *Config
		wantErr string
		want    func(t *testing.T, c Config)
	}{
		{name: "nil config", wantErr: "Config.PublicURL"},
		{name: "only PublicURL: the defaults", cfg: &Config{PublicURL: "https://runner.example/"}, want: func(t *testing.T, c Config) {
			require.Same(t, slog.Default(), c.Logger)
			require.Equal(t, EventsHeartbeat, c.EventsHeartbeat)
			require.Equal(t, "https://runner.example", c.PublicURL)
		}},
		{name: "no Catalog", drop: func(d *Deps) { d.Catalog = nil }, wantErr: "Deps.Catalog"},
		{name: "no Auth", drop: func(d *Deps) { d.Auth = nil }, wantErr: "Deps.Auth"},
		{name: "no Engine", drop: func(d *Deps) { d.Engine = nil }, wantErr: "Deps.Engine"},
		{name: "no Idempotency", drop: func(d *Deps) { d.Idempotency = nil }, wantErr: "Deps.Idempotency"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			deps, cfg := all, tc.cfg
			if tc.drop != nil {
				tc.drop(&deps)
				cfg = &Config{PublicURL: "https://runner.example"}
			}
			s, err := New(deps, cfg)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			tc.want(t, s.cfg)
		})
	}
}

// TestUnexpectedErrors: an error the API does not know is 500 INTERNAL, unless the store
// could not be reached: an error the store marked store.ErrUnreachable is 503 even when
// the store answers again by the time the error is answered (it restarted), and any
// error is 503 while the store is down. A network error that is not the store's (an HTTP
// step's dial refused, the client's own connection reset) is 500: both are performed here
// on real sockets.
func TestUnexpectedErrors(t *testing.T) {
	t.Parallel()
	dialErr := refusedDial(t)
	refused := fmt.Errorf("reading catalog version: %w: %w", store.ErrUnreachable, dialErr)
	up := func(context.Context) error { return nil }
	down := func(context.Context) error { return errors.New("no store") }
	for _, tc := range []struct {
		name   string
		err    error
		ready  func(context.Context) error
		status int
	}{
		{"a bug, store up", errors.New("bug"), up, http.StatusInternalServerError},
		{"a bug, no store check", errors.New("bug"), nil, http.StatusInternalServerError},
		{"a bug, store down", errors.New("bug"), down, http.StatusServiceUnavailable},
		{"refused, store back up", refused, up, http.StatusServiceUnavailable},
		{"refused, store down", refused, down, http.StatusServiceUnavailable},
		{"an HTTP step's dial refused, store up", fmt.Errorf("step fetch: %w", dialErr), up, http.StatusInternalServerError},
		{"the client's connection reset, store up", fmt.Errorf("reading the body: %w", resetRead(t)), up, http.StatusInternalServerError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Server{cfg: Config{Ready: tc.ready}}
			e := s.internal(context.Background(), tc.err)
			require.Equal(t, tc.status, e.Status)
			if tc.status == http.StatusServiceUnavailable {
				require.Equal(t, time.Second, e.RetryAfter)
			}
		})
	}
}

// refusedDial dials a port nobody listens on any more and returns the *net.OpError.
func refusedDial(t *testing.T) error {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	_, err = net.Dial("tcp", addr)
	var opErr *net.OpError
	require.ErrorAs(t, err, &opErr)
	require.ErrorIs(t, err, syscall.ECONNREFUSED)
	return err
}

// resetRead reads from a connection its peer reset and returns the *net.OpError, as a
// handler reading a request body gets when its client goes away.
func resetRead(t *testing.T) error {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	srv, err := ln.Accept()
	require.NoError(t, err)
	defer srv.Close()
	require.NoError(t, client.(*net.TCPConn).SetLinger(0)) // close with a reset
	require.NoError(t, client.Close())
	_, err = srv.Read(make([]byte, 1))
	var opErr *net.OpError
	require.ErrorAs(t, err, &opErr)
	return err
}
