package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// volatile matches what differs between runs of an exchange: timestamps and IDs (also
// inside a result's JSON text, where a time's quotes are escaped), which golden files show
// as placeholders.
var volatile = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`(\\?")\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)\\?"`), `$1<time>$1`},
	{regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`), `<id>`},
}

// TestGoldenExchanges records JSON-RPC exchanges over /mcp (stateless protocol): tools/list,
// a tool call with an idempotency key, its replay, and a call with invalid arguments. Any
// change of what an agent sees shows in testdata/exchanges.golden
// (go test -run TestGoldenExchanges -update ./mcpserver/).
func TestGoldenExchanges(t *testing.T) {
	f := newFixtureConfig(t, nil, greetDef)
	keyed := map[string]any{"name": "greet", "arguments": map[string]any{"name": "Ada", "idempotencyKey": "golden-1"}}
	recordExchanges(t, f, "exchanges.golden", []exchange{
		{"the tool list", "tools/list", "", nil},
		{"a call with an idempotency key", "tools/call", "greet", keyed},
		{"the same call again: a replay", "tools/call", "greet", keyed},
		{"invalid arguments: an isError result", "tools/call", "greet", map[string]any{"name": "greet", "arguments": map[string]any{"name": 7}}},
	})
}

// exchange is one JSON-RPC request of a golden file: what it shows, its method, the tool
// it calls and its params.
type exchange struct {
	what, method, tool string
	params             map[string]any
}

// recordExchanges sends each exchange to f over /mcp (stateless protocol) and compares
// the requests and answers with testdata/<file> (rewritten with -update).
func recordExchanges(t *testing.T, f *fixture, file string, exchanges []exchange) {
	t.Helper()
	var golden bytes.Buffer
	for i, ex := range exchanges {
		req := statelessRequest(i+1, ex.method, ex.tool, ex.params)
		res, err := f.post(context.Background(), req)
		require.NoError(t, err)
		answer := readMessage(t, res)
		require.NoError(t, res.Body.Close())
		fmt.Fprintf(&golden, "## %d. %s\n-> %s\n<- %s\n\n", i+1, ex.what, normalized(t, mustJSON(t, req.body)), normalized(t, answer))
	}
	path := filepath.Join("testdata", file)
	if *update {
		require.NoError(t, os.WriteFile(path, golden.Bytes(), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run with -update to create %s", path)
	require.Equal(t, string(want), golden.String())
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	return raw
}

// normalized is raw indented with sorted keys, volatile values replaced.
func normalized(t *testing.T, raw []byte) string {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal(raw, &v), "%s", raw)
	out, err := json.MarshalIndent(v, "", "  ")
	require.NoError(t, err)
	s := string(out)
	for _, r := range volatile {
		s = r.re.ReplaceAllString(s, r.with)
	}
	return s
}
