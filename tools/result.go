package tools

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/schemas"
)

// Result is the structuredContent of a workflow tool and of the run companions.
type Result struct {
	RunID  string          `json:"runId"`
	Status runner.Status   `json:"status"`
	Output json.RawMessage `json:"output"`
	Error  *runner.Error   `json:"error"`
	// Replayed says the call carried a key already used: no run was started, RunID is the
	// first call's run, in its current state.
	Replayed *bool `json:"replayed,omitempty"`
	// WaitingOn says what a waiting run waits for, so an agent knows whom to ask.
	WaitingOn *runner.WaitingOn `json:"waitingOn,omitempty"`
}

// ResultOf sums up a run for a tool result.
func ResultOf(r *runner.Run) Result {
	out := r.Output
	if len(out) == 0 {
		out = json.RawMessage("null")
	}
	return Result{RunID: r.ID, Status: r.Status, Output: out, Error: r.Error, WaitingOn: r.WaitingOn}
}

// Replay marks the result as the answer to a workflow tool call: replayed tells whether
// its key had been used before.
func (r Result) Replay(replayed bool) Result {
	r.Replayed = &replayed
	return r
}

// CallResult is the tool result of a run: its state as structuredContent and as JSON
// text. A failed or cancelled run is an error result; a pending, running or waiting one is
// not — its status tells the agent to continue with gorunner_get_run. It links the run as
// a resource, which the client may read or subscribe to later.
func (r Result) CallResult() *mcp.CallToolResult {
	res := Structured(r)
	res.IsError = r.Status == runner.StatusFailed || r.Status == runner.StatusCancelled
	res.Content = append(res.Content, RunLink(r.RunID))
	return res
}

// Structured answers v as structuredContent and the same JSON as text.
func Structured(v any) *mcp.CallToolResult {
	text, err := json.Marshal(v)
	if err != nil {
		return Problem{Status: http.StatusInternalServerError, Code: "INTERNAL", Message: "encoding the result: " + err.Error()}.Result()
	}
	return mcp.NewToolResultStructured(v, string(text))
}

// Problem is what a tool result reports when no run answers the call: the same
// {code, message, details} the REST API would send, with the HTTP status it would have.
type Problem struct {
	Status  int               `json:"status"`
	Code    string            `json:"code"`
	Message string            `json:"message"`
	Details []schemas.Problem `json:"details,omitempty"`
}

// Result is the isError tool result carrying {"error": problem} as JSON text; its message
// says in words what went wrong and what to do, for the agent to act on.
func (p Problem) Result() *mcp.CallToolResult {
	body, err := json.Marshal(map[string]Problem{"error": p})
	if err != nil {
		body = []byte(p.Message)
	}
	return mcp.NewToolResultError(string(body))
}

// InvalidArguments is the isError result listing every violation of the input schema, one
// line each, so that the agent can correct its arguments.
func InvalidArguments(problems []schemas.Problem) *mcp.CallToolResult {
	lines := make([]string, len(problems))
	for i, p := range problems {
		path := p.Path
		if path == "" {
			path = "(arguments)"
		}
		lines[i] = fmt.Sprintf("%s: %s", path, p.Message)
	}
	msg := "the arguments do not match the tool's input schema; fix them and call again:\n" + strings.Join(lines, "\n")
	return Problem{Status: http.StatusBadRequest, Code: runner.CodeValidation, Message: msg, Details: problems}.Result()
}

// RunOutputSchema is the outputSchema of run results; with replayed for workflow tools.
func RunOutputSchema(replayed bool) json.RawMessage {
	props := runProperties()
	if replayed {
		props["replayed"] = map[string]any{"type": "boolean", "description": "true when the idempotency key had been used: no new run was started"}
	}
	return mustJSON(map[string]any{
		"type":       "object",
		"properties": props,
		"required":   []string{"runId", "status"},
	})
}

func runProperties() map[string]any {
	return map[string]any{
		"runId":  map[string]any{"type": "string", "description": "the run's ID, for gorunner_get_run and gorunner_cancel_run"},
		"status": map[string]any{"type": "string", "enum": []string{"pending", "running", "waiting", "completed", "failed", "cancelled"}},
		"output": map[string]any{"description": "the run's output once completed, else null"},
		"error": map[string]any{
			"description": "why the run failed, else null",
			"type":        []string{"object", "null"},
			"properties": map[string]any{
				"code": map[string]any{"type": "string"}, "message": map[string]any{"type": "string"}, "step": map[string]any{"type": "string"},
			},
		},
		"waitingOn": map[string]any{
			"description": "what a waiting run waits for: a hook token or a time",
			"type":        "object",
			"properties": map[string]any{
				"hook": map[string]any{"type": "string"}, "sleepUntil": map[string]any{"type": "string", "format": "date-time"},
			},
		},
	}
}

// mustJSON marshals a schema literal built in this package; it cannot fail.
func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
