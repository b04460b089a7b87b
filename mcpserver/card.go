package mcpserver

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/gorunner/gorunner/mcpserver/runcard"
	"github.com/gorunner/gorunner/tools"
)

// serverExtensions are the extensions the server declares in its capabilities: tasks, and
// MCP Apps with the one type of view it offers.
func serverExtensions() map[string]any {
	return map[string]any{
		TasksExtension:    map[string]any{},
		tools.UIExtension: map[string]any{"mimeTypes": []string{tools.CardMIMEType}},
	}
}

// cardUIMeta is the card's _meta.ui: it reaches no domain (an empty CSP, so a host allows
// it nothing outside the card) and asks the host for a border.
var cardUIMeta = map[string]any{"ui": map[string]any{
	"csp":           map[string]any{"connectDomains": []string{}, "resourceDomains": []string{}},
	"prefersBorder": true,
}}

// cardResource is the run card as a resource (tools.CardURI), the same in every
// environment and for every principal: it holds no data, the tool results bring it.
func cardResource() server.ServerResource {
	return server.ServerResource{
		Resource: mcp.Resource{
			Meta:        &mcp.Meta{AdditionalFields: cardUIMeta},
			URI:         tools.CardURI,
			Name:        "run-card",
			Title:       "GoRunner run",
			Description: "Shows a run from a workflow tool's result, follows it until it ends, and answers the hook it waits on (MCP Apps).",
			MIMEType:    tools.CardMIMEType,
		},
		Handler: func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{
				URI: tools.CardURI, MIMEType: tools.CardMIMEType, Text: runcard.HTML, Meta: cardUIMeta}}, nil
		},
	}
}
