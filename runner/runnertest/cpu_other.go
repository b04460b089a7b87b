//go:build !unix

package runnertest

import "time"

// processCPU is unknown here.
func processCPU() time.Duration { return 0 }
