package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/schemas"
	"github.com/gorunner/gorunner/wire"
)

// Result is the structuredContent of a workflow tool and of the run companions: the run
// envelope the server instructions describe once for every tool.
type Result struct {
	RunID  string        `json:"runId"`
	Status runner.Status `json:"status"`
	// Output is the run's output, present once it completed (null when the output is null).
	Output json.RawMessage `json:"output,omitempty"`
	// Error is why the run failed, absent otherwise.
	Error *wire.Error `json:"error,omitempty"`
	// Replayed says the call carried a key already used: no run was started, RunID is the
	// first call's run, in its current state.
	Replayed *bool `json:"replayed,omitempty"`
	// Reused says the run is the owner of the workflow's start token, not a new run
	// (SPEC §6: reject, adopt).
	Reused bool `json:"reused,omitempty"`
	// WaitingOn says what a waiting run waits for, so an agent knows whom to ask.
	WaitingOn *wire.WaitingOn `json:"waitingOn,omitempty"`
}

// ResultOf sums up a run for a tool result. Output is there only for a completed run, so
// that it always has the type the tool's outputSchema gives it.
func ResultOf(r *runner.Run) Result {
	res := Result{RunID: r.ID, Status: r.Status, Error: wire.ErrorOf(r.Error), WaitingOn: wire.WaitingOnOf(r.WaitingOn)}
	if r.Status == runner.StatusCompleted {
		res.Output = r.Output
		if len(res.Output) == 0 {
			res.Output = json.RawMessage("null")
		}
	}
	return res
}

// Resumed is gorunner_resume_hook's structuredContent: the run envelope of the run that
// owns the token, after it took the payload, with what became of the payload.
type Resumed struct {
	Result
	Delivery runner.Delivery `json:"delivery"`
	Message  string          `json:"message,omitempty"`
}

// ResumedOf sums up a payload sent to token.
func ResumedOf(token string, res *runner.Resumed) Resumed {
	return Resumed{Result: ResultOf(res.Run), Delivery: res.Delivery, Message: res.Message(token)}
}

// Replay marks the result as the answer to a workflow tool call: replayed tells whether
// its key had been used before.
func (r Result) Replay(replayed bool) Result {
	r.Replayed = &replayed
	return r
}

// Reuse marks the result as answering with the owner of the workflow's start token.
func (r Result) Reuse(reused bool) Result {
	r.Reused = reused
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

// Structured answers v as structuredContent and the same JSON as text, encoded once.
func Structured(v any) *mcp.CallToolResult {
	text, err := json.Marshal(v)
	if err != nil {
		return Problem{Status: http.StatusInternalServerError, Code: "INTERNAL", Message: "encoding the result: " + err.Error()}.Result()
	}
	return mcp.NewToolResultStructured(json.RawMessage(text), string(text))
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
// line each with what to send instead (Explain), so that the agent can correct its
// arguments.
func InvalidArguments(schema json.RawMessage, problems []schemas.Problem) *mcp.CallToolResult {
	problems = Explain(schema, problems)
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

// ResumedOutputSchema is gorunner_resume_hook's outputSchema: the envelope with delivery
// and message.
func ResumedOutputSchema() (json.RawMessage, error) {
	var env map[string]any
	raw, err := RunOutputSchema(nil, false)
	if err == nil {
		err = json.Unmarshal(raw, &env)
	}
	if err != nil {
		return nil, err
	}
	props := env["properties"].(map[string]any)
	props["delivery"] = map[string]any{"type": "string", "enum": []runner.Delivery{runner.Delivered, runner.Queued}}
	props["message"] = map[string]any{"type": "string"}
	return json.Marshal(env)
}

// RunOutputSchema is the outputSchema of run results: the envelope, compact (what its
// fields mean is in Instructions), with output typed by the definition's output schema when
// there is one, and replayed for workflow tools.
func RunOutputSchema(output json.RawMessage, replayed bool) (json.RawMessage, error) {
	out := json.RawMessage(`{}`)
	if len(output) > 0 {
		var err error
		if out, err = embeddable(output); err != nil {
			return nil, fmt.Errorf("the output schema: %w", err)
		}
	}
	var b bytes.Buffer
	b.WriteString(`{"type":"object","properties":{"runId":{"type":"string"},"status":{"type":"string"},"output":`)
	b.Write(out)
	b.WriteString(`,"error":{"type":"object"},"waitingOn":` + waitingOnSchema)
	if replayed {
		b.WriteString(`,"replayed":{"type":"boolean"},"reused":{"type":"boolean"}`)
	}
	b.WriteString(`}}`)
	return b.Bytes(), nil
}

// waitingOnSchema is the schema of the envelope's waitingOn (wire.WaitingOn), compact as
// the rest: Instructions say what it holds (a hook with its question, or a sleep's end).
const waitingOnSchema = `{"type":"object"}`

// ownID names an output schema that becomes a resource of its own inside outputSchema.
const ownID = "urn:gorunner:output"

// embeddable is schema compacted, ready to sit inside the envelope. A schema that uses
// $-keywords ($ref "#/…", $defs, $schema, $anchor) gets an $id unless it has one: it is then
// a resource of its own, so its references resolve inside it, not against the envelope.
func embeddable(schema json.RawMessage) (json.RawMessage, error) {
	var b bytes.Buffer
	if err := json.Compact(&b, schema); err != nil {
		return nil, err
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(b.Bytes(), &obj) != nil || obj == nil || !bytes.Contains(b.Bytes(), []byte(`"$`)) {
		return b.Bytes(), nil
	}
	if _, ok := obj["$id"]; ok {
		return b.Bytes(), nil
	}
	obj["$id"] = json.RawMessage(strconv.Quote(ownID))
	return json.Marshal(obj)
}

// mustJSON marshals a schema literal built in this package; it cannot fail.
func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
