package sqlitestore_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/events"
	"github.com/gorunner/gorunner/store/sqlitestore"
	"github.com/gorunner/gorunner/store/storetest"
)

// twoProcesses opens one file twice, as two processes sharing it would.
func twoProcesses(t testing.TB) (*sqlitestore.Store, *sqlitestore.Store) {
	path := filepath.Join(t.TempDir(), "shared.db")
	return open(t, path), open(t, path)
}

// crossProcesses is twoProcesses as the cross-process suites take it.
func crossProcesses(tb testing.TB) (storetest.Process, storetest.Process) {
	a, b := twoProcesses(tb)
	return storetest.Process{Store: a, Events: a.Events()}, storetest.Process{Store: b, Events: b.Events()}
}

func TestCrossProcess(t *testing.T) {
	t.Parallel()
	storetest.RunCrossProcess(t, crossProcesses)
}

func BenchmarkWaitCrossProcess(b *testing.B) {
	storetest.BenchWaitLatency(b, crossProcesses)
}

// next waits for the next message.
func next(t *testing.T, in <-chan events.Message) events.Message {
	t.Helper()
	select {
	case m := <-in:
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("no event")
		return events.Message{}
	}
}

// TestPrunedEventsAreAGap checks that a subscriber which fell behind the kept rows is told
// to re-read everything rather than miss the pruned topics silently.
func TestPrunedEventsAreAGap(t *testing.T) {
	t.Parallel()
	a, b := twoProcesses(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	in, err := b.Events().Subscribe(ctx)
	require.NoError(t, err)
	topics := make([]events.Topic, 10_001) // one more than the store keeps
	for i := range topics {
		topics[i] = events.Due
	}
	require.NoError(t, a.Events().Publish(ctx, events.Message{Origin: "a", Topics: topics}))
	require.True(t, next(t, in).All)
}

// TestAloneWritesNoEvents checks that a process alone on the file writes nothing to the
// change log, and writes again once another process listens.
func TestAloneWritesNoEvents(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "shared.db")
	ev := open(t, path).Events()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := ev.Subscribe(ctx)
	require.NoError(t, err)
	raw, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	defer raw.Close()
	written := func() bool {
		var before, after int
		require.NoError(t, raw.QueryRow(`SELECT COUNT(*) FROM events`).Scan(&before))
		require.NoError(t, ev.Publish(ctx, events.Message{Origin: "a", Topics: []events.Topic{events.Due}}))
		require.NoError(t, raw.QueryRow(`SELECT COUNT(*) FROM events`).Scan(&after))
		return after > before
	}
	require.Eventually(t, func() bool { return !written() }, 10*time.Second, 5*time.Millisecond, "alone: no writes")
	_, err = open(t, path).Events().Subscribe(ctx)
	require.NoError(t, err)
	require.Eventually(t, written, 10*time.Second, 5*time.Millisecond, "another process listens: writes")
}
