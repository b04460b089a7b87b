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

	"github.com/gorunner/gorunner/internal/stacktest"
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
// could not be reached: a network error is 503 even when the store answers again by the
// time the error is answered (it restarted), and any error is 503 while the store is down.
func TestUnexpectedErrors(t *testing.T) {
	t.Parallel()
	refused := fmt.Errorf("reading catalog version: %w",
		&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED})
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
