package mcpserver_test

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/mcpserver/runcard"
)

// cardURI is the run card's resource (SPEC §5, MCP Apps).
const cardURI = "ui://gorunner/run"

// TestRunCardDeclared checks what a host that renders MCP Apps needs from the server: the
// extension in the capabilities, the card on every workflow tool (listed one per workflow
// or through the search tools) and on gorunner_get_run, and the card itself, which names
// no domain. The other tools do not carry it; the results stay as they were (the golden
// exchanges show them unchanged).
func TestRunCardDeclared(t *testing.T) {
	f := newFixture(t, greetDef, invoiceDef)
	ctx := context.Background()
	withCard := map[string]map[string]bool{
		"":              {"greet": true, "send-invoice": true, "gorunner_get_run": true},
		"?tools=search": {"gorunner_run_workflow": true, "gorunner_get_run": true},
	}
	for query, want := range withCard {
		session, _ := f.connect(query)
		ext := session.InitializeResult().Capabilities.Extensions
		require.Equal(t, map[string]any{"mimeTypes": []any{"text/html;profile=mcp-app"}}, ext["io.modelcontextprotocol/ui"])
		require.Contains(t, ext, "io.modelcontextprotocol/tasks", "the extensions add up")
		got := map[string]bool{}
		for tool, err := range session.Tools(ctx, nil) {
			require.NoError(t, err)
			if ui, ok := tool.Meta["ui"].(map[string]any); ok {
				require.Equal(t, map[string]any{"resourceUri": cardURI}, ui, tool.Name)
				got[tool.Name] = true
			}
		}
		require.Equal(t, want, got, "the tools that show their result in the card, listed with %q", query)

		read, err := session.ReadResource(ctx, &mcp.ReadResourceParams{URI: cardURI})
		require.NoError(t, err)
		require.Len(t, read.Contents, 1)
		c := read.Contents[0]
		require.Equal(t, "text/html;profile=mcp-app", c.MIMEType)
		require.Equal(t, runcard.HTML, c.Text)
		require.Equal(t, map[string]any{"ui": map[string]any{
			"csp":           map[string]any{"connectDomains": []any{}, "resourceDomains": []any{}},
			"prefersBorder": true,
		}}, map[string]any(c.Meta))
	}

	session, _ := f.connect("")
	listed, err := session.ListResources(ctx, nil)
	require.NoError(t, err)
	require.Len(t, listed.Resources, 1)
	require.Equal(t, cardURI, listed.Resources[0].URI)
	require.Equal(t, "text/html;profile=mcp-app", listed.Resources[0].MIMEType)
}
