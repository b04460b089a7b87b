package schemas

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
)

// stepFields maps each JSON key of Step's fields (Custom excluded) to its field index.
func stepFields() map[string][]int {
	return jsonFields(reflect.TypeFor[Step]())
}

// UnmarshalJSON decodes a step strictly: id, if, retry, timeout and the built-in kinds have
// their types; any other key is a custom kind whose body goes to Custom. Errors are
// *DecodeError with a JSON pointer relative to the step, joined when several fields are at
// fault (the rest still decodes).
func (s *Step) UnmarshalJSON(data []byte) error {
	fields, keys, err := objectFields(data, "")
	if err != nil {
		return err
	}
	known := stepFields()
	var out Step
	var errs []error
	for _, k := range keys {
		path := "/" + escapePointer(k)
		switch index, ok := known[k]; {
		case k == KindSet:
			out.Set = &SetStep{}
			err = decodeValue(fields[k], reflect.ValueOf(&out.Set.Value).Elem(), path)
		case ok:
			err = decodeValue(fields[k], reflect.ValueOf(&out).Elem().FieldByIndex(index), path)
		default:
			if out.Custom == nil {
				out.Custom = map[string]json.RawMessage{}
			}
			out.Custom[k], err = compactRaw(fields[k], path)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	*s = out
	return joinDecode(errs)
}

// stepJSON is Step's wire form; Set holds the encoded value so that null is written.
type stepJSON struct {
	ID         string          `json:"id"`
	If         string          `json:"if,omitempty"`
	Retry      *Retry          `json:"retry,omitempty"`
	Timeout    Duration        `json:"timeout,omitempty"`
	OnError    string          `json:"onError,omitempty"`
	Compensate *Step           `json:"compensate,omitempty"`
	Set        json.RawMessage `json:"set,omitempty"`
	HTTP       *HTTPStep       `json:"http,omitempty"`
	Hook       *HookStep       `json:"hook,omitempty"`
	Sleep      *SleepStep      `json:"sleep,omitempty"`
	Run        *RunStep        `json:"run,omitempty"`
	Workflow   *WorkflowStep   `json:"workflow,omitempty"`
	Fail       *FailStep       `json:"fail,omitempty"`
	MCP        *MCPStep        `json:"mcp,omitempty"`
	Parallel   *ParallelStep   `json:"parallel,omitempty"`
	Foreach    *ForeachStep    `json:"foreach,omitempty"`
	Loop       *LoopStep       `json:"loop,omitempty"`
}

// MarshalJSON writes the step with its kind as one key (set as the bare value) and custom
// kinds after the built-in fields, sorted.
func (s Step) MarshalJSON() ([]byte, error) {
	w := stepJSON{
		ID: s.ID, If: s.If, Retry: s.Retry, Timeout: s.Timeout, OnError: s.OnError, Compensate: s.Compensate,
		HTTP: s.HTTP, Hook: s.Hook, Sleep: s.Sleep, Run: s.Run, Workflow: s.Workflow, Fail: s.Fail, MCP: s.MCP,
		Parallel: s.Parallel, Foreach: s.Foreach, Loop: s.Loop,
	}
	if s.Set != nil {
		v, err := json.Marshal(s.Set.Value)
		if err != nil {
			return nil, err
		}
		w.Set = v
	}
	out, err := json.Marshal(w)
	if err != nil || len(s.Custom) == 0 {
		return out, err
	}
	return appendCustom(out, s.Custom)
}

// appendCustom adds the custom kind bodies to the encoded object obj.
func appendCustom(obj []byte, custom map[string]json.RawMessage) ([]byte, error) {
	keys := make([]string, 0, len(custom))
	for k := range custom {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	buf := bytes.NewBuffer(bytes.TrimSuffix(obj, []byte("}")))
	for _, k := range keys {
		kb, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		body := custom[k]
		if len(body) == 0 {
			body = json.RawMessage("null")
		}
		vb, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		buf.WriteByte(',')
		buf.Write(kb)
		buf.WriteByte(':')
		buf.Write(vb)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// MarshalJSON writes the bare value.
func (s SetStep) MarshalJSON() ([]byte, error) {
	return json.Marshal(s.Value)
}

// UnmarshalJSON reads any JSON value, numbers as json.Number.
func (s *SetStep) UnmarshalJSON(data []byte) error {
	return decodeValue(data, reflect.ValueOf(&s.Value).Elem(), "")
}
