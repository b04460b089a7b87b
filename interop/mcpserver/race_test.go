//go:build race

package mcpserver_test

// scaleWorkflows is how many workflows the tools/list scale test and benchmark publish:
// SPEC §5's 10,000 would take minutes under the race detector, which slows the pure-Go
// SQLite some 15 times, so a tenth of it, still many pages.
const scaleWorkflows = 1_000
