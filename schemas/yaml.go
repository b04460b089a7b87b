package schemas

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"gopkg.in/yaml.v3"
)

// yamlToJSON converts a YAML document to JSON. Mapping keys must be strings; timestamps
// become RFC 3339 strings; a stream of several documents is refused.
func yamlToJSON(data []byte) ([]byte, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc any
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &DecodeError{Message: "document is empty"}
		}
		return nil, &DecodeError{Message: "invalid YAML: " + err.Error()}
	}
	var extra any
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, &DecodeError{Message: "a definition is one YAML document; found more"}
	}
	v, err := fromYAML(doc, "")
	if err != nil {
		return nil, err
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil, &DecodeError{Message: "cannot convert YAML to JSON: " + err.Error()}
	}
	return out, nil
}

// fromYAML turns a value decoded by yaml.v3 into one encoding/json can write.
func fromYAML(v any, path string) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			c, err := fromYAML(e, path+"/"+escapePointer(k))
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		return out, nil
	case map[any]any:
		for k := range x {
			if _, ok := k.(string); !ok {
				return nil, &DecodeError{Path: path, Message: fmt.Sprintf("key %v is not a string; quote it", k)}
			}
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k.(string)] = e
		}
		return fromYAML(out, path)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			c, err := fromYAML(e, path+"/"+strconv.Itoa(i))
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, &DecodeError{Path: path, Message: "NaN and infinity are not JSON numbers"}
		}
		return x, nil
	case time.Time:
		return x.Format(time.RFC3339Nano), nil
	case nil, bool, string, int, int64, uint64:
		return x, nil
	}
	return nil, &DecodeError{Path: path, Message: fmt.Sprintf("unsupported YAML value of type %T", v)}
}

// checkJSON checks that data is one JSON document without duplicate object keys (which
// encoding/json would silently merge), numbers beyond float64 or nesting beyond MaxDepth.
func checkJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := checkValue(dec, "", 0); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return &DecodeError{Message: "invalid JSON: data after the document"}
	}
	return nil
}

func checkValue(dec *json.Decoder, path string, depth int) error {
	tok, err := dec.Token()
	if err != nil {
		return &DecodeError{Path: path, Message: "invalid JSON: " + err.Error()}
	}
	if n, ok := tok.(json.Number); ok {
		if f, err := n.Float64(); err != nil || math.IsInf(f, 0) {
			return &DecodeError{Path: path, Message: fmt.Sprintf("number %s is out of range", n)}
		}
	}
	delim, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	if depth >= MaxDepth {
		return &DecodeError{Path: path, Message: fmt.Sprintf("nested more than %d levels deep", MaxDepth)}
	}
	seen := map[string]bool{}
	for i := 0; dec.More(); i++ {
		p := path + "/" + strconv.Itoa(i)
		if delim == '{' {
			key, err := dec.Token()
			if err != nil {
				return &DecodeError{Path: path, Message: "invalid JSON: " + err.Error()}
			}
			k, _ := key.(string)
			p = path + "/" + escapePointer(k)
			if seen[k] {
				return &DecodeError{Path: p, Message: fmt.Sprintf("duplicate key %q", k)}
			}
			seen[k] = true
		}
		if err := checkValue(dec, p, depth+1); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil {
		return &DecodeError{Path: path, Message: "invalid JSON: " + err.Error()}
	}
	return nil
}
