package schedule_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/schedule"
)

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

func utcs(ss ...string) []time.Time {
	out := make([]time.Time, len(ss))
	for i, s := range ss {
		out[i] = utc(s)
	}
	return out
}

// TestUpcoming: the ticks of cron expressions in timezones, through the days Europe/Berlin
// (29 March 2026: 02:00 → 03:00; 25 October 2026: 03:00 → 02:00) and America/New_York skip
// or repeat an hour.
func TestUpcoming(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, cron, tz, after string
		want                  []time.Time
	}{
		{"a skipped time of day runs when the clock jumps", "30 2 * * *", "Europe/Berlin", "2026-03-28T12:00:00Z",
			utcs("2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z", "2026-03-31T00:30:00Z")},
		{"a repeated time of day runs once, at its first occurrence", "30 2 * * *", "Europe/Berlin", "2026-10-24T12:00:00Z",
			utcs("2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z")},
		{"after the first occurrence the repeat does not run", "30 2 * * *", "Europe/Berlin", "2026-10-25T01:10:00Z",
			utcs("2026-10-26T01:30:00Z")},
		{"two skipped times of day run once", "0,30 2 * * *", "Europe/Berlin", "2026-03-28T23:50:00Z",
			utcs("2026-03-29T01:00:00Z", "2026-03-30T00:00:00Z")},
		{"an hourly schedule follows real time: the repeated hour twice", "30 * * * *", "Europe/Berlin", "2026-10-24T23:50:00Z",
			utcs("2026-10-25T00:30:00Z", "2026-10-25T01:30:00Z", "2026-10-25T02:30:00Z")},
		{"an hourly schedule skips no real hour", "@hourly", "Europe/Berlin", "2026-03-29T00:10:00Z",
			utcs("2026-03-29T01:00:00Z", "2026-03-29T02:00:00Z")},
		{"weekdays at 9 in summer time", "0 9 * * 1-5", "Europe/Berlin", "2026-03-27T10:00:00Z",
			utcs("2026-03-30T07:00:00Z", "2026-03-31T07:00:00Z")},
		{"daily midnight across the change", "@daily", "Europe/Berlin", "2026-03-28T23:30:00Z",
			utcs("2026-03-29T22:00:00Z")},
		{"New York skips 02:00", "0 2 * * *", "America/New_York", "2026-03-07T12:00:00Z",
			utcs("2026-03-08T07:00:00Z", "2026-03-09T06:00:00Z")},
		{"UTC by default", "0 0 * * *", "", "2026-03-28T12:00:00Z", utcs("2026-03-29T00:00:00Z")},
		{"@every falls on multiples since the epoch", "@every 10m", "Asia/Kolkata", "2026-03-28T12:03:05Z",
			utcs("2026-03-28T12:10:00Z", "2026-03-28T12:20:00Z")},
		{"@every 1s", "@every 1s", "", "2026-03-28T12:00:00.5Z", utcs("2026-03-28T12:00:01Z", "2026-03-28T12:00:02Z")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := schedule.Parse(tc.cron, tc.tz)
			require.NoError(t, err)
			after, err := time.Parse(time.RFC3339Nano, tc.after)
			require.NoError(t, err)
			require.Equal(t, tc.want, s.Upcoming(after, len(tc.want)))
		})
	}
}

func TestLatest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, cron, at, since string
		want                  string // "" for none
	}{
		{"every second", "@every 1s", "2026-03-28T12:00:05.5Z", "2026-03-28T12:00:00Z", "2026-03-28T12:00:05Z"},
		{"a tick at since counts", "@every 1h", "2026-03-28T12:30:00Z", "2026-03-28T12:00:00Z", "2026-03-28T12:00:00Z"},
		{"none since", "@every 1h", "2026-03-28T12:30:00Z", "2026-03-28T12:10:00Z", ""},
		{"days back", "0 9 * * *", "2026-03-28T08:00:00Z", "2026-01-01T00:00:00Z", "2026-03-27T09:00:00Z"},
		{"a year back", "0 0 1 1 *", "2026-12-28T08:00:00Z", "2020-01-01T00:00:00Z", "2026-01-01T00:00:00Z"},
		{"leap day, years back", "0 0 29 2 *", "2027-03-01T00:00:00Z", "2020-01-01T00:00:00Z", "2024-02-29T00:00:00Z"},
		{"a tick at at counts", "0 9 * * *", "2026-03-28T09:00:00Z", "2026-03-01T00:00:00Z", "2026-03-28T09:00:00Z"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := schedule.Parse(tc.cron, "")
			require.NoError(t, err)
			at, err := time.Parse(time.RFC3339Nano, tc.at)
			require.NoError(t, err)
			got, ok := s.Latest(at, utc(tc.since))
			require.Equal(t, tc.want != "", ok)
			if ok {
				require.Equal(t, utc(tc.want), got)
			}
		})
	}
}

func TestParseRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, cron, tz, field string }{
		{"six fields", "0 * * * * *", "", "cron"},
		{"out of range", "61 * * * *", "", "cron"},
		{"under a second", "@every 999ms", "", "cron"},
		{"fraction of a second", "@every 1500ms", "", "cron"},
		{"not a duration", "@every soon", "", "cron"},
		{"a timezone in the expression", "CRON_TZ=UTC 0 * * * *", "", "cron"},
		{"never ticks", "0 0 30 2 *", "", "cron"},
		{"empty", "", "", "cron"},
		{"unknown timezone", "@daily", "Mars/Olympus", "timezone"},
		{"the process's timezone", "@daily", "Local", "timezone"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := schedule.Parse(tc.cron, tc.tz)
			var fe *schedule.FieldError
			require.ErrorAs(t, err, &fe)
			require.Equal(t, tc.field, fe.Field)
		})
	}
	s, err := schedule.Parse("@every 1s", "")
	require.NoError(t, err, "MinEvery itself is accepted")
	require.Equal(t, schedule.MinEvery, s.Next(utc("2026-01-01T00:00:00Z")).Sub(utc("2026-01-01T00:00:00Z")))
}
