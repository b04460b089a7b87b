package idempotency_test

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"net/url"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/internal/canonjson"
)

type fpReq struct {
	method, path, query, body string
}

func (r fpReq) fingerprint(t testing.TB) string {
	t.Helper()
	q, err := url.ParseQuery(r.query)
	require.NoError(t, err)
	return idempotency.Fingerprint(r.method, r.path, q, []byte(r.body))
}

func TestFingerprint(t *testing.T) {
	t.Parallel()
	run := fpReq{"POST", "/api/workflows/w/run", "environment=production", `{"a":1,"b":[true,null]}`}
	tests := []struct {
		name  string
		a, b  fpReq
		equal bool
	}{
		{"identical", run, run, true},
		{"method case", run, fpReq{"post", run.path, run.query, run.body}, true},
		{"body key order and whitespace", run, fpReq{run.method, run.path, run.query, "{ \"b\": [true, null],\n\"a\": 1.0 }"}, true},
		{"query order", fpReq{"POST", "/x", "a=1&b=2&a=3", ""}, fpReq{"POST", "/x", "b=2&a=3&a=1", ""}, true},
		{"empty and absent body", fpReq{"POST", "/x", "", ""}, fpReq{"POST", "/x", "", " \n\t"}, true},
		{"same raw body", fpReq{"POST", "/x", "", "not json"}, fpReq{"POST", "/x", "", "not json"}, true},
		{"environment", run, fpReq{run.method, run.path, "environment=test", run.body}, false},
		{"method", run, fpReq{"PUT", run.path, run.query, run.body}, false},
		{"path", run, fpReq{run.method, "/api/workflows/v/run", run.query, run.body}, false},
		{"path case", run, fpReq{run.method, "/API/workflows/w/run", run.query, run.body}, false},
		{"body value", run, fpReq{run.method, run.path, run.query, `{"a":2,"b":[true,null]}`}, false},
		{"array order", run, fpReq{run.method, run.path, run.query, `{"a":1,"b":[null,true]}`}, false},
		{"empty body and {}", fpReq{"POST", "/x", "", ""}, fpReq{"POST", "/x", "", "{}"}, false},
		{"string and number", fpReq{"POST", "/x", "", `"1"`}, fpReq{"POST", "/x", "", `1`}, false},
		{"raw bodies", fpReq{"POST", "/x", "", "a=1"}, fpReq{"POST", "/x", "", "a=2"}, false},
		{"raw whitespace counts", fpReq{"POST", "/x", "", "a b"}, fpReq{"POST", "/x", "", "a  b"}, false},
		{"query value moved to key", fpReq{"POST", "/x", "a=b", ""}, fpReq{"POST", "/x", "ab=", ""}, false},
		{"query and path boundary", fpReq{"POST", "/x", "a=1", ""}, fpReq{"POST", "/xa=1", "", ""}, false},
		{"empty query value", fpReq{"POST", "/x", "a=", ""}, fpReq{"POST", "/x", "", ""}, false},
		{"repeated query value", fpReq{"POST", "/x", "a=1&a=1", ""}, fpReq{"POST", "/x", "a=1", ""}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a, b := tt.a.fingerprint(t), tt.b.fingerprint(t)
			require.Len(t, a, 64)
			if tt.equal {
				require.Equal(t, a, b)
			} else {
				require.NotEqual(t, a, b)
			}
		})
	}
}

// FuzzFingerprint checks that requests equal as JSON get one fingerprint however the body
// is spelled, and that requests that differ get different ones.
func FuzzFingerprint(f *testing.F) {
	f.Add("POST", "/api/workflows/w/run", "environment=test&a=1&a=2", []byte(`{"b":[1,2.5,"x"],"a":{"c":null}}`), uint64(1))
	f.Add("post", "/webhooks/t", "", []byte(`[{"z":1e3,"y":"<&>"}]`), uint64(2))
	f.Add("POST", "/x", "q=%00", []byte("not json"), uint64(3))
	f.Add("PUT", "", "", []byte(""), uint64(4))
	f.Fuzz(func(t *testing.T, method, path, rawQuery string, body []byte, seed uint64) {
		query, _ := url.ParseQuery(rawQuery)
		fp := idempotency.Fingerprint(method, path, query, body)
		require.Equal(t, fp, idempotency.Fingerprint(strings.ToLower(method), path, reversed(query), body))
		require.NotEqual(t, fp, idempotency.Fingerprint(method+"X", path, query, body))
		require.NotEqual(t, fp, idempotency.Fingerprint(method, path+"/", query, body))
		if _, err := canonjson.Transform(body); err != nil || !utf8.Valid(body) {
			return
		}
		rng := rand.New(rand.NewPCG(seed, seed>>1))
		var doc any
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber()
		require.NoError(t, dec.Decode(&doc))
		var respelled bytes.Buffer
		respell(t, &respelled, doc, rng)
		require.Equal(t, fp, idempotency.Fingerprint(method, path, query, respelled.Bytes()), respelled.String())
		wrapped := append(append([]byte("["), body...), ']')
		require.NotEqual(t, fp, idempotency.Fingerprint(method, path, query, wrapped))
	})
}

// reversed is q with each key's values in reverse order.
func reversed(q url.Values) url.Values {
	out := url.Values{}
	for k, v := range q {
		out[k] = slices.Clone(v)
		slices.Reverse(out[k])
	}
	return out
}

// respell writes v as JSON again with keys in random order, random whitespace, numbers
// spelled differently and HTML characters escaped.
func respell(t *testing.T, buf *bytes.Buffer, v any, rng *rand.Rand) {
	space := func() { buf.WriteString([]string{"", " ", "\n\t", "\r\n  "}[rng.IntN(4)]) }
	space()
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		buf.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			respell(t, buf, k, rng)
			buf.WriteByte(':')
			respell(t, buf, x[k], rng)
		}
		buf.WriteByte('}')
	case []any:
		buf.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				buf.WriteByte(',')
			}
			respell(t, buf, e, rng)
		}
		buf.WriteByte(']')
	case json.Number:
		buf.WriteString(respellNumber(string(x)))
	default:
		b, err := json.Marshal(x)
		require.NoError(t, err)
		buf.Write(b)
	}
	space()
}

// respellNumber writes the same number another way: 12 as 12.0, 1.5e3 as 1.50e3.
func respellNumber(n string) string {
	mantissa, exponent := n, ""
	if i := strings.IndexAny(n, "eE"); i >= 0 {
		mantissa, exponent = n[:i], n[i:]
	}
	if strings.Contains(mantissa, ".") {
		return mantissa + "0" + exponent
	}
	return mantissa + ".0" + exponent
}
