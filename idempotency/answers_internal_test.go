package idempotency

import (
	"bytes"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var heldAt = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func heldRecord(scope, key string, state State, body int) *Record {
	return &Record{Scope: scope, Key: key, Fingerprint: "fp", State: state, Status: http.StatusAccepted,
		Header: http.Header{"Content-Type": {"application/json"}}, Body: bytes.Repeat([]byte("x"), body),
		CreatedAt: heldAt, ExpiresAt: heldAt.Add(time.Hour)}
}

// TestAnswersBounds: the held keys stay within MaxAnswersHeld and MaxAnswersHeldBytes, the
// first held going first; a key over MaxAnswersHeldBytes/256 and a key in progress are not
// held; a copy goes in and out, so no one shares the held bytes.
func TestAnswersBounds(t *testing.T) {
	t.Parallel()
	t.Run("count", func(t *testing.T) {
		t.Parallel()
		var a answers
		for i := range MaxAnswersHeld + 10 {
			k := fmt.Sprintf("k%d", i)
			a.put(Request{Scope: "p:x", Key: k}, "", heldRecord("p:x", k, StateDone, 10))
		}
		require.Equal(t, MaxAnswersHeld, a.len())
		_, _, ok := a.get(Request{Scope: "p:x", Key: "k0"}, heldAt)
		require.False(t, ok, "the first held went first")
		_, _, ok = a.get(Request{Scope: "p:x", Key: fmt.Sprintf("k%d", MaxAnswersHeld+9)}, heldAt)
		require.True(t, ok)
	})
	t.Run("bytes", func(t *testing.T) {
		t.Parallel()
		var a answers
		const body = MaxAnswersHeldBytes/256 - 1024
		for i := range 300 {
			k := fmt.Sprintf("k%d", i)
			a.put(Request{Scope: "p:x", Key: k}, "", heldRecord("p:x", k, StateDone, body))
			require.LessOrEqual(t, a.bytes, MaxAnswersHeldBytes)
		}
		require.Less(t, a.len(), 300)
		require.Greater(t, a.len(), 200)
	})
	t.Run("not held", func(t *testing.T) {
		t.Parallel()
		var a answers
		a.put(Request{Scope: "p:x", Key: "big"}, "", heldRecord("p:x", "big", StateDone, MaxAnswersHeldBytes/256))
		a.put(Request{Scope: "p:x", Key: "busy"}, "", heldRecord("p:x", "busy", StateInProgress, 1))
		a.put(Request{Scope: "w:x", Key: "hook"}, "", heldRecord("w:x", "hook", StateDone, 1))
		a.put(Request{Scope: "p:x", Key: "other"}, "", heldRecord("p:x", "else", StateDone, 1))
		a.put(Request{Scope: "p:x", Key: "bigreq", Body: bytes.Repeat([]byte("x"), MaxAnswersHeldBytes/256)}, "fp",
			heldRecord("p:x", "bigreq", StateDone, 1))
		a.put(Request{Scope: "p:x", Key: "taken"}, "", heldRecord("p:x", "taken", StateTaken, 0))
		require.Equal(t, 1, a.len(), "only the taken key is held")
		require.Less(t, a.bytes, MaxAnswersHeldBytes/256)
	})
	t.Run("copies", func(t *testing.T) {
		t.Parallel()
		var a answers
		rec := heldRecord("p:x", "k", StateDone, 3)
		req := Request{Scope: "p:x", Key: "k", Method: "POST", Body: []byte("{}")}
		a.put(req, "fp", rec)
		rec.Body[0], req.Body[0] = 'y', '['
		got, same, ok := a.get(Request{Scope: "p:x", Key: "k", Method: "POST", Body: []byte("{}")}, heldAt)
		require.True(t, ok)
		require.True(t, same, "the request was remembered as it was put")
		require.Equal(t, "xxx", string(got.Body))
		got.Body[0] = 'z'
		got.Header.Set("Content-Type", "text/plain")
		again, _, _ := a.get(req, heldAt)
		require.Equal(t, "xxx", string(again.Body))
		require.Equal(t, "application/json", again.Header.Get("Content-Type"))
	})
	t.Run("expired keys go", func(t *testing.T) {
		t.Parallel()
		var a answers
		for i := range 1000 {
			k := fmt.Sprintf("k%d", i)
			a.put(Request{Scope: "p:x", Key: k}, "", heldRecord("p:x", k, StateDone, 1))
			_, _, ok := a.get(Request{Scope: "p:x", Key: k}, heldAt.Add(time.Hour))
			require.False(t, ok)
		}
		require.Zero(t, a.len())
		require.Zero(t, a.bytes)
		require.LessOrEqual(t, len(a.order), 64+1)
	})
}

func TestSameRequest(t *testing.T) {
	t.Parallel()
	base := Request{Method: "POST", Path: "/p", Query: map[string][]string{"a": {"1", "2"}}, Body: []byte(`{"x":1}`)}
	tests := []struct {
		name  string
		tweak func(*Request)
		same  bool
	}{
		{"identical", func(*Request) {}, true},
		{"method", func(r *Request) { r.Method = "post" }, false},
		{"path", func(r *Request) { r.Path = "/q" }, false},
		{"body", func(r *Request) { r.Body = []byte(`{"x": 1}`) }, false},
		{"query value", func(r *Request) { r.Query = map[string][]string{"a": {"1"}} }, false},
		{"query order", func(r *Request) { r.Query = map[string][]string{"a": {"2", "1"}} }, false},
		{"query key", func(r *Request) { r.Query = map[string][]string{"b": {"1", "2"}} }, false},
		{"no query", func(r *Request) { r.Query = nil }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := cloneRequest(base)
			tt.tweak(&r)
			require.Equal(t, tt.same, sameRequest(&base, &r))
			if tt.same {
				require.Equal(t, Fingerprint(base.Method, base.Path, base.Query, base.Body), Fingerprint(r.Method, r.Path, r.Query, r.Body))
			}
		})
	}
}
