//go:build unix

package runnertest

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user and system) this process has used, 0 if unknown: a
// figure less noisy than wall time on a shared machine.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
