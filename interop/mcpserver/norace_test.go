//go:build !race

package mcpserver_test

// scaleWorkflows is how many workflows the tools/list scale test and benchmark publish:
// the 10,000 of SPEC §5.
const scaleWorkflows = 10_000
