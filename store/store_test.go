package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/store"
)

func TestUnavailable(t *testing.T) {
	t.Parallel()
	broken := errors.New("disk I/O error")
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name    string
		ctx     context.Context
		err     error
		ping    error // the readiness check's answer
		checked bool  // whether the check is made
		want    bool
	}{
		{name: "marked unreachable", ctx: context.Background(), err: fmt.Errorf("reading: %w", store.ErrUnreachable), want: true},
		{name: "unmarked, store down", ctx: context.Background(), err: broken, ping: broken, checked: true, want: true},
		{name: "unmarked, store up", ctx: context.Background(), err: broken, checked: true},
		{name: "client cancelled, store down", ctx: cancelled, err: fmt.Errorf("reading: %w", context.Canceled), ping: broken},
		{name: "client cancelled, marked unreachable", ctx: cancelled, err: fmt.Errorf("reading: %w", store.ErrUnreachable), want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			checks := 0
			ready := func(ctx context.Context) error {
				checks++
				require.NoError(t, ctx.Err(), "the check runs in a live context")
				return tt.ping
			}
			require.Equal(t, tt.want, store.Unavailable(tt.ctx, tt.err, ready))
			require.Equal(t, tt.checked, checks == 1, "checks: %d", checks)
			require.Equal(t, errors.Is(tt.err, store.ErrUnreachable), store.Unavailable(tt.ctx, tt.err, nil), "without a check")
		})
	}
}
