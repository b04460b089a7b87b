package mcpserver

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"
)

// TestRPCErrorOfCancelledRequest: a task request that failed because its client went away
// (a tasks/result dropped while it waited) neither checks the store nor logs an error a
// client could fill the log with; a live request's unexpected failure does both.
func TestRPCErrorOfCancelledRequest(t *testing.T) {
	t.Parallel()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name   string
		ctx    context.Context
		checks int
		logged bool
	}{
		{name: "cancelled", ctx: cancelled},
		{name: "live", ctx: context.Background(), checks: 1, logged: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var log bytes.Buffer
			checks := 0
			s := &Server{log: slog.New(slog.NewTextHandler(&log, nil)), deps: Deps{Ready: func(context.Context) error {
				checks++
				return nil
			}}}
			e := s.rpcErrorOf(tt.ctx, errors.Join(errors.New("reading the run"), tt.ctx.Err()))
			require.Equal(t, mcp.INTERNAL_ERROR, e.Code)
			require.Nil(t, e.Data)
			require.Equal(t, tt.checks, checks)
			require.Equal(t, tt.logged, bytes.Contains(log.Bytes(), []byte("level=ERROR")), log.String())
		})
	}
}
