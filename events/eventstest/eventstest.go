// Package eventstest is the conformance suite of events.Transport: every backend's tests
// run it over two transports opened on one store, as two processes would.
package eventstest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/events"
)

// waitFor bounds every wait for a message; delivery is expected well within it.
const waitFor = 10 * time.Second

// Run runs the suite. open returns a new transport over the store shared by every call of
// one test, as another process sharing it would open.
func Run(t *testing.T, open func(t *testing.T) (a, b events.Transport)) {
	t.Run("PublishReachesAnotherProcess", func(t *testing.T) { testPublish(t, open) })
	t.Run("ManyTopicsInOneMessage", func(t *testing.T) { testMany(t, open) })
	t.Run("ClosesWhenContextEnds", func(t *testing.T) { testClose(t, open) })
}

// receive waits for a message from origin, skipping others (such as All notices).
func receive(t *testing.T, in <-chan events.Message, origin string) events.Message {
	t.Helper()
	deadline := time.After(waitFor)
	for {
		select {
		case m, ok := <-in:
			require.True(t, ok, "the subscription closed")
			if m.Origin == origin {
				return m
			}
		case <-deadline:
			t.Fatalf("no message from %s", origin)
		}
	}
}

func testPublish(t *testing.T, open func(t *testing.T) (a, b events.Transport)) {
	a, b := open(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	in, err := b.Subscribe(ctx)
	require.NoError(t, err)
	want := events.Message{Origin: "a", Topics: []events.Topic{events.Run("r1"), events.Key("s", "k"), events.Catalog}}
	require.NoError(t, a.Publish(ctx, want))
	got := receive(t, in, "a")
	require.ElementsMatch(t, want.Topics, got.Topics)
	require.False(t, got.All)
}

func testMany(t *testing.T, open func(t *testing.T) (a, b events.Transport)) {
	a, b := open(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	in, err := b.Subscribe(ctx)
	require.NoError(t, err)
	var want []events.Topic
	for i := range 500 {
		want = append(want, events.Run(fmt.Sprintf("run-%d", i)))
	}
	require.NoError(t, a.Publish(ctx, events.Message{Origin: "many", Topics: want}))
	var got []events.Topic
	for len(got) < len(want) {
		got = append(got, receive(t, in, "many").Topics...)
	}
	slices.Sort(got)
	slices.Sort(want)
	require.Equal(t, want, got)
}

func testClose(t *testing.T, open func(t *testing.T) (a, b events.Transport)) {
	_, b := open(t)
	ctx, cancel := context.WithCancel(context.Background())
	in, err := b.Subscribe(ctx)
	require.NoError(t, err)
	cancel()
	deadline := time.After(waitFor)
	for {
		select {
		case _, ok := <-in:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("the channel stayed open after ctx ended")
		}
	}
}
