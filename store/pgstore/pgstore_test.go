package pgstore_test

import (
	"testing"

	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/runner/runnertest"
	"github.com/gorunner/gorunner/store"
	"github.com/gorunner/gorunner/store/pgstore"
	"github.com/gorunner/gorunner/store/pgstore/pgtest"
	"github.com/gorunner/gorunner/store/storetest"
)

// fresh opens a store in a schema of its own, dropped when the test ends.
func fresh(t testing.TB) *pgstore.Store {
	t.Helper()
	s, _ := pgtest.Open(t)
	return s
}

// TestContracts runs every store contract's conformance suite on this backend.
func TestContracts(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) store.Backend { return fresh(t) })
}

// crossProcesses opens two stores on one schema, as two processes sharing it would.
func crossProcesses(tb testing.TB) (storetest.Process, storetest.Process) {
	a, schema := pgtest.Open(tb)
	b := pgtest.OpenIn(tb, schema)
	return storetest.Process{Store: a, Events: a.Events()}, storetest.Process{Store: b, Events: b.Events()}
}

func TestCrossProcess(t *testing.T) {
	t.Parallel()
	storetest.RunCrossProcess(t, crossProcesses)
}

func BenchmarkWaitCrossProcess(b *testing.B) {
	storetest.BenchWaitLatency(b, crossProcesses)
}

// BenchmarkStepCommit: committing step 1,000 costs what committing step 10 does.
func BenchmarkStepCommit(b *testing.B) {
	runnertest.BenchStepCommit(b, func(b *testing.B) runner.Store { return fresh(b) })
}

// BenchmarkListRuns is runnertest.BenchListRuns on this backend.
func BenchmarkListRuns(b *testing.B) {
	runnertest.BenchListRuns(b, func(b *testing.B) runner.Store { return fresh(b) })
}
