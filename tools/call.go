package tools

import (
	"bytes"
	"encoding/json"

	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/schemas"
)

// Call is a workflow tool call made into a run request.
type Call struct {
	// Arguments are the arguments as sent, {} when absent: what a companion tool checks
	// against its own input schema.
	Arguments json.RawMessage
	// Key is the idempotencyKey argument; HasKey says whether it was given.
	Key    string
	HasKey bool
	// notString is the idempotencyKey argument as sent when it is not a JSON string (null
	// included): a problem KeyProblems lists.
	notString json.RawMessage
	// Input is the run input: the arguments without idempotencyKey, as a JSON object. It is
	// also the body of the equivalent REST call, so both fingerprint alike.
	Input json.RawMessage
}

// ParseCall splits a tool call's raw arguments into the run input and the idempotency key.
// Absent arguments are the empty object. Arguments that are not a JSON object are the
// problem for the agent to fix. It checks nothing else: the key's problems, a key that is
// not a string included, are KeyProblems, so that they are listed with the input's own; the
// input is checked against the workflow's input schema once, by the engine, against the
// version the run is admitted at.
func ParseCall(raw json.RawMessage) (*Call, []schemas.Problem) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		raw = json.RawMessage("{}")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return nil, []schemas.Problem{{Path: "", Message: "the arguments must be a JSON object"}}
	}
	c := &Call{Arguments: raw}
	if k, ok := fields[KeyArgument]; ok {
		if k = bytes.TrimSpace(k); len(k) > 0 && k[0] == '"' {
			_ = json.Unmarshal(k, &c.Key) // cannot fail: the arguments parsed
		} else {
			c.notString = k
		}
		c.HasKey = true
		delete(fields, KeyArgument)
	}
	if !c.HasKey {
		c.Input = raw // as sent: the engine compacts it
		return c, nil
	}
	input, err := json.Marshal(fields)
	if err != nil {
		return nil, []schemas.Problem{{Path: "", Message: "the arguments cannot be encoded: " + err.Error()}}
	}
	c.Input = input
	return c, nil
}

// KeyProblems is the problem with the call's idempotencyKey when it is not a string or
// idempotency.ValidKey refuses it, else nil. Its message is the one the tool's input schema
// (keyProperty) gives.
func (c *Call) KeyProblems() []schemas.Problem {
	var key any = c.Key
	switch {
	case !c.HasKey:
		return nil
	case c.notString != nil:
		dec := json.NewDecoder(bytes.NewReader(c.notString))
		dec.UseNumber()
		_ = dec.Decode(&key) // cannot fail: the arguments parsed
	case idempotency.ValidKey(c.Key):
		return nil
	}
	problems := keySchema.Validate(key)
	for i := range problems {
		problems[i].Path = "/" + KeyArgument + problems[i].Path
	}
	return problems
}
