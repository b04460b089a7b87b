package tools

import "github.com/mark3labs/mcp-go/mcp"

// The run card (SPEC §5, MCP Apps): hosts that render the MCP Apps extension show the
// result of a workflow tool, and of gorunner_get_run, in the card at CardURI; the others
// read the tool's _meta as nothing and see the same results as ever.
const (
	// UIExtension is the identifier of the MCP Apps extension.
	UIExtension = "io.modelcontextprotocol/ui"
	// CardURI is the run card's resource.
	CardURI = "ui://gorunner/run"
	// CardMIMEType is the type of an MCP App's HTML.
	CardMIMEType = "text/html;profile=mcp-app"
)

// cardMeta is the _meta of a tool whose results the card shows. One value for every tool:
// tools/list encodes it, nothing changes it.
var cardMeta = &mcp.Meta{AdditionalFields: map[string]any{"ui": map[string]any{"resourceUri": CardURI}}}

// withCard links t to the run card.
func withCard(t mcp.Tool) mcp.Tool {
	t.Meta = cardMeta
	return t
}
