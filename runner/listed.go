package runner

import (
	"encoding/json"
	"fmt"
)

// MaxListedOutputBytes is the largest run or step output a list shows (REST and MCP
// alike); a larger one is replaced by {"truncated": true, "bytes": N}. Reading the one run
// has it whole. Documented in docs/limits.md.
const MaxListedOutputBytes = 64 << 10

// Listed is the run as a list shows it: outputs over MaxListedOutputBytes replaced by a
// truncation marker. run is not modified.
func (run *Run) Listed() *Run {
	out := *run
	out.Output = listedOutput(run.Output)
	if run.Steps == nil {
		return &out
	}
	out.Steps = make([]*StepRecord, len(run.Steps))
	for i, st := range run.Steps {
		cp := *st
		cp.Output = listedOutput(st.Output)
		out.Steps[i] = &cp
	}
	return &out
}

func listedOutput(raw json.RawMessage) json.RawMessage {
	if len(raw) <= MaxListedOutputBytes {
		return raw
	}
	return json.RawMessage(fmt.Sprintf(`{"truncated":true,"bytes":%d}`, len(raw)))
}
