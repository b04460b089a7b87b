package runner

import "time"

// SetMCPSessionIdle sets how long e's mcp sessions stay open unused, so that a test sees one
// closed without waiting MCPSessionIdle.
func SetMCPSessionIdle(e *Engine, d time.Duration) {
	e.mcp.mu.Lock()
	defer e.mcp.mu.Unlock()
	e.mcp.idle = d
}
