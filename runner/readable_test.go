package runner_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/runner"
)

// TestReadableAdmits: a filter admits the runs its principal started and those of its
// workflows, however many; no filter admits every run, and a principal with no ID admits
// no run by its starter alone.
func TestReadableAdmits(t *testing.T) {
	t.Parallel()
	many := make([]string, 50_000)
	for i := range many {
		many[i] = fmt.Sprintf("wf-%05d", i)
	}
	mine := &runner.Run{StartedBy: "alice", WorkflowID: "wf-other"}
	theirs := &runner.Run{StartedBy: "bob", WorkflowID: many[len(many)-1]}
	anon := &runner.Run{WorkflowID: "wf-other"}
	tests := []struct {
		name string
		f    *runner.Readable
		want [3]bool // mine, theirs, anon
	}{
		{"none", nil, [3]bool{true, true, true}},
		{"own", &runner.Readable{StartedBy: "alice"}, [3]bool{true, false, false}},
		{"own or many workflows", &runner.Readable{StartedBy: "alice", WorkflowIDs: many}, [3]bool{true, true, false}},
		{"workflows, no ID", &runner.Readable{WorkflowIDs: many}, [3]bool{false, true, false}},
		{"nothing", &runner.Readable{}, [3]bool{false, false, false}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			admits := tc.f.Admitter()
			for i, r := range []*runner.Run{mine, theirs, anon} {
				require.Equal(t, tc.want[i], admits(r), "run %d", i)
			}
		})
	}
}
