package schemas

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestStepKindTable reads each row of the step-kind table through a decoded step, so a kind
// added to Step without a row (or with the wrong facts) shows here.
func TestStepKindTable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		step                        string
		kind                        string
		effects, reachesOut, writes bool
	}{
		{`{"id":"a","set":null}`, KindSet, false, false, false},
		{`{"id":"a","fail":{"message":"no"}}`, KindFail, false, false, false},
		{`{"id":"a","http":{"url":"https://x.example"}}`, KindHTTP, true, true, false},
		{`{"id":"a","http":{"url":"https://x.example","method":"POST"}}`, KindHTTP, true, true, true},
		{`{"id":"a","hook":{"token":"t"}}`, KindHook, true, false, true},
		{`{"id":"a","sleep":{"duration":"1s"}}`, KindSleep, true, false, false},
		{`{"id":"a","run":{"action":"status","runId":"r"}}`, KindRun, true, false, true},
		{`{"id":"a","workflow":{"name":"w"}}`, KindWorkflow, true, true, true},
		{`{"id":"a","mcp":{"url":"https://x.example/mcp","tool":"t"}}`, KindMCP, true, true, true},
		{`{"id":"a","mine":{}}`, "mine", true, true, true},
	}
	for _, tc := range tests {
		t.Run(tc.kind, func(t *testing.T) {
			t.Parallel()
			var s Step
			require.NoError(t, s.UnmarshalJSON([]byte(tc.step)))
			k := KindOf(&s)
			require.Equal(t, tc.kind, k.Name)
			require.Equal(t, tc.effects, k.Effects, "effects")
			require.Equal(t, tc.reachesOut, k.ReachesOut, "reaches out")
			require.Equal(t, tc.reachesOut, ReachesOut([]Step{s}))
			require.Equal(t, tc.writes, k.Writes(&s), "writes")
		})
	}
}

func TestBuiltinKinds(t *testing.T) {
	t.Parallel()
	var names []string
	for _, k := range BuiltinKinds() {
		names = append(names, k.Name)
		require.True(t, ReservedStepKey(k.Name), k.Name)
	}
	require.Equal(t, []string{KindSet, KindHTTP, KindHook, KindSleep, KindRun, KindWorkflow, KindFail, KindMCP, KindParallel, KindForeach, KindLoop}, names,
		"the SPEC's order")
	for _, key := range []string{"id", "if", "retry", "timeout"} {
		require.True(t, ReservedStepKey(key), key)
	}
	require.False(t, ReservedStepKey("charge"))
}
