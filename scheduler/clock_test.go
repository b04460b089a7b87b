package scheduler_test

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/scheduler"
)

// TestDaylightSaving: a 02:30 Europe/Berlin schedule followed through the settable clock
// across the day its clocks skip 02:00–03:00 (it runs once, when the clock jumps to 03:00)
// and the day they repeat 02:00–03:00 (it runs once, at the first 02:30).
func TestDaylightSaving(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, from string
		span       time.Duration
		want       []string
	}{
		{"the day 02:00–03:00 is skipped", "2026-03-28T23:00:00Z", 48 * time.Hour,
			[]string{"2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"}},
		{"the day 02:00–03:00 repeats", "2026-10-24T22:00:00Z", 28 * time.Hour,
			[]string{"2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			procs := sqliteProcesses(t, 1)
			from, err := time.Parse(time.RFC3339, tc.from)
			require.NoError(t, err)
			clock := procs[0].clock
			clock.Set(from)
			wf := publish(t, procs[0], "berlin", map[string]any{"cron": "30 2 * * *", "timezone": "Europe/Berlin"})
			for end := from.Add(tc.span); clock.Now().Before(end); clock.Advance(10 * time.Minute) {
				passAll(t, procs)
			}
			var got []string
			for at, n := range ticks(t, procs[0], wf.ID) {
				require.Equal(t, 1, n, at)
				got = append(got, at.Format(time.RFC3339))
			}
			sort.Strings(got)
			require.Equal(t, tc.want, got)
		})
	}
}

// TestStall: a look at the clock after a stall starts the latest MaxTicksPerPass ticks it
// passed over; one tick fewer, all of them.
func TestStall(t *testing.T) {
	t.Parallel()
	for _, passed := range []int{scheduler.MaxTicksPerPass, scheduler.MaxTicksPerPass + 1} {
		procs := sqliteProcesses(t, 1)
		wf := publish(t, procs[0], "stall", map[string]any{"cron": "@every 1s"})
		clock := procs[0].clock
		passAll(t, procs) // the first look: no tick since the publish yet
		clock.Advance(time.Duration(passed) * time.Second)
		passAll(t, procs)
		got := ticks(t, procs[0], wf.ID)
		require.Len(t, got, scheduler.MaxTicksPerPass, "%d ticks passed over", passed)
		require.Equal(t, 1, got[clock.Now().Truncate(time.Second)], "the latest is among them")
	}
}

// TestPublishedVersionOnly: schedules are the published version's: a draft's do not tick,
// a new version's replace the old, and unpublishing stops them.
func TestPublishedVersionOnly(t *testing.T) {
	t.Parallel()
	procs := sqliteProcesses(t, 1)
	p, clock, ctx := procs[0], procs[0].clock, context.Background()
	wf := publish(t, p, "versions", map[string]any{"cron": "@every 1s"})
	step := func() int {
		clock.Advance(time.Second)
		passAll(t, procs)
		return len(ticks(t, p, wf.ID))
	}
	require.Equal(t, 1, step())
	_, err := p.catalog.Unpublish(ctx, wf.ID)
	require.NoError(t, err)
	require.Equal(t, 1, step(), "unpublished: no tick")
	require.Equal(t, 1, step())
	_, _, err = p.catalog.Publish(ctx, wf.ID, auth.Local())
	require.NoError(t, err)
	require.Equal(t, 2, step(), "published again: the tick since")
	_, err = p.catalog.Update(ctx, wf.ID, []byte(`{"name":"versions","input":{"type":"object"},"steps":[{"id":"s","set":1}]}`), 0)
	require.NoError(t, err)
	require.Equal(t, 3, step(), "a draft without schedules changes nothing until published")
	_, _, err = p.catalog.Publish(ctx, wf.ID, auth.Local())
	require.NoError(t, err)
	require.Equal(t, 3, step(), "the new version has none")
}

// TestLoop: Start looks at the clock on its own until Stop.
func TestLoop(t *testing.T) {
	t.Parallel()
	procs := sqliteProcesses(t, 2)
	wf := publish(t, procs[0], "loop", map[string]any{"cron": "@every 1s"})
	for _, p := range procs {
		p.sched.Start(context.Background())
	}
	clock := procs[0].clock
	for i := 1; i <= 3; i++ {
		clock.Advance(time.Second)
		require.Eventually(t, func() bool { return len(ticks(t, procs[0], wf.ID)) == i }, 5*time.Second, 5*time.Millisecond)
	}
	for _, p := range procs {
		require.NoError(t, p.sched.Stop(context.Background()))
	}
	require.Equal(t, everySecond(start, clock.Now()), ticks(t, procs[0], wf.ID))
}
