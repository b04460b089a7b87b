package console

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/schemas"
)

// TestAskForm: a run waiting on a hook with an ask (issue #14's hook.ask {message, schema},
// as the run holds it evaluated) gets a form with one field per property, and the posted
// fields become a typed payload object.
func TestAskForm(t *testing.T) {
	schema := json.RawMessage(`{"type": "object", "required": ["approved"], "properties": {
				"approved": {"type": "boolean", "title": "Approved"},
				"amount": {"type": "number"},
				"count": {"type": "integer"},
				"reason": {"type": "string", "enum": ["ok", "fraud"]}}}`)
	run := &runner.Run{Status: runner.StatusWaiting, WaitingOn: &runner.WaitingOn{Hook: "t",
		Ask: &schemas.HookAsk{Message: "Approve the refund?", Schema: schema}}}
	a := waitingAsk(run)
	require.NotNil(t, a)
	require.Equal(t, "Approve the refund?", a.Message)
	names := []string{}
	for _, f := range a.Fields {
		names = append(names, f.Name+":"+f.Type)
	}
	require.Equal(t, []string{"amount:number", "approved:boolean", "count:integer", "reason:string"}, names)
	require.True(t, a.Fields[1].Required)
	require.Equal(t, []string{"ok", "fraud"}, a.Fields[3].Enum)

	tests := []struct {
		name string
		form url.Values
		want string
		err  string
	}{
		{"typed fields", url.Values{"ask": {"1"}, "type.approved": {"boolean"}, "field.approved": {"on"},
			"type.amount": {"number"}, "field.amount": {"12.5"}, "type.count": {"integer"}, "field.count": {"3"},
			"type.reason": {"string"}, "field.reason": {"ok"}},
			`{"approved": true, "amount": 12.5, "count": 3, "reason": "ok"}`, ""},
		{"unchecked box is false, empty number left out", url.Values{"ask": {"1"}, "type.approved": {"boolean"},
			"type.amount": {"number"}, "field.amount": {""}}, `{"approved": false}`, ""},
		{"not a number", url.Values{"ask": {"1"}, "type.count": {"integer"}, "field.count": {"x"}}, "", "not a whole number"},
		{"generic JSON", url.Values{"payload": {`[1, 2]`}}, `[1, 2]`, ""},
		{"generic empty is null", url.Values{"payload": {""}}, `null`, ""},
		{"generic not JSON", url.Values{"payload": {`{`}}, "", "not valid JSON"},
	}
	for _, tc := range tests {
		r, err := http.NewRequest("POST", "/", strings.NewReader(tc.form.Encode()))
		require.NoError(t, err)
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		got, err := formPayload(r)
		if tc.err != "" {
			require.ErrorContains(t, err, tc.err, tc.name)
			continue
		}
		require.NoError(t, err, tc.name)
		require.JSONEq(t, tc.want, string(got), tc.name)
	}

	run = &runner.Run{Status: runner.StatusWaiting, WaitingOn: &runner.WaitingOn{Hook: "t"}}
	require.Nil(t, waitingAsk(run), "no ask: the generic JSON form")
}
