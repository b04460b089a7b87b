package tools_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/schemas"
	"github.com/gorunner/gorunner/tools"
)

// TestToolsLinkTheCard: a workflow's tool and the companions that answer with a run's
// envelope (gorunner_get_run, gorunner_run_workflow) name the run card in _meta.ui; the
// others carry no _meta.
func TestToolsLinkTheCard(t *testing.T) {
	def, err := schemas.Decode([]byte(`{"name":"greet","input":{"type":"object"},"steps":[{"id":"s","set":1}]}`))
	require.NoError(t, err)
	tool, err := tools.FromDefinition(def)
	require.NoError(t, err)
	listed := map[string]json.RawMessage{"greet": metaOf(t, tool.Tool)}
	for _, c := range tools.Companions() {
		listed[c.Name] = metaOf(t, c)
	}
	card := `{"ui":{"resourceUri":"ui://gorunner/run"}}`
	for name, meta := range listed {
		switch name {
		case "greet", tools.GetRun, tools.RunWorkflow:
			require.JSONEq(t, card, string(meta), name)
		default:
			require.Nil(t, meta, name)
		}
	}
}

func metaOf(t *testing.T, tool any) json.RawMessage {
	t.Helper()
	raw, err := json.Marshal(tool)
	require.NoError(t, err)
	var v struct {
		Meta json.RawMessage `json:"_meta"`
	}
	require.NoError(t, json.Unmarshal(raw, &v))
	return v.Meta
}
