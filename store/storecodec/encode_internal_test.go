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
		{"nested", runner.StepRecord{ID: "charge", Path: "each/3/charge", StepID: "s-c", Status: runner.StepPending}, true},
		{"unicode path", runner.StepRecord{ID: "a", Path: "p/é/a"}, false},
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
		{"input and history", runner.StepRecord{ID: "h", Status: runner.StepCompleted, Attempts: 2, Input: json.RawMessage(`{"url":"https://x"}`),
			History: []runner.Attempt{
				{N: 1, StartedAt: at, FinishedAt: whole, Error: &runner.Error{Code: "HTTP_ERROR", Message: "GET https://x: 503", Step: "h"}, Request: "GET https://x", Status: 503},
				{N: 2, StartedAt: whole, FinishedAt: whole, Request: "GET https://x", Status: 200},
			}}, true},
		{"history without request", runner.StepRecord{ID: "f", History: []runner.Attempt{{N: 1, Error: &runner.Error{Code: "X"}}}}, true},
		{"html in history", runner.StepRecord{ID: "f", History: []runner.Attempt{{N: 1, Request: "GET https://x/?a=<b>"}}}, false},
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

// hostile are strings and raw JSON that a step record may carry from anywhere: every
// byte that JSON escapes or treats specially, invalid UTF-8, and the separators
// json.Marshal escapes.
var hostile = []string{
	"", "\x00", "\x1f", "\x7f", "\x80", "\xff", "\xc3", "\xc3\x28", "\xe2\x80", "\xe2\x80\xa8", "\xe2\x80\xa9",
	"\xed\xa0\x80", "\xf4\x90\x80\x80", "\ufffd", "a\tb", "\r\n", `"`, `\`, `\u0000`, "<", ">", "&", "'", "/",
	"é", "😀", "\u2028x\u2029",
}

// TestEncodeStepHostile holds EncodeStep to json.Marshal's bytes (or its refusal) for every
// hostile string in every string field, and every hostile string inside raw JSON, as a
// JSON string and as invalid JSON.
func TestEncodeStepHostile(t *testing.T) {
	t.Parallel()
	same := func(t *testing.T, rec runner.StepRecord) {
		t.Helper()
		want, werr := json.Marshal(stepRowOf(&rec))
		got, err := EncodeStep(&rec)
		if werr != nil {
			require.Error(t, err, "%q", got)
			return
		}
		require.NoError(t, err)
		require.Equal(t, string(want), string(got))
	}
	for _, s := range hostile {
		for _, rec := range []runner.StepRecord{
			{ID: s}, {StepID: s}, {Status: runner.StepStatus(s)},
			{Error: &runner.Error{Code: s}}, {Error: &runner.Error{Message: s}}, {Error: &runner.Error{Step: s}},
		} {
			same(t, rec)
		}
		quoted := `"` + s + `"`
		for _, raw := range []string{s, quoted, `{"k":` + quoted + `}`, `[` + quoted + `, 1 ]`, ` ` + quoted + "\n"} {
			for _, rec := range []runner.StepRecord{
				{Output: json.RawMessage(raw)}, {Conflict: json.RawMessage(raw)}, {State: json.RawMessage(raw)},
			} {
				same(t, rec)
			}
		}
	}
}

// FuzzEncodeStep holds EncodeStep to json.Marshal for any string and raw JSON.
func FuzzEncodeStep(f *testing.F) {
	for _, s := range hostile {
		f.Add(s, `"`+s+`"`)
	}
	f.Fuzz(func(t *testing.T, s, raw string) {
		rec := runner.StepRecord{ID: s, StepID: s, Error: &runner.Error{Code: s, Message: s, Step: s},
			Output: json.RawMessage(raw), State: json.RawMessage(raw)}
		want, werr := json.Marshal(stepRowOf(&rec))
		got, err := EncodeStep(&rec)
		if werr != nil {
			require.Error(t, err)
			return
		}
		require.NoError(t, err)
		require.Equal(t, string(want), string(got))
	})
}
