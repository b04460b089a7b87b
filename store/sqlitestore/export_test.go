package sqlitestore

import (
	"context"
	"time"
)

// OpenBusy is Open with a busy timeout of busy, so that a test holding the lock from
// another connection sees the store give up without waiting 10 s.
func OpenBusy(ctx context.Context, path string, busy time.Duration) (*Store, error) {
	return open(ctx, path, busy)
}
