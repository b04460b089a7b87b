// Package canonjson writes JSON in one canonical form, so that documents equal as JSON are
// equal as bytes: object keys sorted, no insignificant whitespace, numbers in one spelling
// (1, 1.0, 1e0 and 10e-1 are all "1"). It follows RFC 8785 in spirit: a number whose exact
// decimal value is an integer within int64 keeps its exact digits, any other is written as
// the shortest spelling of the nearest float64. Duplicate object keys keep the last value, as
// encoding/json does.
package canonjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Transform returns the canonical form of the JSON document raw. Anything but exactly one
// JSON value (trailing data, invalid JSON) is an error.
func Transform(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("invalid JSON: data after the document")
	}
	return Marshal(v)
}

// Marshal writes v (as produced by encoding/json, with or without UseNumber) canonically.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	if err := write(&buf, v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func write(buf *bytes.Buffer, v any) error {
	switch x := v.(type) {
	case json.Number:
		return writeNumber(buf, x)
	case float64:
		return writeNumber(buf, json.Number(strconv.FormatFloat(x, 'g', -1, 64)))
	case map[string]any:
		return writeObject(buf, x)
	case []any:
		buf.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := write(buf, e); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
		return nil
	default:
		b, err := marshalNoEscape(x)
		if err != nil {
			return err
		}
		buf.Write(b)
		return nil
	}
}

func writeObject(buf *bytes.Buffer, m map[string]any) error {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	buf.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			buf.WriteByte(',')
		}
		kb, err := marshalNoEscape(k)
		if err != nil {
			return err
		}
		buf.Write(kb)
		buf.WriteByte(':')
		if err := write(buf, m[k]); err != nil {
			return err
		}
	}
	buf.WriteByte('}')
	return nil
}

func writeNumber(buf *bytes.Buffer, n json.Number) error {
	if i, ok := exactInt64(string(n)); ok {
		buf.WriteString(strconv.FormatInt(i, 10))
		return nil
	}
	f, err := n.Float64()
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return fmt.Errorf("number %q out of range", string(n))
	}
	// Integral floats inside int64 are spelled as integers, so that a value written as a
	// float64 (1e+15) and its integer spelling (1000000000000000) come out the same.
	if f == math.Trunc(f) && math.Abs(f) < math.MaxInt64 {
		buf.WriteString(strconv.FormatInt(int64(f), 10))
		return nil
	}
	buf.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
	return nil
}

// maxExponent bounds the exponents exactInt64 considers, far past any integral int64 in a
// document of sane size, so that exponent arithmetic cannot overflow.
const maxExponent = 1 << 30

// exactInt64 reports the value of the JSON number s when its exact decimal value is an
// integer within int64, whatever its spelling (12, 12.0, 1.2e1, 120e-1).
func exactInt64(s string) (int64, bool) {
	mant, exp := s, 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.Atoi(s[i+1:])
		if err != nil || e > maxExponent || e < -maxExponent {
			return 0, false
		}
		mant, exp = s[:i], e
	}
	sign := ""
	if strings.HasPrefix(mant, "-") {
		sign, mant = "-", mant[1:]
	}
	if i := strings.IndexByte(mant, '.'); i >= 0 {
		exp -= len(mant) - i - 1
		mant = mant[:i] + mant[i+1:]
	}
	mant = strings.TrimLeft(mant, "0")
	trimmed := strings.TrimRight(mant, "0")
	exp += len(mant) - len(trimmed)
	switch {
	case trimmed == "":
		return 0, true
	case exp < 0 || len(trimmed)+exp > 19:
		return 0, false
	}
	i, err := strconv.ParseInt(sign+trimmed+strings.Repeat("0", exp), 10, 64)
	return i, err == nil
}

func marshalNoEscape(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
