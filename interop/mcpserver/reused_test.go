package mcpserver_test

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A call whose start token another run holds, under adopt, answers with that run marked
// reused (SPEC §6), as the REST answer does; a new run is not marked.
func TestCallReusesTheStartTokensOwner(t *testing.T) {
	f := newFixture(t, `{"name":"once","input":{"type":"object","properties":{"orderId":{"type":"string"}},"required":["orderId"]},
		"start":{"token":"order:${{ input.orderId }}","onConflict":"adopt"},
		"steps":[{"id":"confirm","hook":{"token":"order:${{ input.orderId }}"}}]}`)
	s, _ := f.connect("")

	_, first := call(t, s, "once", map[string]any{"orderId": "o1"})
	require.Equal(t, "waiting", first["status"])
	require.NotContains(t, first, "reused", "a new run is not reused")

	_, second := call(t, s, "once", map[string]any{"orderId": "o1"})
	require.Equal(t, true, second["reused"])
	require.Equal(t, first["runId"], second["runId"])
	require.Equal(t, false, second["replayed"], "no key was used")
}
