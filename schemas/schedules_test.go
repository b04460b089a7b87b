package schemas

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSchedulesProblems: each bad schedule is refused at the pointer of its field.
func TestSchedulesProblems(t *testing.T) {
	t.Parallel()
	typed := map[string]any{"type": "object", "required": []any{"report"},
		"properties": map[string]any{"report": map[string]any{"type": "string", "enum": []any{"daily", "weekly"}}}}
	one := func(s map[string]any) map[string]any {
		return map[string]any{"input": typed, "schedules": []any{map[string]any{"cron": "@daily", "input": map[string]any{"report": "daily"}}, s}}
	}
	many := make([]any, MaxSchedules+1)
	for i := range many {
		many[i] = map[string]any{"cron": "@hourly"}
	}
	tests := []struct {
		name string
		over map[string]any
		path string // "" for valid
	}{
		{"valid", one(map[string]any{"cron": "0 9 * * 1-5", "timezone": "Europe/Berlin", "input": map[string]any{"report": "weekly"}, "catchUp": "none"}), ""},
		{"bad cron", one(map[string]any{"cron": "0 25 * * *", "input": map[string]any{"report": "daily"}}), "/schedules/1/cron"},
		{"every under a second", one(map[string]any{"cron": "@every 100ms", "input": map[string]any{"report": "daily"}}), "/schedules/1/cron"},
		{"bad timezone", one(map[string]any{"cron": "@daily", "timezone": "Europe/Atlantis", "input": map[string]any{"report": "daily"}}), "/schedules/1/timezone"},
		{"bad catchUp", one(map[string]any{"cron": "@daily", "catchUp": "all", "input": map[string]any{"report": "daily"}}), "/schedules/1/catchUp"},
		{"input off the schema", one(map[string]any{"cron": "@daily", "input": map[string]any{"report": "hourly"}}), "/schedules/1/input/report"},
		{"input missing a required property", one(map[string]any{"cron": "@daily"}), "/schedules/1/input/report"},
		{"input not an object", one(map[string]any{"cron": "@daily", "input": []any{1}}), "/schedules/1/input"},
		{"one past MaxSchedules", map[string]any{"schedules": many}, "/schedules"},
		{"MaxSchedules", map[string]any{"schedules": many[:MaxSchedules]}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d, err := Decode(defWith(t, tc.over))
			require.NoError(t, err)
			problems := Validate(d, ValidateOptions{})
			if tc.path == "" {
				require.Empty(t, problems)
				return
			}
			require.Len(t, problems, 1, "%v", problems)
			require.Equal(t, tc.path, problems[0].Path, problems[0].Message)
		})
	}
}

func TestScheduleRunInput(t *testing.T) {
	t.Parallel()
	require.JSONEq(t, `{}`, string((&Schedule{}).RunInput()))
	require.JSONEq(t, `{}`, string((&Schedule{Input: []byte("null")}).RunInput()))
	require.JSONEq(t, `{"a":1}`, string((&Schedule{Input: []byte(`{"a":1}`)}).RunInput()))
}
