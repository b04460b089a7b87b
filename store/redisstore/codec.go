package redisstore

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gorunner/gorunner/store/storecodec"
)

// ts encodes t as 20-digit zero-padded UTC Unix nanoseconds; the zero time is all zeros.
// Fixed width makes string order time order, also inside Lua.
func ts(t time.Time) string {
	if t.IsZero() {
		return zeroTS
	}
	n := t.UnixNano()
	if n < 0 {
		return fmt.Sprintf("%020d", n)
	}
	b := tsDigits(n)
	return string(b[:])
}

// tsDigits is ts of n ≥ 0 Unix nanoseconds, unconverted: comparing it with a string
// (isTS) costs no allocation.
func tsDigits(n int64) (b [20]byte) {
	for i := len(b) - 1; i >= 0; i-- {
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return b
}

// isTS reports whether at is ts of n Unix nanoseconds.
func isTS(at string, n int64) bool {
	if n < 0 {
		return ts(time.Unix(0, n)) == at
	}
	b := tsDigits(n)
	return string(b[:]) == at
}

// zeroTS is ts of the zero time.
const zeroTS = "00000000000000000000"

// tsPtr encodes an optional time; nil is zero.
func tsPtr(t *time.Time) string {
	if t == nil {
		return ts(time.Time{})
	}
	return ts(*t)
}

// score is t as a sorted-set score: Unix microseconds, exact in a double. Lua derives the
// same from a ts string with string.sub(t, 1, 17).
func score(t time.Time) string {
	return ts(t)[:17]
}

// parseTS decodes ts; zero is the zero time, and a missing field reads as zero.
func parseTS(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("bad time %q: %w", s, err)
	}
	if n == 0 {
		return time.Time{}, nil
	}
	return time.Unix(0, n).UTC(), nil
}

// fields is a Redis hash as read, with decoders that remember the first failure.
type fields struct {
	m   map[string]string
	err error
}

func (f *fields) str(name string) string { return f.m[name] }

func (f *fields) bytes(name string) []byte {
	if v := f.m[name]; v != "" {
		return []byte(v)
	}
	return nil
}

func (f *fields) int(name string) int {
	v := f.m[name]
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil && f.err == nil {
		f.err = fmt.Errorf("field %s: %w", name, err)
	}
	return n
}

func (f *fields) bool(name string) bool { return f.m[name] == "1" }

func (f *fields) time(name string) time.Time {
	t, err := parseTS(f.m[name])
	if err != nil && f.err == nil {
		f.err = fmt.Errorf("field %s: %w", name, err)
	}
	return t
}

func (f *fields) timePtr(name string) *time.Time {
	t := f.time(name)
	if t.IsZero() {
		return nil
	}
	return &t
}

// flatMap reads the flat [field, value, …] array a script returns for HGETALL.
func flatMap(v any) map[string]string {
	arr, _ := v.([]any)
	m := make(map[string]string, len(arr)/2)
	for i := 0; i+1 < len(arr); i += 2 {
		k, _ := arr[i].(string)
		val, _ := arr[i+1].(string)
		m[k] = val
	}
	return m
}

// boolArg is how scripts receive a flag.
func boolArg(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// sortKey is a lex sorted-set member ordering records by time, then ID.
func sortKey(t time.Time, id string) string {
	return ts(t) + ":" + id
}

// runCursorOf is the list cursor of a run's sortKey. ok is false for an index entry that
// sortKey did not write, checked by writing it again: a cursor is read back as a sortKey
// (ListRuns), so one of any other entry would resume the walk elsewhere than at it.
func runCursorOf(member string) (c storecodec.RunCursor, ok bool) {
	at, id, ok := strings.Cut(member, ":")
	n, err := strconv.ParseInt(at, 10, 64)
	if !ok || err != nil || !isTS(at, n) {
		return storecodec.RunCursor{}, false
	}
	return storecodec.RunCursor{CreatedAt: n, ID: id}, true
}

// sortKeyID is the ID in a sortKey.
func sortKeyID(member string) string {
	_, id, _ := strings.Cut(member, ":") // "" for an entry not written by sortKey: nothing is read by it
	return id
}
