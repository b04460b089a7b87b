//go:build unix

package sqlitestore

import (
	"context"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// BenchmarkWrite commits one single-row write at a time, as a 1-step tool call at c=1
// does, so it measures the committer's cost per transaction. Besides the time per write it
// reports cpu-µs/op, the CPU time the process spent per write, which a busy machine
// disturbs less than the elapsed time.
func BenchmarkWrite(b *testing.B) {
	s, _ := openT(b)
	ctx := context.Background()
	cpu := processCPU(b)
	b.ResetTimer()
	for i := range b.N {
		if err := s.write(ctx, insertKey(ctx, s, strconv.Itoa(i))); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64((processCPU(b)-cpu).Microseconds())/float64(b.N), "cpu-µs/op")
}

// processCPU is the CPU time (user and system) this process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
