package storecodec_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/store/storecodec"
)

func TestCursorRoundTripAndRefusal(t *testing.T) {
	t.Parallel()
	type key struct {
		At int64
		ID string
	}
	c, err := storecodec.EncodeCursor(key{At: 7, ID: "r1"})
	require.NoError(t, err)
	var got key
	require.NoError(t, storecodec.DecodeCursor(c, &got, errors.New("bad")))
	require.Equal(t, key{At: 7, ID: "r1"}, got)
	sentinel := errors.New("invalid cursor")
	for _, bad := range []string{"!!", "bm90IGpzb24", ""} {
		require.ErrorIs(t, storecodec.DecodeCursor(bad, &got, sentinel), sentinel, bad)
	}
}

func TestLeaseOutcome(t *testing.T) {
	t.Parallel()
	lost, cancelled := storecodec.LeaseOutcome([]string{"a", "b", "c"}, map[string]bool{"a": false, "c": true})
	require.Equal(t, []string{"b"}, lost)
	require.Equal(t, []string{"c"}, cancelled)
}

func TestRunStateKeepsEngineStateAndUTC(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("x", 3600))
	r := &runner.Run{
		Steps: []*runner.StepRecord{
			{ID: "a", StepID: "s1", Status: runner.StepWaiting, StartedAt: &at, State: json.RawMessage(`{"until":1}`)},
			{ID: "b", StepID: "s2", Status: runner.StepPending},
		},
		WaitingOn: &runner.WaitingOn{SleepUntil: &at},
	}
	st, err := storecodec.EncodeRunState(r, nil)
	require.NoError(t, err)
	require.Nil(t, st.Error, "no error: the field stays absent")
	require.Len(t, st.Steps, 2, "nil indexes: every step")
	rows := map[int][]byte{}
	for _, es := range st.Steps {
		rows[es.Index] = es.Data
	}
	steps, err := storecodec.DecodeStepRows(rows)
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b"}, []string{steps[0].ID, steps[1].ID})
	require.JSONEq(t, `{"until":1}`, string(steps[0].State))
	require.Equal(t, time.UTC, steps[0].StartedAt.Location())
	require.True(t, steps[0].StartedAt.Equal(at))
	require.Contains(t, string(st.WaitingOn), "2026-01-02T02:04:05.000000006Z")
	none, err := storecodec.DecodeStepRows(nil)
	require.NoError(t, err)
	require.Nil(t, none)
}

func TestRunStateEncodesOnlyTheStepsAsked(t *testing.T) {
	t.Parallel()
	r := &runner.Run{Steps: []*runner.StepRecord{{ID: "a"}, {ID: "b"}, {ID: "c"}}}
	st, err := storecodec.EncodeRunState(r, []int{2})
	require.NoError(t, err)
	require.Len(t, st.Steps, 1)
	require.Equal(t, 2, st.Steps[0].Index)
	got, err := storecodec.DecodeStep(st.Steps[0].Data)
	require.NoError(t, err)
	require.Equal(t, "c", got.ID)
	_, err = storecodec.EncodeRunState(r, []int{3})
	require.Error(t, err, "out of range")
	_, err = storecodec.DecodeStepRows(map[int][]byte{0: []byte(`{"id":"a"}`), 2: []byte(`{"id":"c"}`)})
	require.Error(t, err, "a gap in the indexes")
}

func TestLegacyStepsBlob(t *testing.T) {
	t.Parallel()
	steps, err := storecodec.DecodeSteps([]byte(`[{"id":"a","stepId":"s1","status":"completed","state":{"x":1}}]`))
	require.NoError(t, err)
	require.Len(t, steps, 1)
	require.Equal(t, runner.StepCompleted, steps[0].Status)
	require.JSONEq(t, `{"x":1}`, string(steps[0].State))
}

// TestHosts checks the hosts encoding both backends share; a connection stored before hosts
// existed (no field, empty column) reads as bound to no host.
func TestHosts(t *testing.T) {
	for _, hosts := range [][]string{nil, {}, {"api.example.com", "*.example.org:8443", "[::1]:9000"}} {
		enc, err := storecodec.EncodeHosts(hosts)
		require.NoError(t, err)
		got, err := storecodec.DecodeHosts(enc)
		require.NoError(t, err)
		require.Equal(t, append([]string{}, hosts...), got)
	}
	got, err := storecodec.DecodeHosts("")
	require.NoError(t, err)
	require.Equal(t, []string{}, got)
	_, err = storecodec.DecodeHosts("{")
	require.Error(t, err)
}
