package api

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/gorunner/gorunner/runner"
)

// List answer limits (documented in README, "Limits").
const (
	// MaxPageBytes is the most body one list answer carries: a page that would be larger
	// is cut short and continues at its nextCursor (a page holds at least one item).
	MaxPageBytes = 4 << 20
	// MaxListedOutputBytes is the largest run or step output a list shows; a larger one is
	// replaced by {"truncated": true, "bytes": N}. GET /api/runs/{id} has it whole.
	MaxListedOutputBytes = 64 << 10
)

// pageSlack is room left in MaxPageBytes for the envelope and the next cursor.
const pageSlack = 1 << 10

// ListedRun is run as a list shows it: outputs over MaxListedOutputBytes replaced by a
// truncation marker. run is not modified.
func ListedRun(run *runner.Run) *runner.Run {
	out := *run
	out.Output = listedOutput(run.Output)
	if run.Steps == nil {
		return &out
	}
	out.Steps = make([]*runner.StepRecord, len(run.Steps))
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

func listedRuns(runs []*runner.Run) []*runner.Run {
	out := make([]*runner.Run, len(runs))
	for i, r := range runs {
		out[i] = ListedRun(r)
	}
	return out
}

// boundedPage lists a page of at most limit items, and lists it again shorter as long as
// its answer would pass MaxPageBytes, so that the page's own next cursor continues
// exactly after its last item.
func boundedPage[T any](limit int, list func(limit int) ([]T, string, error)) ([]T, string, error) {
	for {
		items, next, err := list(limit)
		if err != nil {
			return nil, "", err
		}
		n, err := fitPage(items)
		if err != nil || n == len(items) {
			return items, next, err
		}
		limit = n
	}
}

// fitPage returns how many of items, from the first, fit in one list answer (at least 1).
func fitPage[T any](items []T) (int, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	size := pageSlack
	for i, it := range items {
		buf.Reset()
		if err := enc.Encode(it); err != nil {
			return 0, fmt.Errorf("encoding a list item: %w", err)
		}
		if size += buf.Len(); size > MaxPageBytes && i > 0 {
			return i, nil
		}
	}
	return len(items), nil
}
