package tools

import (
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
)

// RunURITemplate is the URI template of the run resources (SPEC §5, Resources).
const RunURITemplate = "gorunner://runs/{runId}"

// runURIPrefix is what every run resource URI starts with.
const runURIPrefix = "gorunner://runs/"

// RunURI is the resource URI of run id.
func RunURI(id string) string { return runURIPrefix + id }

// RunIDOf is the run ID a run resource URI names; ok is false for any other URI.
func RunIDOf(uri string) (id string, ok bool) {
	id, ok = strings.CutPrefix(uri, runURIPrefix)
	if !ok || id == "" || strings.ContainsAny(id, "/?#") {
		return "", false
	}
	return id, true
}

// RunLink is the resource_link a workflow tool result carries to its run.
func RunLink(id string) mcp.ResourceLink {
	return mcp.NewResourceLink(RunURI(id), "run "+id, "The run's current state (the run object of GET /api/runs/{id})", "application/json")
}
