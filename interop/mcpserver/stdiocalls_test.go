package mcpserver_test

import (
	"fmt"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/mcpserver"
)

// TestStdioPlainAndTaskCallsOfOneSession: over stdio, plain tools/calls (which go to the
// tool handler without the task layer's decoding) and their lookalikes that ask for a task
// are each answered as what they are, sent back to back in one session, 2025-11-25 and
// 2026-07-28 requests alike.
func TestStdioPlainAndTaskCallsOfOneSession(t *testing.T) {
	f := newFixture(t, echoDef("echo"))
	c := f.stdio(t)
	c.initialize(t, nil)

	modern := map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28",
		"io.modelcontextprotocol/clientCapabilities": map[string]any{}}
	calls := []struct {
		id     float64
		params map[string]any
		task   bool
	}{
		{2, map[string]any{"name": "echo", "arguments": map[string]any{"n": 2}}, false},
		{3, map[string]any{"name": "echo", "arguments": map[string]any{"n": 3}, "TASK": map[string]any{}}, true},
		{4, map[string]any{"name": "echo", "arguments": map[string]any{"n": 4, "task": "in the arguments"}}, false},
		{5, map[string]any{"name": "echo", "arguments": map[string]any{"n": 5}, "_meta": map[string]any{"progressToken": "p5"}}, false},
		{6, map[string]any{"name": "echo", "arguments": map[string]any{"n": 6}, "_meta": modern}, false},
		{7, map[string]any{"name": "echo", "arguments": map[string]any{"n": 7}, "task": map[string]any{}}, true},
	}
	for _, call := range calls {
		c.send(t, map[string]any{"id": call.id, "method": "tools/call", "params": call.params})
	}
	answers := map[float64]map[string]any{}
	for len(answers) < len(calls) { // in any order
		m := c.next(t, func(m map[string]any) bool { _, ok := m["id"].(float64); return ok })
		answers[m["id"].(float64)] = m
	}
	for _, call := range calls {
		require.Contains(t, answers, call.id)
		result := answers[call.id]["result"].(map[string]any)
		if call.task {
			require.Contains(t, result, "task", "call %v", call.id)
			continue
		}
		sc := result["structuredContent"].(map[string]any)
		require.Equal(t, "completed", sc["status"], "call %v", call.id)
		require.EqualValues(t, call.params["arguments"].(map[string]any)["n"], sc["output"], "call %v", call.id)
	}
}

// TestStdioCallInFlightWhenInputEnds: a plain call still waiting for its run when the
// client closes stdin is answered before ServeStdio returns (its wait ends with the
// session), and nothing is written after.
func TestStdioCallInFlightWhenInputEnds(t *testing.T) {
	f := newFixture(t, napDef)
	c := f.stdio(t)
	c.initialize(t, nil)
	c.send(t, map[string]any{"id": 2, "method": "tools/call", "params": map[string]any{"name": "nap", "arguments": map[string]any{"n": 1}}})
	require.NoError(t, c.w.(io.Closer).Close())
	var answered bool
	for m := range c.msgs { // closed once ServeStdio has returned
		answered = answered || byID(2)(m)
	}
	require.True(t, answered, "the call in flight got no answer")
}

// TestStdioCallsBeyondTheBound: more plain calls than MaxStdioCalls sent at once, each
// starting a run that sleeps, are all answered: those past the bound wait in the session's
// queue for a worker. Each answer is its run, or RATE_LIMITED
// when the caller already has runner.MaxWaitsPerPrincipal calls waiting.
func TestStdioCallsBeyondTheBound(t *testing.T) {
	f := newFixture(t, napDef)
	c := f.stdio(t)
	c.initialize(t, nil)
	calls := mcpserver.MaxStdioCalls + 20
	for i := 1; i <= calls; i++ {
		c.send(t, map[string]any{"id": i, "method": "tools/call", "params": map[string]any{"name": "nap", "arguments": map[string]any{"n": i}}})
	}
	answered := map[float64]bool{}
	for len(answered) < calls {
		m := c.next(t, func(m map[string]any) bool { _, ok := m["id"].(float64); return ok })
		require.Contains(t, m, "result", "call %v", m)
		result := m["result"].(map[string]any)
		if result["isError"] == true {
			require.Contains(t, fmt.Sprint(result["content"]), "RATE_LIMITED", "call %v", m)
		} else {
			require.NotEmpty(t, result["structuredContent"].(map[string]any)["runId"], "call %v", m)
		}
		answered[m["id"].(float64)] = true
	}
}
