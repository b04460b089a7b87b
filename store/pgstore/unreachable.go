package pgstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/gorunner/gorunner/store"
)

// unreachable wraps err with store.ErrUnreachable when it comes from not reaching
// PostgreSQL, or from a server that cannot serve now, the statement not run or its
// transaction rolled back:
//
//   - a connection that could not be made (pgconn.ConnectError: refused, a DNS failure, a
//     dial timeout) or that broke (a network error, EOF);
//   - SQLSTATE class 08 (connection exception), 57P01–57P03 (the server shutting down or
//     starting: admin_shutdown, crash_shutdown, cannot_connect_now) and 53300
//     (too_many_connections).
//
// Any other error stays as it is (a constraint, a bug), as does any error once ctx is done
// (the caller gave up).
func unreachable(ctx context.Context, err error) error {
	if err == nil || ctx.Err() != nil || errors.Is(err, store.ErrUnreachable) {
		return err
	}
	if cannotReach(err) {
		return fmt.Errorf("%w: %w", store.ErrUnreachable, err)
	}
	return err
}

// cannotReach reports whether err says the server could not be reached or cannot serve.
func cannotReach(err error) bool {
	var (
		ce     *pgconn.ConnectError
		pe     *pgconn.PgError
		netErr net.Error
	)
	switch {
	case errors.As(err, &pe):
		return strings.HasPrefix(pe.Code, "08") || pe.Code == "57P01" || pe.Code == "57P02" ||
			pe.Code == "57P03" || pe.Code == "53300"
	case errors.As(err, &ce), errors.As(err, &netErr), errors.Is(err, io.EOF),
		errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed):
		return true
	}
	return pgconn.SafeToRetry(err)
}
