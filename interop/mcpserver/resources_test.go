package mcpserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

func TestRunResources(t *testing.T) {
	f := newFixture(t, greetDef)
	session, _ := f.connect("")
	ctx := context.Background()

	templates, err := session.ListResourceTemplates(ctx, nil)
	require.NoError(t, err)
	require.Len(t, templates.ResourceTemplates, 1)
	require.Equal(t, "gorunner://runs/{runId}", templates.ResourceTemplates[0].URITemplate)

	res, got := call(t, session, "greet", map[string]any{"name": "Ada"})
	runID := got["runId"].(string)
	var link *mcp.ResourceLink
	for _, c := range res.Content {
		if l, ok := c.(*mcp.ResourceLink); ok {
			link = l
		}
	}
	require.NotNil(t, link, "the result links its run")
	require.Equal(t, "gorunner://runs/"+runID, link.URI)

	read, err := session.ReadResource(ctx, &mcp.ReadResourceParams{URI: link.URI})
	require.NoError(t, err)
	require.Len(t, read.Contents, 1)
	require.Equal(t, "application/json", read.Contents[0].MIMEType)
	_, rest := f.rest("GET", "/api/runs/"+runID, nil, http.Header{})
	want, err := json.Marshal(rest["data"])
	require.NoError(t, err)
	require.JSONEq(t, string(want), read.Contents[0].Text, "the same run object as GET /api/runs/{id}")

	for _, uri := range []string{"gorunner://runs/0190c0de-0000-7000-8000-000000000000", "gorunner://runs/", "gorunner://runs/a/b"} {
		_, err = session.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		require.ErrorContains(t, err, "not found", uri)
	}
}
