package schemas

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// DecodeError is a definition document that cannot be decoded: not JSON or YAML, an unknown
// field, a value of the wrong type.
type DecodeError struct {
	// Path is the JSON pointer of the offending value ("" for the whole document).
	Path string `json:"path"`
	// Message says what is wrong.
	Message string `json:"message"`
}

// Error implements error.
func (e *DecodeError) Error() string {
	if e.Path == "" {
		return "definition: " + e.Message
	}
	return fmt.Sprintf("definition %s: %s", e.Path, e.Message)
}

// Problem returns the error as a validation problem, for one error envelope.
func (e *DecodeError) Problem() Problem {
	return Problem{Path: e.Path, Message: e.Message}
}

// MaxDepth bounds the nesting of a definition document, JSON or YAML. It is checked while
// reading, before a decoder does anything per level: JSON token by token, YAML by a scan of
// its bytes (see yamlDepth) before yaml.v3 builds its tree.
const MaxDepth = 128

// Decode reads a definition from JSON (a document whose first non-space byte is '{') or YAML,
// strictly: unknown fields, values of the wrong type, duplicate keys, non-string YAML keys
// and invalid UTF-8 are refused with a *DecodeError — or, when several values are at
// fault, a *ValidationError listing each. Values of free-form fields (set, body, payload,
// input, result) keep numbers as json.Number. Decode does not validate; see Validate and
// Check.
func Decode(data []byte) (*Definition, error) {
	d, errs, err := decode(data)
	switch {
	case err != nil:
		return nil, err
	case len(errs) == 1:
		return nil, errs[0]
	case len(errs) > 1:
		return nil, &ValidationError{Problems: decodeProblems(errs)}
	}
	return d, nil
}

// Check decodes and validates a definition, reporting every problem at once: those of the
// values that do not decode (Decode's) and those Validate finds in the rest, as one
// *ValidationError. A validation problem at or around a value that did not decode is left
// out: it would only restate that the value is missing. A document that is not JSON or
// YAML at all is Decode's *DecodeError.
func Check(data []byte, opts ValidateOptions) (*Definition, error) {
	d, errs, err := decode(data)
	if err != nil {
		return nil, err
	}
	problems := decodeProblems(errs)
	for _, p := range Validate(d, opts) {
		if !slices.ContainsFunc(errs, func(e *DecodeError) bool { return related(p.Path, e.Path) }) {
			problems = append(problems, p)
		}
	}
	if len(problems) > 0 {
		return nil, &ValidationError{Problems: problems}
	}
	return d, nil
}

// related reports whether pointers a and b name the same value or one holds the other.
func related(a, b string) bool {
	return a == b || strings.HasPrefix(a, b+"/") || strings.HasPrefix(b, a+"/") || a == "" || b == ""
}

// decodeProblems is errs as problems.
func decodeProblems(errs []*DecodeError) []Problem {
	out := make([]Problem, len(errs))
	for i, e := range errs {
		out[i] = e.Problem()
	}
	return out
}

// decode reads a definition as Decode does, going on past values at fault: it returns
// what decoded, with each such value's error; err is a document that cannot be read at
// all (not JSON or YAML, too deep, not UTF-8).
func decode(data []byte) (d *Definition, errs []*DecodeError, err error) {
	if !utf8.Valid(data) {
		return nil, nil, &DecodeError{Message: "document is not valid UTF-8"}
	}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		if err := checkYAMLDepth(data); err != nil {
			return nil, nil, err
		}
		if data, err = yamlToJSON(data); err != nil {
			return nil, nil, err
		}
	}
	if err := checkJSON(data); err != nil {
		return nil, nil, err
	}
	d = &Definition{}
	errs = decodeErrorsOf(decodeValue(data, reflect.ValueOf(d).Elem(), ""))
	if len(errs) == 1 && errs[0].Path == "" {
		return nil, nil, errs[0] // the document itself is not an object
	}
	return d, errs, nil
}

// decodeErrorsOf flattens the errors a decode joined (see joinDecode) into its
// *DecodeErrors; an error of another type becomes one at the document's root.
func decodeErrorsOf(err error) []*DecodeError {
	if err == nil {
		return nil
	}
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		var out []*DecodeError
		for _, e := range joined.Unwrap() {
			out = append(out, decodeErrorsOf(e)...)
		}
		return out
	}
	var de *DecodeError
	if errors.As(err, &de) {
		return []*DecodeError{de}
	}
	return []*DecodeError{{Message: err.Error()}}
}

// joinDecode is the errors of a value's members, nil when there are none: a decode goes
// on past a member at fault so that every problem of a document is reported.
func joinDecode(errs []error) error { return errors.Join(errs...) }

// Marshal writes d as JSON; Decode(Marshal(d)) gives d back.
func Marshal(d *Definition) ([]byte, error) {
	return json.Marshal(d)
}

// decodeValue decodes raw into v, refusing unknown fields, and reports errors as
// *DecodeError under path. A JSON null leaves v at its zero value.
func decodeValue(raw json.RawMessage, v reflect.Value, path string) error {
	if isNull(raw) {
		return nil
	}
	if v.Type() == reflect.TypeFor[json.RawMessage]() {
		c, err := compactRaw(raw, path)
		v.SetBytes(c)
		return err
	}
	if u, ok := v.Addr().Interface().(json.Unmarshaler); ok {
		return atPath(path, u.UnmarshalJSON(raw))
	}
	switch v.Kind() {
	case reflect.Struct:
		return decodeStruct(raw, v, path)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		return decodeValue(raw, v.Elem(), path)
	case reflect.Slice:
		return decodeSlice(raw, v, path)
	case reflect.Map:
		return decodeMap(raw, v, path)
	case reflect.Interface:
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var x any
		if err := dec.Decode(&x); err != nil {
			return &DecodeError{Path: path, Message: "invalid JSON value"}
		}
		v.Set(reflect.ValueOf(x))
		return nil
	}
	if err := json.Unmarshal(raw, v.Addr().Interface()); err != nil {
		return &DecodeError{Path: path, Message: "must be " + describeType(v.Type())}
	}
	return nil
}

// atPath puts err (from a json.Unmarshaler: one error, or several joined) under path.
func atPath(path string, err error) error {
	errs := decodeErrorsOf(err)
	out := make([]error, len(errs))
	for i, de := range errs {
		out[i] = &DecodeError{Path: path + de.Path, Message: de.Message}
	}
	return joinDecode(out)
}

func decodeStruct(raw json.RawMessage, v reflect.Value, path string) error {
	fields, keys, err := objectFields(raw, path)
	if err != nil {
		return err
	}
	index := jsonFields(v.Type())
	var errs []error
	for _, k := range keys {
		p := path + "/" + escapePointer(k)
		i, ok := index[k]
		if !ok {
			errs = append(errs, &DecodeError{Path: p, Message: fmt.Sprintf("unknown field %q", k)})
			continue
		}
		if err := decodeValue(fields[k], v.FieldByIndex(i), p); err != nil {
			errs = append(errs, err)
		}
	}
	return joinDecode(errs)
}

func decodeSlice(raw json.RawMessage, v reflect.Value, path string) error {
	if raw = bytes.TrimSpace(raw); len(raw) == 0 || raw[0] != '[' {
		return &DecodeError{Path: path, Message: "must be an array"}
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return &DecodeError{Path: path, Message: "invalid array"}
	}
	out := reflect.MakeSlice(v.Type(), len(items), len(items))
	var errs []error
	for i, item := range items {
		if err := decodeValue(item, out.Index(i), path+"/"+strconv.Itoa(i)); err != nil {
			errs = append(errs, err)
		}
	}
	v.Set(out)
	return joinDecode(errs)
}

func decodeMap(raw json.RawMessage, v reflect.Value, path string) error {
	fields, keys, err := objectFields(raw, path)
	if err != nil {
		return err
	}
	out := reflect.MakeMapWithSize(v.Type(), len(keys))
	var errs []error
	for _, k := range keys {
		elem := reflect.New(v.Type().Elem()).Elem()
		if err := decodeValue(fields[k], elem, path+"/"+escapePointer(k)); err != nil {
			errs = append(errs, err)
			continue
		}
		out.SetMapIndex(reflect.ValueOf(k), elem)
	}
	v.Set(out)
	return joinDecode(errs)
}

// objectFields splits a JSON object into its members and their sorted keys.
func objectFields(raw json.RawMessage, path string) (map[string]json.RawMessage, []string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, nil, &DecodeError{Path: path, Message: "must be an object"}
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, nil, &DecodeError{Path: path, Message: "invalid object"}
	}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return fields, keys, nil
}

// compactRaw returns raw exactly as json.Marshal writes a json.RawMessage, so that a decoded
// definition marshals and decodes back to itself.
func compactRaw(raw json.RawMessage, path string) (json.RawMessage, error) {
	out, err := json.Marshal(raw)
	if err != nil {
		return nil, &DecodeError{Path: path, Message: "invalid JSON value"}
	}
	return out, nil
}

func isNull(raw json.RawMessage) bool {
	return string(bytes.TrimSpace(raw)) == "null"
}

func describeType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "a " + t.String()
}

var fieldCache sync.Map // reflect.Type -> map[string][]int

// jsonFields maps the JSON names of t's fields to their indexes; fields tagged "-" are left out.
func jsonFields(t reflect.Type) map[string][]int {
	if cached, ok := fieldCache.Load(t); ok {
		return cached.(map[string][]int)
	}
	out := map[string][]int{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-" || !f.IsExported():
			continue
		case name == "":
			name = f.Name
		}
		out[name] = f.Index
	}
	fieldCache.Store(t, out)
	return out
}

// escapePointer escapes one JSON pointer token (RFC 6901).
func escapePointer(s string) string { return pointerEscaper.Replace(s) }

// pointerEscaper is built once: building a Replacer per call was a tenth of the CPU of
// publishing 10,000 workflows.
var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")
