//go:build !unix

package mcpserver_test

import "time"

// processCPU is not measured here: false.
func processCPU() (time.Duration, bool) { return 0, false }
