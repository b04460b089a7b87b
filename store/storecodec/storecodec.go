// Package storecodec holds the encodings every store backend shares, so that a run's
// state, a list cursor and a page size mean the same on SQLite and on Redis, written once.
package storecodec

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/schemas"
)

// EncodeCursor makes an opaque cursor of a sort key.
func EncodeCursor(key any) (string, error) {
	b, err := json.Marshal(key)
	if err != nil {
		return "", fmt.Errorf("encoding cursor: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// DecodeCursor reads a cursor made by EncodeCursor into key; a bad one → invalid, the
// calling contract's sentinel.
func DecodeCursor(cursor string, key any, invalid error) error {
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err == nil {
		err = json.Unmarshal(b, key)
	}
	if err != nil {
		return fmt.Errorf("cursor %q: %w", cursor, invalid)
	}
	return nil
}

// RunCursor is the sort key of a list of runs: creation time, then ID, both descending.
type RunCursor struct {
	CreatedAt int64  `json:"t"`
	ID        string `json:"i"`
}

// RunCursorOf is the sort key of r in a list of runs.
func RunCursorOf(r *runner.Run) RunCursor {
	return RunCursor{CreatedAt: r.CreatedAt.UnixNano(), ID: r.ID}
}

// RunPage cuts runs, the runs a list found in its order (up to limit+1 of them), to a page
// of limit and the cursor of the page after it ("" when runs was the last page). stop is
// the sort key of the last run the list examined when its bound (limits.MaxRunsExamined)
// stopped it before it found limit+1 runs, else nil: the page is then short, possibly
// empty, and the next one begins after stop.
func RunPage(runs []*runner.Run, limit int, stop *RunCursor) ([]*runner.Run, string, error) {
	switch {
	case len(runs) > limit:
		runs = runs[:limit]
		last := RunCursorOf(runs[limit-1])
		stop = &last
	case stop == nil:
		return runs, "", nil
	}
	next, err := EncodeCursor(*stop)
	return runs, next, err
}

// UTC returns *t in UTC, or nil.
func UTC(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// MarshalOrNil marshals v, or returns nil for a nil pointer so the field stays absent.
func MarshalOrNil[T any](v *T) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	return json.Marshal(v)
}

// RunState is the encoded part of a run a worker changes; nil fields are absent.
type RunState struct {
	Error     []byte
	WaitingOn []byte
	// Trigger is what started the run (EncodeTrigger), fixed at admission: only
	// EncodeNewRun sets it.
	Trigger []byte
	// Steps are the step records to write, each one row (SQLite) or hash field (Redis).
	Steps []EncodedStep
}

// EncodedStep is one step record as stored, with its index in the run.
type EncodedStep struct {
	Index int
	Data  []byte
}

// EncodeRunState encodes r's error, waitingOn and the step records at indexes (nil: all of
// them), times in UTC. An index out of range is an error.
func EncodeRunState(r *runner.Run, indexes []int) (RunState, error) {
	var st RunState
	var err error
	if st.Error, err = MarshalOrNil(errorRowOf(r.Error)); err != nil {
		return st, err
	}
	if st.WaitingOn, err = MarshalOrNil(waitingRowOf(r.WaitingOn)); err != nil {
		return st, err
	}
	if indexes == nil {
		indexes = make([]int, len(r.Steps))
		for i := range indexes {
			indexes[i] = i
		}
	}
	st.Steps = make([]EncodedStep, len(indexes))
	for n, i := range indexes {
		if i < 0 || i >= len(r.Steps) {
			return st, fmt.Errorf("step index %d out of range: the run has %d steps", i, len(r.Steps))
		}
		b, err := EncodeStep(r.Steps[i])
		if err != nil {
			return st, err
		}
		st.Steps[n] = EncodedStep{Index: i, Data: b}
	}
	return st, nil
}

// EncodeNewRun is EncodeRunState of every step of a run being admitted, with what is
// written only then: its trigger.
func EncodeNewRun(r *runner.Run) (RunState, error) {
	st, err := EncodeRunState(r, nil)
	if err == nil {
		st.Trigger, err = EncodeTrigger(r.Trigger)
	}
	return st, err
}

// The stored encodings are declared here, apart from the engine's records, so that what a
// store holds changes only when this package says so: runs written by earlier versions must
// keep decoding (storecodec_test holds records in the stored format).

// errorRow is a run's or a step's error as stored.
type errorRow struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Step    string `json:"step,omitempty"`
}

func errorRowOf(e *runner.Error) *errorRow {
	if e == nil {
		return nil
	}
	return &errorRow{Code: e.Code, Message: e.Message, Step: e.Step}
}

func (e *errorRow) record() *runner.Error {
	if e == nil {
		return nil
	}
	return &runner.Error{Code: e.Code, Message: e.Message, Step: e.Step}
}

// waitingRow is what a waiting run waits for, as stored; times in UTC.
type waitingRow struct {
	Hook       string           `json:"hook,omitempty"`
	Ask        *schemas.HookAsk `json:"ask,omitempty"`
	SleepUntil *time.Time       `json:"sleepUntil,omitempty"`
}

func waitingRowOf(w *runner.WaitingOn) *waitingRow {
	if w == nil {
		return nil
	}
	return &waitingRow{Hook: w.Hook, Ask: w.Ask, SleepUntil: UTC(w.SleepUntil)}
}

// stepRow is a step record as stored, with the engine's State; times in UTC.
type stepRow struct {
	ID         string            `json:"id"`
	Path       string            `json:"path,omitempty"`
	StepID     string            `json:"stepId"`
	Status     runner.StepStatus `json:"status"`
	Attempts   int               `json:"attempts"`
	Output     json.RawMessage   `json:"output,omitempty"`
	Error      *errorRow         `json:"error,omitempty"`
	StartedAt  *time.Time        `json:"startedAt,omitempty"`
	FinishedAt *time.Time        `json:"finishedAt,omitempty"`
	Conflict   json.RawMessage   `json:"conflict,omitempty"`
	State      json.RawMessage   `json:"state,omitempty"`
	Input      json.RawMessage   `json:"input,omitempty"`
	History    []attemptRow      `json:"history,omitempty"`
}

// attemptRow is one attempt of a step as stored; times in UTC.
type attemptRow struct {
	N          int       `json:"n"`
	StartedAt  time.Time `json:"startedAt"`
	FinishedAt time.Time `json:"finishedAt"`
	Error      *errorRow `json:"error,omitempty"`
	Request    string    `json:"request,omitempty"`
	Status     int       `json:"status,omitempty"`
}

func historyRows(h []runner.Attempt) []attemptRow {
	if h == nil {
		return nil
	}
	out := make([]attemptRow, len(h))
	for i, a := range h {
		out[i] = attemptRow{N: a.N, StartedAt: a.StartedAt.UTC(), FinishedAt: a.FinishedAt.UTC(), Error: errorRowOf(a.Error),
			Request: a.Request, Status: a.Status}
	}
	return out
}

func historyOf(rows []attemptRow) []runner.Attempt {
	if rows == nil {
		return nil
	}
	out := make([]runner.Attempt, len(rows))
	for i, a := range rows {
		out[i] = runner.Attempt{N: a.N, StartedAt: a.StartedAt, FinishedAt: a.FinishedAt, Error: a.Error.record(),
			Request: a.Request, Status: a.Status}
	}
	return out
}

func stepRowOf(st *runner.StepRecord) stepRow {
	return stepRow{ID: st.ID, Path: st.Path, StepID: st.StepID, Status: st.Status, Attempts: st.Attempts, Output: st.Output,
		Error: errorRowOf(st.Error), StartedAt: UTC(st.StartedAt), FinishedAt: UTC(st.FinishedAt),
		Conflict: st.Conflict, State: st.State, Input: st.Input, History: historyRows(st.History)}
}

func (row *stepRow) record() *runner.StepRecord {
	return &runner.StepRecord{ID: row.ID, Path: row.Path, StepID: row.StepID, Status: row.Status, Attempts: row.Attempts,
		Output: row.Output, Error: row.Error.record(), StartedAt: row.StartedAt, FinishedAt: row.FinishedAt,
		Conflict: row.Conflict, State: row.State, Input: row.Input, History: historyOf(row.History)}
}

// EncodeStep encodes one step record with its engine state, times in UTC.
func EncodeStep(st *runner.StepRecord) ([]byte, error) {
	row := stepRowOf(st)
	if b, ok := appendStep(make([]byte, 0, 256), &row); ok {
		return b, nil
	}
	b, err := json.Marshal(row)
	if err != nil {
		return nil, fmt.Errorf("encoding step %s: %w", st.ID, err)
	}
	return b, nil
}

// appendStep appends row as json.Marshal encodes it, without reflection, for the common
// record (every step of every run is encoded at least once). false: row holds something it
// leaves to json.Marshal (a string or raw JSON that needs escaping, a time json.Marshal
// refuses, raw JSON that is not valid), and b is then garbage.
func appendStep(b []byte, row *stepRow) ([]byte, bool) {
	ok := true
	str := func(name, v string, omitEmpty bool) {
		if omitEmpty && v == "" {
			return
		}
		b = append(b, name...)
		b, ok = appendPlain(b, v, ok)
	}
	raw := func(name string, v json.RawMessage) {
		if len(v) == 0 || !ok {
			return
		}
		b = append(b, name...)
		b, ok = appendRaw(b, v)
	}
	tm := func(name string, v *time.Time) {
		if v == nil || !ok {
			return
		}
		if y := v.Year(); y < 0 || y > 9999 {
			ok = false
			return
		}
		b = append(b, name...)
		b = append(b, '"')
		b = v.AppendFormat(b, time.RFC3339Nano)
		b = append(b, '"')
	}
	errorObj := func(name string, e *errorRow) {
		if e == nil {
			return
		}
		str(name+`{"code":`, e.Code, false)
		str(`,"message":`, e.Message, false)
		str(`,"step":`, e.Step, true)
		b = append(b, '}')
	}
	str(`{"id":`, row.ID, false)
	str(`,"path":`, row.Path, true)
	str(`,"stepId":`, row.StepID, false)
	str(`,"status":`, string(row.Status), false)
	b = append(b, `,"attempts":`...)
	b = strconv.AppendInt(b, int64(row.Attempts), 10)
	raw(`,"output":`, row.Output)
	errorObj(`,"error":`, row.Error)
	tm(`,"startedAt":`, row.StartedAt)
	tm(`,"finishedAt":`, row.FinishedAt)
	raw(`,"conflict":`, row.Conflict)
	raw(`,"state":`, row.State)
	raw(`,"input":`, row.Input)
	if len(row.History) > 0 {
		b = append(b, `,"history":[`...)
		for i := range row.History {
			a := &row.History[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"n":`...)
			b = strconv.AppendInt(b, int64(a.N), 10)
			tm(`,"startedAt":`, &a.StartedAt)
			tm(`,"finishedAt":`, &a.FinishedAt)
			errorObj(`,"error":`, a.Error)
			str(`,"request":`, a.Request, true)
			if a.Status != 0 {
				b = append(b, `,"status":`...)
				b = strconv.AppendInt(b, int64(a.Status), 10)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	return append(b, '}'), ok
}

// appendPlain appends s quoted when no byte of it needs escaping in JSON (as json.Marshal
// escapes, HTML characters included); else ok is false.
func appendPlain(b []byte, s string, ok bool) ([]byte, bool) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return b, false
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"'), ok
}

// appendRaw appends raw JSON v compacted, as json.Marshal writes a json.RawMessage, when
// it is valid and holds nothing json.Marshal would escape (HTML characters, U+2028, U+2029);
// else false.
func appendRaw(b []byte, v json.RawMessage) ([]byte, bool) {
	for _, c := range v {
		if c == '<' || c == '>' || c == '&' || c == 0xE2 {
			return b, false
		}
	}
	buf := bytes.NewBuffer(b)
	if err := json.Compact(buf, v); err != nil {
		return b, false
	}
	return buf.Bytes(), true
}

// DecodeStep reads what EncodeStep wrote.
func DecodeStep(b []byte) (*runner.StepRecord, error) {
	var row *stepRow
	if err := json.Unmarshal(b, &row); err != nil {
		return nil, fmt.Errorf("decoding step: %w", err)
	}
	if !row.valid() {
		return nil, errNotStep
	}
	return row.record(), nil
}

// errNotStep is a stored step that is not one: null, or an object without an id (every
// step record has one, the step's id in the definition).
var errNotStep = errors.New("decoding step: not an object with an id")

func (row *stepRow) valid() bool { return row != nil && row.ID != "" }

// DecodeError reads a run's error as EncodeRunState stored it; empty is no error.
func DecodeError(b []byte) (*runner.Error, error) {
	row, err := UnmarshalOrNil[errorRow](b)
	if err != nil {
		return nil, fmt.Errorf("decoding the run's error: %w", err)
	}
	return row.record(), nil
}

// DecodeWaitingOn reads what a run waits for as EncodeRunState stored it; empty is nothing.
func DecodeWaitingOn(b []byte) (*runner.WaitingOn, error) {
	row, err := UnmarshalOrNil[waitingRow](b)
	if err != nil {
		return nil, fmt.Errorf("decoding what the run waits on: %w", err)
	}
	if row == nil {
		return nil, nil
	}
	return &runner.WaitingOn{Hook: row.Hook, Ask: row.Ask, SleepUntil: row.SleepUntil}, nil
}

// UnmarshalOrNil reads what MarshalOrNil wrote: empty is nil.
func UnmarshalOrNil[T any](b []byte) (*T, error) {
	if len(b) == 0 {
		return nil, nil
	}
	v := new(T)
	if err := json.Unmarshal(b, v); err != nil {
		return nil, err
	}
	return v, nil
}

// DecodeStepRows reads a run's step records stored one per index; the indexes must be
// exactly 0 … len(rows)-1. None → nil.
func DecodeStepRows(rows map[int][]byte) ([]*runner.StepRecord, error) {
	if len(rows) == 0 {
		return nil, nil
	}
	steps := make([]*runner.StepRecord, len(rows))
	for i, b := range rows {
		if i < 0 || i >= len(rows) {
			return nil, fmt.Errorf("step index %d out of range: %d steps stored", i, len(rows))
		}
		st, err := DecodeStep(b)
		if err != nil {
			return nil, fmt.Errorf("step %d: %w", i, err)
		}
		steps[i] = st
	}
	return steps, nil
}

// DecodeSteps reads step records stored the old way, as one JSON array for the whole run.
func DecodeSteps(b []byte) ([]*runner.StepRecord, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var rows []*stepRow
	if err := json.Unmarshal(b, &rows); err != nil {
		return nil, fmt.Errorf("decoding steps: %w", err)
	}
	steps := make([]*runner.StepRecord, len(rows))
	for i, row := range rows {
		if !row.valid() {
			return nil, fmt.Errorf("step %d: %w", i, errNotStep)
		}
		steps[i] = row.record()
	}
	return steps, nil
}

// LeaseOutcome sorts the runs an owner asked to renew: those whose lease it no longer holds
// (not in held) and those still held with a cancel requested (held[id] true).
func LeaseOutcome(runIDs []string, held map[string]bool) (lost, cancelled []string) {
	for _, id := range runIDs {
		cancel, ok := held[id]
		switch {
		case !ok:
			lost = append(lost, id)
		case cancel:
			cancelled = append(cancelled, id)
		}
	}
	return lost, cancelled
}

// Claimed hands out the runs just claimed for owner, each with its lease, the earliest due
// first (then by ID), as runner.Store.ClaimRuns returns them.
func Claimed(runs []*runner.Run, owner string) []runner.Claimed {
	slices.SortFunc(runs, func(a, b *runner.Run) int {
		if c := a.WakeAt.Compare(b.WakeAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	out := make([]runner.Claimed, len(runs))
	for i, r := range runs {
		out[i] = runner.Claimed{Run: r, Lease: runner.NewLease(r.ID, owner)}
	}
	return out
}

// Admitted is what runner.Store.CreateRun reports once p was written, or refused, with the
// key's outcome res: with the run's lease when the write took one for p.Owner.
func Admitted(p runner.CreateRunParams, res idempotency.ClaimResult) runner.CreateRunResult {
	out := runner.CreateRunResult{ClaimResult: res}
	if p.Owner != "" && res.Outcome == idempotency.Claimed {
		out.Lease = runner.NewLease(p.Run.ID, p.Owner)
	}
	return out
}

// EncodeHosts is how both backends keep a connection's hosts: a JSON array.
func EncodeHosts(hosts []string) (string, error) {
	if hosts == nil {
		hosts = []string{}
	}
	b, err := json.Marshal(hosts)
	if err != nil {
		return "", fmt.Errorf("encoding connection hosts: %w", err)
	}
	return string(b), nil
}

// DecodeHosts reads EncodeHosts. Empty (a connection stored before connections had hosts)
// is no host: the connection is sent nowhere.
func DecodeHosts(s string) ([]string, error) {
	hosts := []string{}
	if s == "" {
		return hosts, nil
	}
	if err := json.Unmarshal([]byte(s), &hosts); err != nil {
		return nil, fmt.Errorf("decoding connection hosts: %w", err)
	}
	return hosts, nil
}

// principalRow is how both backends keep a principal that a run acts for or that published
// a version: its ID and its scopes (auth.Scopes.String).
type principalRow struct {
	ID     string `json:"id"`
	Scopes string `json:"scopes"`
}

// EncodeAuthority is how both backends keep who a run acts for (runner.Run.ActsFor): a
// JSON array of {id, scopes}; "" for no one.
func EncodeAuthority(a runner.Authority) (string, error) {
	if len(a) == 0 {
		return "", nil
	}
	rows := make([]principalRow, len(a))
	for i, p := range a {
		rows[i] = principalRow{ID: p.ID, Scopes: p.Scopes.String()}
	}
	b, err := json.Marshal(rows)
	if err != nil {
		return "", fmt.Errorf("encoding a run's authority: %w", err)
	}
	return string(b), nil
}

// DecodeAuthority reads EncodeAuthority. "" (also a run stored before runs kept it) is no
// one. A principal without scopes is refused, never read as admin.
func DecodeAuthority(s string) (runner.Authority, error) {
	if s == "" {
		return nil, nil
	}
	var rows []principalRow
	if err := json.Unmarshal([]byte(s), &rows); err != nil {
		return nil, fmt.Errorf("decoding a run's authority: %w", err)
	}
	out := make(runner.Authority, len(rows))
	for i, row := range rows {
		scopes, err := auth.ParseScopeList(row.Scopes)
		if err != nil {
			return nil, fmt.Errorf("decoding a run's authority: principal %q: %w", row.ID, err)
		}
		out[i] = auth.Principal{ID: row.ID, Scopes: scopes}
	}
	return out, nil
}

// EncodePublisher is how both backends keep who published a version
// (catalog.Version.PublishedBy): EncodeAuthority of that one principal; "" for nil.
func EncodePublisher(p *auth.Principal) (string, error) {
	if p == nil {
		return "", nil
	}
	return EncodeAuthority(runner.Authority{*p})
}

// DecodePublisher reads EncodePublisher; "" (a version published before publishers were
// recorded) is nil.
func DecodePublisher(s string) (*auth.Principal, error) {
	a, err := DecodeAuthority(s)
	switch {
	case err != nil:
		return nil, err
	case len(a) == 0:
		return nil, nil
	case len(a) > 1:
		return nil, fmt.Errorf("decoding a version's publisher: %d principals", len(a))
	}
	return &a[0], nil
}

// triggerRow is what started a run, as stored; the tick in UTC.
type triggerRow struct {
	Type  string     `json:"type"`
	Index *int       `json:"index,omitempty"`
	At    *time.Time `json:"at,omitempty"`
}

// EncodeTrigger encodes what started a run: nil for a zero trigger (a run that does not
// say), so that the field stays absent.
func EncodeTrigger(t runner.Trigger) ([]byte, error) {
	if t.Type == "" {
		return nil, nil
	}
	row := triggerRow{Type: t.Type}
	if t.Type == runner.TriggerSchedule {
		at := t.At.UTC()
		row.Index, row.At = &t.Schedule, &at
	}
	return json.Marshal(row)
}

// DecodeTrigger reads what EncodeTrigger wrote; empty is the zero trigger (runs stored
// before runs carried one).
func DecodeTrigger(b []byte) (runner.Trigger, error) {
	row, err := UnmarshalOrNil[triggerRow](b)
	if err != nil || row == nil {
		return runner.Trigger{}, err
	}
	t := runner.Trigger{Type: row.Type}
	if row.Index != nil {
		t.Schedule = *row.Index
	}
	if row.At != nil {
		t.At = row.At.UTC()
	}
	return t, nil
}

// undeliveredRow is what a run kept of its undelivered payloads, as stored: the backends
// build it in the write that ends the run (Redis in its script, in this shape).
type undeliveredRow struct {
	Payloads []undeliveredPayloadRow `json:"payloads"`
	Omitted  int                     `json:"omitted,omitempty"`
}

type undeliveredPayloadRow struct {
	Token   string          `json:"token"`
	Payload json.RawMessage `json:"payload"`
}

// EncodeUndelivered encodes what a run keeps of its undelivered payloads; nil is nil.
func EncodeUndelivered(u *runner.Undelivered) ([]byte, error) {
	if u == nil {
		return nil, nil
	}
	row := undeliveredRow{Payloads: make([]undeliveredPayloadRow, len(u.Payloads)), Omitted: u.Omitted}
	for i, p := range u.Payloads {
		row.Payloads[i] = undeliveredPayloadRow{Token: p.Token, Payload: p.Payload}
	}
	return json.Marshal(row)
}

// DecodeUndelivered reads what EncodeUndelivered wrote; empty is nil.
func DecodeUndelivered(b []byte) (*runner.Undelivered, error) {
	row, err := UnmarshalOrNil[undeliveredRow](b)
	if err != nil {
		return nil, fmt.Errorf("decoding the run's undelivered payloads: %w", err)
	}
	if row == nil || (len(row.Payloads) == 0 && row.Omitted == 0) {
		return nil, nil
	}
	u := &runner.Undelivered{Payloads: make([]runner.UndeliveredPayload, len(row.Payloads)), Omitted: row.Omitted}
	for i, p := range row.Payloads {
		u.Payloads[i] = runner.UndeliveredPayload{Token: p.Token, Payload: p.Payload}
	}
	return u, nil
}
