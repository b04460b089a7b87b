package mcpserver

import (
	"net/http"

	"github.com/mark3labs/mcp-go/server"
)

// MetadataPath is where the OAuth protected resource metadata of /mcp is served (RFC 9728
// §3.1: the well-known prefix, then the resource's path). The bare prefix is served too.
const MetadataPath = server.WellKnownProtectedResourcePath + "/mcp"

// MetadataHandlers serve /mcp's protected resource metadata (RFC 9728) by path, to mount
// without authentication: the resource is publicURL + "/mcp" (publicURL as api.PublicOrigin
// returns it; the request's Host is never used) and tokens go in the Authorization header.
// With an OAuth authorization server (serve --public-url), the metadata names its issuer
// and the scopes a client may ask for.
func MetadataHandlers(publicURL string, oauth *AuthorizationServer) map[string]http.Handler {
	cfg := server.ProtectedResourceMetadataConfig{
		Resource:               publicURL + "/mcp",
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "GoRunner",
	}
	if oauth != nil {
		cfg.AuthorizationServers = []string{oauth.Issuer}
		cfg.ScopesSupported = oauth.Scopes
	}
	h := server.NewProtectedResourceMetadataHandler(cfg)
	return map[string]http.Handler{server.WellKnownProtectedResourcePath: h, MetadataPath: h}
}

// AuthorizationServer is the OAuth authorization server the metadata names.
type AuthorizationServer struct {
	Issuer string
	Scopes []string
}
