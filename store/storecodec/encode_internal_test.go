package storecodec

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/runner"
)

// TestEncodeStepAsMarshal holds EncodeStep's own encoder to json.Marshal's bytes for the
// records it encodes, and checks that it leaves the rest to json.Marshal (fast: false).
func TestEncodeStepAsMarshal(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 30, 21, 47, 30, 19369753, time.FixedZone("x", 3600))
	whole := time.Date(2026, 11, 30, 21, 47, 30, 0, time.UTC)
	tests := []struct {
		name string
		rec  runner.StepRecord
		fast bool
	}{
		{"pending", runner.StepRecord{ID: "a", StepID: "s-a", Status: runner.StepPending}, true},
		{"completed", runner.StepRecord{ID: "a", StepID: "fe0e52ba-d13e-559d-8ae9-c3d6a55bedd3", Status: runner.StepCompleted,
			Attempts: 1, Output: json.RawMessage(`{"n":1}`), StartedAt: &at, FinishedAt: &whole}, true},
		{"failed", runner.StepRecord{ID: "b", StepID: "s", Status: runner.StepFailed, Attempts: 3,
			Error: &runner.Error{Code: "HTTP_ERROR", Message: "status 500 from example.com", Step: "b"}}, true},
		{"error without step", runner.StepRecord{ID: "b", Status: runner.StepFailed, Error: &runner.Error{Code: "X", Message: ""}}, true},
		{"output not compact", runner.StepRecord{ID: "a", Output: json.RawMessage(" { \"a\" : [1, 2] }\n")}, true},
		{"null output", runner.StepRecord{ID: "a", Output: json.RawMessage(`null`)}, true},
		{"state and conflict", runner.StepRecord{ID: "h", Status: runner.StepWaiting, State: json.RawMessage(`{"token":"t"}`),
			Conflict: json.RawMessage(`{"runId":"r"}`)}, true},
		{"escaped in raw", runner.StepRecord{ID: "a", Output: json.RawMessage(`"\u003c\"q\"\n"`)}, true},
		{"html in raw", runner.StepRecord{ID: "a", Output: json.RawMessage(`"<b>&"`)}, false},
		{"line separator in raw", runner.StepRecord{ID: "a", Output: json.RawMessage("\"\u2028\"")}, false},
		{"unicode in raw", runner.StepRecord{ID: "a", Output: json.RawMessage(`"é"`)}, true},
		{"quote in message", runner.StepRecord{ID: "a", Error: &runner.Error{Code: "X", Message: `bad "input"`}}, false},
		{"html in message", runner.StepRecord{ID: "a", Error: &runner.Error{Code: "X", Message: "a < b & c"}}, false},
		{"unicode id", runner.StepRecord{ID: "é"}, false},
		{"control in message", runner.StepRecord{ID: "a", Error: &runner.Error{Code: "X", Message: "a\nb"}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			row := stepRowOf(&tt.rec)
			want, err := json.Marshal(row)
			require.NoError(t, err)
			got, fast := appendStep(nil, &row)
			require.Equal(t, tt.fast, fast)
			if fast {
				require.Equal(t, string(want), string(got))
			}
			enc, err := EncodeStep(&tt.rec)
			require.NoError(t, err)
			require.Equal(t, string(want), string(enc))
		})
	}
	for name, rec := range map[string]runner.StepRecord{
		"invalid raw":   {ID: "a", Output: json.RawMessage(`{"a":`)},
		"year 10000":    {ID: "a", StartedAt: func() *time.Time { t := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC); return &t }()},
		"negative year": {ID: "a", FinishedAt: func() *time.Time { t := time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC); return &t }()},
	} {
		row := stepRowOf(&rec)
		_, fast := appendStep(nil, &row)
		require.False(t, fast, name)
		_, err := EncodeStep(&rec)
		require.Error(t, err, name, "refused as json.Marshal refuses it")
	}
}
