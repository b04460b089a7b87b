package oauth_test

import (
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/auth"
)

// rawAnswer is an answer as it went out: status, content type and body bytes.
type rawAnswer struct {
	Status      int
	ContentType string
	Body        string
}

// doRaw sends method to the server's path with token and returns the answer unparsed.
func (e *env) doRaw(method, path, token string) rawAnswer {
	e.t.Helper()
	req, err := http.NewRequest(method, e.url+path, nil)
	require.NoError(e.t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(e.t, err)
	return rawAnswer{Status: resp.StatusCode, ContentType: resp.Header.Get("Content-Type"), Body: string(body)}
}

// TestRevokeGrantHidesWhichGrantsExist performs the probe of a stolen narrowed token:
// revoking another principal's grant and a grant ID that does not exist. The two answers
// are the same bytes (404 NOT_FOUND), so revoking does not tell which grant IDs exist,
// and the other principal's grant still works. An admin is told an ID is unknown and
// revokes anyone's grant, as before.
func TestRevokeGrantHidesWhichGrantsExist(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	_, person, err := e.auth.Issue(ctx, auth.IssueParams{Name: "alice", Scopes: mustScopes(t, "runs:write runs:read")})
	require.NoError(t, err)
	tok := e.connect(e.config(e.documentClient("Probed"), "runs:write"), person)
	mine := e.grants(person)
	require.Len(t, mine, 1)
	grantPath := "/api/oauth/grants/" + mine[0]["id"].(string)
	_, stolen, err := e.auth.Issue(ctx, auth.IssueParams{Name: "narrowed", Scopes: mustScopes(t, "runs:read:workflow=greet")})
	require.NoError(t, err)

	others := e.doRaw("DELETE", grantPath, stolen)
	unknown := e.doRaw("DELETE", "/api/oauth/grants/0190c0de-0000-7000-8000-000000000000", stolen)
	require.Equal(t, http.StatusNotFound, unknown.Status, unknown.Body)
	require.Contains(t, unknown.Body, `"NOT_FOUND"`)
	require.Equal(t, unknown, others)

	tools, err := e.mcpTools(bearerClient(tok.AccessToken))
	require.NoError(t, err, "the probed grant's access token still works")
	require.Contains(t, tools, "greet")
	require.Len(t, e.grants(person), 1, "the probed grant is still there")

	require.Equal(t, unknown, e.doRaw("DELETE", "/api/oauth/grants/0190c0de-0000-7000-8000-000000000000", e.admin), "an admin is told too")
	require.Equal(t, http.StatusNoContent, e.doRaw("DELETE", grantPath, e.admin).Status, "an admin revokes anyone's grant")
	require.Equal(t, http.StatusUnauthorized, status(t, "POST", e.url+"/mcp", tok.AccessToken))
}
