package schemas

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"
)

func compiledDefinitionSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	s, err := compileSchema(DefinitionSchema())
	require.NoError(t, err)
	return s
}

// asJSONValue converts a JSON or YAML definition document to a JSON value.
func asJSONValue(t *testing.T, doc []byte) any {
	t.Helper()
	if doc[0] != '{' {
		var err error
		doc, err = yamlToJSON(doc)
		require.NoError(t, err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	require.NoError(t, err)
	return v
}

func TestDefinitionSchemaAcceptsExamples(t *testing.T) {
	t.Parallel()
	s := compiledDefinitionSchema(t)
	docs := map[string][]byte{
		"process-order.yaml": readTestdata(t, "process-order.yaml"),
		"every-kind.json":    readTestdata(t, "every-kind.json"),
	}
	shipped, err := filepath.Glob(filepath.Join("..", "examples", "workflows", "*.*"))
	require.NoError(t, err)
	for _, path := range shipped {
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		docs[path] = data
	}
	for name, doc := range docs {
		require.NoError(t, s.Validate(asJSONValue(t, doc)), name)
	}
}

func TestDefinitionSchemaRefusesInvalid(t *testing.T) {
	t.Parallel()
	s := compiledDefinitionSchema(t)
	tests := map[string]string{
		"unknown field":    `{"name":"wf","input":{"type":"object"},"steps":[{"id":"a","set":1}],"extra":1}`,
		"two kinds":        `{"name":"wf","input":{"type":"object"},"steps":[{"id":"a","set":1,"fail":{"message":"m"}}]}`,
		"no kind":          `{"name":"wf","input":{"type":"object"},"steps":[{"id":"a"}]}`,
		"bad duration":     `{"name":"wf","input":{"type":"object"},"toolTimeout":"soon","steps":[{"id":"a","set":1}]}`,
		"bad name":         `{"name":"Bad Name","input":{"type":"object"},"steps":[{"id":"a","set":1}]}`,
		"input not object": `{"name":"wf","input":{"type":"string"},"steps":[{"id":"a","set":1}]}`,
		"bad onConflict":   `{"name":"wf","input":{"type":"object"},"steps":[{"id":"a","hook":{"token":"t","onConflict":"x"}}]}`,
		"sleep both":       `{"name":"wf","input":{"type":"object"},"steps":[{"id":"a","sleep":{"duration":"1s","until":"x"}}]}`,
		"missing url":      `{"name":"wf","input":{"type":"object"},"steps":[{"id":"a","http":{}}]}`,
	}
	for name, doc := range tests {
		require.Error(t, s.Validate(asJSONValue(t, []byte(doc))), name)
	}
}

func TestDefinitionSchemaDurations(t *testing.T) {
	t.Parallel()
	var schema struct {
		Defs map[string]struct {
			Pattern string `json:"pattern"`
		} `json:"$defs"`
	}
	require.NoError(t, json.Unmarshal(DefinitionSchema(), &schema))
	pattern := schema.Defs["Duration"].Pattern
	require.NotEmpty(t, pattern)
	s := compiledDefinitionSchema(t)
	for _, d := range []string{"0", "0s", "100ms", "1.5h", "1h30m", "2µs"} {
		var dur Duration
		require.NoError(t, dur.UnmarshalJSON([]byte(`"`+d+`"`)), d)
		doc := `{"name":"wf","input":{"type":"object"},"toolTimeout":"` + d + `","steps":[{"id":"a","set":1}]}`
		require.NoError(t, s.Validate(asJSONValue(t, []byte(doc))), d)
	}
}

func TestDefinitionSchemaIsACopy(t *testing.T) {
	t.Parallel()
	a := DefinitionSchema()
	a[0] = 'x'
	require.Equal(t, byte('{'), DefinitionSchema()[0])
}
