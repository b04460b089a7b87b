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

func TestPageLimit(t *testing.T) {
	t.Parallel()
	for in, want := range map[int]int{-1: 100, 0: 100, 1: 1, 999: 999, 1000: 1000, 5000: 1000} {
		require.Equal(t, want, storecodec.PageLimit(in), in)
	}
}

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
		Steps:     []*runner.StepRecord{{ID: "a", StepID: "s1", Status: runner.StepWaiting, StartedAt: &at, State: json.RawMessage(`{"until":1}`)}},
		WaitingOn: &runner.WaitingOn{SleepUntil: &at},
	}
	st, err := storecodec.EncodeRunState(r)
	require.NoError(t, err)
	require.Nil(t, st.Error, "no error: the field stays absent")
	steps, err := storecodec.DecodeSteps(st.Steps)
	require.NoError(t, err)
	require.JSONEq(t, `{"until":1}`, string(steps[0].State))
	require.Equal(t, time.UTC, steps[0].StartedAt.Location())
	require.True(t, steps[0].StartedAt.Equal(at))
	require.Contains(t, string(st.WaitingOn), "2026-01-02T02:04:05.000000006Z")
	none, err := storecodec.DecodeSteps(nil)
	require.NoError(t, err)
	require.Nil(t, none)
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
