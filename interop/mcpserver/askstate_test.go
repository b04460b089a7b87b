package mcpserver_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/runner"
)

// statePayload is the JSON part of a signed requestState.
func statePayload(t *testing.T, state string) map[string]any {
	t.Helper()
	p64, _, ok := strings.Cut(state, ".")
	require.True(t, ok, "the requestState is signed: %s", state)
	raw, err := base64.RawURLEncoding.DecodeString(p64)
	require.NoError(t, err)
	var st map[string]any
	require.NoError(t, json.Unmarshal(raw, &st))
	return st
}

// A requestState the server did not sign — made up, the unsigned JSON of old, or a signed
// one with its attempt reset — is refused, and its (valid) answer resumes nothing.
func TestElicitationForgedStateIsRefused(t *testing.T) {
	f := newFixture(t, askDef)
	first := f.rpcResult(t, askCall(1, "forge", "", nil))
	require.Equal(t, "input_required", first["resultType"])
	state := first["requestState"].(string)
	st := statePayload(t, state)
	runID := st["runId"].(string)
	_, sig, _ := strings.Cut(state, ".")
	st["attempt"] = 0
	reset, err := json.Marshal(st)
	require.NoError(t, err)
	forged := map[string]string{
		"made up":        "x",
		"unsigned JSON":  fmt.Sprintf(`{"runId":%q,"step":0,"attempt":1}`, runID),
		"attempt edited": base64.RawURLEncoding.EncodeToString(reset) + "." + sig,
		"no signature":   strings.SplitN(state, ".", 2)[0],
	}
	for name, bad := range forged {
		t.Run(name, func(t *testing.T) {
			res := f.rpcResult(t, askCall(2, "forge", bad, map[string]any{"approved": true}))
			require.Equal(t, true, res["isError"], "%v", res)
			require.Contains(t, fmt.Sprint(res["content"]), "VALIDATION_ERROR")
			require.Contains(t, fmt.Sprint(res["content"]), "requestState")
		})
	}
	require.Equal(t, runner.StatusWaiting, f.engineRun(t, runID).Status, "no forged answer resumed the hook")
}

// Sending the first (signed) state again with every wrong answer does not reset the
// count: after MaxAskAttempts wrong answers the call gives up all the same.
func TestElicitationReplayedStateDoesNotResetAttempts(t *testing.T) {
	f := newFixture(t, askDef)
	first := f.rpcResult(t, askCall(1, "again", "", nil))
	state := first["requestState"].(string)
	wrong := map[string]any{"approved": true, "note": "far too long"}
	for id := 2; id <= 3; id++ {
		again := f.rpcResult(t, askCall(id, "again", state, wrong))
		require.Equal(t, "input_required", again["resultType"], "asked again")
	}
	gaveUp := f.rpcResult(t, askCall(4, "again", state, wrong))
	require.Equal(t, "waiting", gaveUp["structuredContent"].(map[string]any)["status"], "the third wrong answer ends the asking, whatever state it carries")
}
