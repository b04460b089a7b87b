package storecodec_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/auth"
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

// Records as stored before the stored encoding was declared apart from runner's types:
// they must keep decoding, and encoding must keep writing exactly these bytes.
const (
	storedStep = `{"id":"s-1","stepId":"greet","status":"failed","attempts":2,"output":"hi",` +
		`"error":{"code":"HTTP_500","message":"bad","step":"greet"},"startedAt":"2026-11-30T12:00:01Z",` +
		`"finishedAt":"2026-11-30T12:00:02Z","conflict":{"owner":"run-0"},"state":{"until":1}}`
	storedBareStep = `{"id":"s-2","stepId":"wait","status":"pending","attempts":0}`
	// storedNested is a nested record (docs/design/control-flow.md): its path after its id.
	storedNested  = `{"id":"charge","path":"each/3/charge","stepId":"c","status":"pending","attempts":0}`
	storedError   = `{"code":"STEP_FAILED","message":"boom","step":"greet"}`
	storedWaiting = `{"hook":"tok-1","sleepUntil":"2026-11-30T12:00:02Z"}`
)

func TestStoredFormat(t *testing.T) {
	t.Parallel()
	t1 := time.Date(2026, 11, 30, 12, 0, 1, 0, time.UTC)
	t2 := t1.Add(time.Second)
	step := &runner.StepRecord{ID: "s-1", StepID: "greet", Status: runner.StepFailed, Attempts: 2,
		Output: json.RawMessage(`"hi"`), Error: &runner.Error{Code: "HTTP_500", Message: "bad", Step: "greet"},
		StartedAt: &t1, FinishedAt: &t2, Conflict: json.RawMessage(`{"owner":"run-0"}`), State: json.RawMessage(`{"until":1}`)}
	bare := &runner.StepRecord{ID: "s-2", StepID: "wait", Status: runner.StepPending}
	nested := &runner.StepRecord{ID: "charge", Path: "each/3/charge", StepID: "c", Status: runner.StepPending}
	run := &runner.Run{Error: &runner.Error{Code: "STEP_FAILED", Message: "boom", Step: "greet"},
		WaitingOn: &runner.WaitingOn{Hook: "tok-1", SleepUntil: &t2}, Steps: []*runner.StepRecord{step, bare, nested}}

	st, err := storecodec.EncodeRunState(run, nil)
	require.NoError(t, err)
	require.Equal(t, storedError, string(st.Error))
	require.Equal(t, storedWaiting, string(st.WaitingOn))
	require.Equal(t, storedStep, string(st.Steps[0].Data))
	require.Equal(t, storedBareStep, string(st.Steps[1].Data))
	require.Equal(t, storedNested, string(st.Steps[2].Data))

	for name, decode := range map[string]func() ([]*runner.StepRecord, error){
		"one row per step": func() ([]*runner.StepRecord, error) {
			return storecodec.DecodeStepRows(map[int][]byte{0: []byte(storedStep), 1: []byte(storedBareStep), 2: []byte(storedNested)})
		},
		"one array per run": func() ([]*runner.StepRecord, error) {
			return storecodec.DecodeSteps([]byte("[" + storedStep + "," + storedBareStep + "," + storedNested + "]"))
		},
	} {
		steps, err := decode()
		require.NoError(t, err, name)
		require.Equal(t, []*runner.StepRecord{step, bare, nested}, steps, name)
	}
	gotErr, err := storecodec.DecodeError([]byte(storedError))
	require.NoError(t, err)
	require.Equal(t, run.Error, gotErr)
	gotWaiting, err := storecodec.DecodeWaitingOn([]byte(storedWaiting))
	require.NoError(t, err)
	require.Equal(t, run.WaitingOn, gotWaiting)
}

func TestDecodeRefusesMalformed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		decode func() error
	}{
		{"step not JSON", func() error { _, err := storecodec.DecodeStep([]byte("{")); return err }},
		{"step null", func() error { _, err := storecodec.DecodeStep([]byte("null")); return err }},
		{"array with null", func() error { _, err := storecodec.DecodeSteps([]byte("[null]")); return err }},
		{"step without id", func() error { _, err := storecodec.DecodeStep([]byte(`{"state":{"until":1}}`)); return err }},
		{"array with an empty object", func() error { _, err := storecodec.DecodeSteps([]byte("[{}]")); return err }},
		{"error not JSON", func() error { _, err := storecodec.DecodeError([]byte("{")); return err }},
		{"waiting not JSON", func() error { _, err := storecodec.DecodeWaitingOn([]byte(`{"sleepUntil":1}`)); return err }},
	} {
		require.Error(t, tc.decode(), tc.name)
	}
	none, err := storecodec.DecodeError(nil)
	require.NoError(t, err)
	require.Nil(t, none)
	nothing, err := storecodec.DecodeWaitingOn(nil)
	require.NoError(t, err)
	require.Nil(t, nothing)
}

// TestRunPage: a page of limit runs continues after its last run; a short page continues
// after the last run examined when the bound stopped the list, else it is the last.
func TestRunPage(t *testing.T) {
	t.Parallel()
	at := time.Unix(0, 42)
	runs := []*runner.Run{{ID: "c", CreatedAt: at}, {ID: "b", CreatedAt: at}, {ID: "a", CreatedAt: at}}
	stop := &storecodec.RunCursor{CreatedAt: 7, ID: "z"}
	tests := []struct {
		name  string
		runs  []*runner.Run
		stop  *storecodec.RunCursor
		page  int
		after *storecodec.RunCursor
	}{
		{"more than a page", runs, nil, 2, &storecodec.RunCursor{CreatedAt: 42, ID: "b"}},
		{"more than a page, stopped too", runs, stop, 2, &storecodec.RunCursor{CreatedAt: 42, ID: "b"}},
		{"last page", runs[:2], nil, 2, nil},
		{"short, stopped", runs[:1], stop, 1, stop},
		{"empty, stopped", nil, stop, 0, stop},
		{"empty, last", nil, nil, 0, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			page, next, err := storecodec.RunPage(tc.runs, 2, tc.stop)
			require.NoError(t, err)
			require.Len(t, page, tc.page)
			if tc.after == nil {
				require.Empty(t, next)
				return
			}
			var got storecodec.RunCursor
			require.NoError(t, storecodec.DecodeCursor(next, &got, errors.New("bad")))
			require.Equal(t, *tc.after, got)
		})
	}
}

// Who a run acts for and who published a version read back as written; none recorded (a
// record stored before either was kept) is no one, and a principal stored without scopes
// is refused, never read as admin.
func TestAuthorityEncoding(t *testing.T) {
	t.Parallel()
	narrow := auth.Principal{ID: "tok-1", Scopes: auth.Scopes{{Permission: auth.RunsRead, Workflow: "a"}, {Permission: auth.RunsWrite, Tag: "billing"}}}
	a := runner.Authority{narrow, {ID: "tok-2", Scopes: auth.AdminScopes()}}
	s, err := storecodec.EncodeAuthority(a)
	require.NoError(t, err)
	got, err := storecodec.DecodeAuthority(s)
	require.NoError(t, err)
	require.Equal(t, a, got)

	none, err := storecodec.EncodeAuthority(nil)
	require.NoError(t, err)
	require.Empty(t, none)
	got, err = storecodec.DecodeAuthority("")
	require.NoError(t, err)
	require.Empty(t, got)

	_, err = storecodec.DecodeAuthority(`[{"id": "tok-3", "scopes": ""}]`)
	require.ErrorIs(t, err, auth.ErrInvalidScope)

	p, err := storecodec.EncodePublisher(&narrow)
	require.NoError(t, err)
	back, err := storecodec.DecodePublisher(p)
	require.NoError(t, err)
	require.Equal(t, &narrow, back)
	back, err = storecodec.DecodePublisher("")
	require.NoError(t, err)
	require.Nil(t, back)
	_, err = storecodec.DecodePublisher(s)
	require.Error(t, err, "a version has one publisher")
}

func TestTriggerRoundTrip(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 29, 2, 30, 0, 0, time.FixedZone("CEST", 7200))
	for _, tc := range []struct {
		name    string
		trigger runner.Trigger
		stored  string
	}{
		{"none: a run stored before triggers", runner.Trigger{}, ""},
		{"api", runner.Trigger{Type: runner.TriggerAPI}, `{"type":"api"}`},
		{"schedule 0 keeps its index", runner.ScheduleTrigger(0, at), `{"type":"schedule","index":0,"at":"2026-03-29T00:30:00Z"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := storecodec.EncodeTrigger(tc.trigger)
			require.NoError(t, err)
			require.Equal(t, tc.stored, string(b))
			got, err := storecodec.DecodeTrigger(b)
			require.NoError(t, err)
			require.Equal(t, tc.trigger, got)
		})
	}
	_, err := storecodec.DecodeTrigger([]byte(`[`))
	require.Error(t, err)
}

// storedAttempts is a step record with its evaluated input and attempt history (from the
// release that added them): it must keep decoding, and encoding must keep writing it.
const storedAttempts = `{"id":"call","stepId":"s","status":"completed","attempts":2,"input":{"url":"https://x"},` +
	`"history":[{"n":1,"startedAt":"2026-11-30T12:00:01Z","finishedAt":"2026-11-30T12:00:01Z",` +
	`"error":{"code":"HTTP_ERROR","message":"GET https://x: 503","step":"call"},"request":"GET https://x","status":503},` +
	`{"n":2,"startedAt":"2026-11-30T12:00:02Z","finishedAt":"2026-11-30T12:00:02Z","request":"GET https://x","status":200}]}`

func TestStoredAttempts(t *testing.T) {
	t.Parallel()
	t1 := time.Date(2026, 11, 30, 12, 0, 1, 0, time.UTC)
	t2 := t1.Add(time.Second)
	step := &runner.StepRecord{ID: "call", StepID: "s", Status: runner.StepCompleted, Attempts: 2,
		Input: json.RawMessage(`{"url":"https://x"}`), History: []runner.Attempt{
			{N: 1, StartedAt: t1, FinishedAt: t1, Error: &runner.Error{Code: "HTTP_ERROR", Message: "GET https://x: 503", Step: "call"},
				Request: "GET https://x", Status: 503},
			{N: 2, StartedAt: t2, FinishedAt: t2, Request: "GET https://x", Status: 200}}}
	enc, err := storecodec.EncodeStep(step)
	require.NoError(t, err)
	require.Equal(t, storedAttempts, string(enc))
	got, err := storecodec.DecodeStep([]byte(storedAttempts))
	require.NoError(t, err)
	require.Equal(t, step, got)
}
