package idempotency

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/gorunner/gorunner/internal/canonjson"
)

// Body kinds in a fingerprint, so that a raw body can never collide with a JSON one.
const (
	bodyAbsent byte = iota
	bodyJSON
	bodyRaw
)

// Fingerprint identifies a request for keyed replay: two requests with one key are "the
// same request" exactly when their fingerprints are equal (SPEC §4 rule 5). The method is
// compared case-insensitively, the path as is, the query with its keys and each key's
// values sorted, and the body as canonical JSON, so that key order, whitespace and number
// spelling do not count. An empty body (or only whitespace) is an absent body, distinct
// from {}; a body that is not JSON compares byte for byte. The result is the hex SHA-256 of
// a length-prefixed encoding of those parts, so no two different parts can run together.
func Fingerprint(method, path string, query url.Values, body []byte) string {
	h := sha256.New()
	writeField(h, []byte("gorunner-idempotency-v1"))
	writeField(h, []byte(strings.ToUpper(method)))
	writeField(h, []byte(path))
	writeQuery(h, query)
	kind, canon := canonicalBody(body)
	writeField(h, []byte{kind})
	writeField(h, canon)
	return hex.EncodeToString(h.Sum(nil))
}

// canonicalBody says how the body counts: absent, canonical JSON, or raw bytes. Invalid
// UTF-8 stays raw, since decoding would fold every invalid byte into U+FFFD.
func canonicalBody(body []byte) (byte, []byte) {
	if len(bytes.TrimSpace(body)) == 0 {
		return bodyAbsent, nil
	}
	if !utf8.Valid(body) {
		return bodyRaw, body
	}
	canon, err := canonjson.Transform(body)
	if err != nil {
		return bodyRaw, body
	}
	return bodyJSON, canon
}

// writeQuery writes the number of keys, then each key (sorted) with its sorted values.
func writeQuery(h hash.Hash, query url.Values) {
	keys := make([]string, 0, len(query))
	for k := range query {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	writeLength(h, len(keys))
	for _, k := range keys {
		values := slices.Sorted(slices.Values(query[k]))
		writeField(h, []byte(k))
		writeLength(h, len(values))
		for _, v := range values {
			writeField(h, []byte(v))
		}
	}
}

func writeField(h hash.Hash, b []byte) {
	writeLength(h, len(b))
	h.Write(b)
}

func writeLength(h hash.Hash, n int) {
	h.Write(binary.BigEndian.AppendUint64(nil, uint64(n)))
}
