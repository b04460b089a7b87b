package logredact_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/internal/logredact"
)

func TestHandlerRedactsTokens(t *testing.T) {
	t.Parallel()
	const token = "gr_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_abcd"
	const hook = "wh_ZyXwVuTsRqPoNmLkJiHgFeDcBa9876543210"
	for _, tc := range []struct {
		name string
		log  func(*slog.Logger)
		want []string
	}{
		{"string attr", func(l *slog.Logger) { l.Info("call", "route", "/webhooks/"+hook) },
			[]string{`"route":"/webhooks/wh_ZyXw…[redacted]"`}},
		{"error attr", func(l *slog.Logger) { l.Error("failed", "err", errors.New("bad token "+token)) },
			[]string{`"err":"bad token gr_AbCd…[redacted]"`}},
		{"group and With", func(l *slog.Logger) {
			l.With("auth", token).Info("x", slog.Group("g", "t", token))
		}, []string{`"auth":"gr_AbCd…[redacted]"`, `"g":{"t":"gr_AbCd…[redacted]"}`}},
		{"WithGroup", func(l *slog.Logger) { l.WithGroup("req").Info("x", "t", token) }, []string{`"req":{"t":"gr_AbCd…[redacted]"}`}},
		{"message", func(l *slog.Logger) { l.Info("token " + token) }, []string{`"msg":"token gr_AbCd…[redacted]"`}},
		{"short look-alike kept", func(l *slog.Logger) { l.Info("x", "v", "gr_short") }, []string{`"v":"gr_short"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			tc.log(slog.New(logredact.Handler(logredact.Handler(slog.NewJSONHandler(&buf, nil)))))
			out := buf.String()
			require.NotContains(t, out, token)
			require.NotContains(t, out, hook)
			for _, w := range tc.want {
				require.Contains(t, out, w)
			}
		})
	}
}

func TestHandlerWrapsOnce(t *testing.T) {
	t.Parallel()
	h := logredact.Handler(slog.NewTextHandler(&bytes.Buffer{}, nil))
	require.Same(t, h, logredact.Handler(h))
}

func ExampleString() {
	fmt.Println(logredact.String("POST /webhooks/wh_ZyXwVuTsRqPoNmLkJiHgFeDcBa9876543210 failed"))
	// Output: POST /webhooks/wh_ZyXw…[redacted] failed
}
