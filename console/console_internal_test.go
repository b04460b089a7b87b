package console

import (
	"bytes"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/stack/stacktest"
)

// TestNew: a nil Config takes the defaults (SecretKey and BaseURL have none: they are
// required), and a missing service is an error naming it.
func TestNew(t *testing.T) {
	t.Parallel()
	st := stacktest.New(t, stacktest.Config{})
	all := Deps{Catalog: st.Catalog, Auth: st.Auth, Engine: st.Engine, Idempotency: st.Idempotency}
	settings := &Config{SecretKey: bytes.Repeat([]byte{1}, 32), BaseURL: "https://runner.example"}
	for _, tc := range []struct {
		name    string
		drop    func(*Deps) // removes a service from all
		cfg     *Config
		wantErr string
	}{
		{name: "nil config", wantErr: "Config.SecretKey"},
		{name: "no BaseURL", cfg: &Config{SecretKey: settings.SecretKey}, wantErr: "Config.BaseURL"},
		{name: "SecretKey and BaseURL: the defaults", cfg: settings},
		{name: "no Catalog", drop: func(d *Deps) { d.Catalog = nil }, cfg: settings, wantErr: "Deps.Catalog"},
		{name: "no Auth", drop: func(d *Deps) { d.Auth = nil }, cfg: settings, wantErr: "Deps.Auth"},
		{name: "no Engine", drop: func(d *Deps) { d.Engine = nil }, cfg: settings, wantErr: "Deps.Engine"},
		{name: "no Idempotency", drop: func(d *Deps) { d.Idempotency = nil }, cfg: settings, wantErr: "Deps.Idempotency"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			deps := all
			if tc.drop != nil {
				tc.drop(&deps)
			}
			c, err := New(deps, tc.cfg)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Same(t, slog.Default(), c.cfg.Logger)
			require.WithinDuration(t, time.Now(), c.cfg.Now(), time.Minute, "the wall clock")
		})
	}
}
