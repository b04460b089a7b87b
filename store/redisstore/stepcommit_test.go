package redisstore_test

import (
	"testing"

	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/runner/runnertest"
)

// BenchmarkStepCommit: committing step 1,000 costs what committing step 10 does.
func BenchmarkStepCommit(b *testing.B) {
	runnertest.BenchStepCommit(b, func(b *testing.B) runner.Store { return fresh(b) })
}
