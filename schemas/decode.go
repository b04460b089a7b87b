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
// and invalid UTF-8 are refused with a *DecodeError. Values of free-form fields (set, body,
// payload, input, result) keep numbers as json.Number. Decode does not validate; see Validate.
func Decode(data []byte) (*Definition, error) {
	if !utf8.Valid(data) {
		return nil, &DecodeError{Message: "document is not valid UTF-8"}
	}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		if err := checkYAMLDepth(data); err != nil {
			return nil, err
		}
		var err error
		if data, err = yamlToJSON(data); err != nil {
			return nil, err
		}
	}
	if err := checkJSON(data); err != nil {
		return nil, err
	}
	var d Definition
	if err := decodeValue(data, reflect.ValueOf(&d).Elem(), ""); err != nil {
		return nil, err
	}
	return &d, nil
}

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

// atPath puts err (from a json.Unmarshaler) under path.
func atPath(path string, err error) error {
	if err == nil {
		return nil
	}
	var de *DecodeError
	if errors.As(err, &de) {
		return &DecodeError{Path: path + de.Path, Message: de.Message}
	}
	return &DecodeError{Path: path, Message: err.Error()}
}

func decodeStruct(raw json.RawMessage, v reflect.Value, path string) error {
	fields, keys, err := objectFields(raw, path)
	if err != nil {
		return err
	}
	index := jsonFields(v.Type())
	for _, k := range keys {
		p := path + "/" + escapePointer(k)
		i, ok := index[k]
		if !ok {
			return &DecodeError{Path: p, Message: fmt.Sprintf("unknown field %q", k)}
		}
		if err := decodeValue(fields[k], v.FieldByIndex(i), p); err != nil {
			return err
		}
	}
	return nil
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
	for i, item := range items {
		if err := decodeValue(item, out.Index(i), path+"/"+strconv.Itoa(i)); err != nil {
			return err
		}
	}
	v.Set(out)
	return nil
}

func decodeMap(raw json.RawMessage, v reflect.Value, path string) error {
	fields, keys, err := objectFields(raw, path)
	if err != nil {
		return err
	}
	out := reflect.MakeMapWithSize(v.Type(), len(keys))
	for _, k := range keys {
		elem := reflect.New(v.Type().Elem()).Elem()
		if err := decodeValue(fields[k], elem, path+"/"+escapePointer(k)); err != nil {
			return err
		}
		out.SetMapIndex(reflect.ValueOf(k), elem)
	}
	v.Set(out)
	return nil
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
