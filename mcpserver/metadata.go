package mcpserver

import (
	"net/http"
	"strings"

	"github.com/mark3labs/mcp-go/server"
)

// MetadataPath is where the OAuth protected resource metadata of /mcp is served (RFC 9728
// §3.1: the well-known prefix, then the resource's path). The bare prefix is served too.
const MetadataPath = server.WellKnownProtectedResourcePath + "/mcp"

// MetadataHandlers serve /mcp's protected resource metadata (RFC 9728) by path, to mount
// without authentication: the resource is baseURL + "/mcp" (the request's own origin when
// baseURL is empty) and tokens go in the Authorization header. With an OAuth
// authorization server (serve --public-url), the metadata names its issuer and the
// scopes a client may ask for.
func MetadataHandlers(baseURL string, oauth *AuthorizationServer) map[string]http.Handler {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cfg := server.ProtectedResourceMetadataConfig{
			Resource:               origin(baseURL, r) + "/mcp",
			BearerMethodsSupported: []string{"header"},
			ResourceName:           "GoRunner",
		}
		if oauth != nil {
			cfg.AuthorizationServers = []string{oauth.Issuer}
			cfg.ScopesSupported = oauth.Scopes
		}
		server.NewProtectedResourceMetadataHandler(cfg).ServeHTTP(w, r)
	})
	return map[string]http.Handler{server.WellKnownProtectedResourcePath: h, MetadataPath: h}
}

// AuthorizationServer is the OAuth authorization server the metadata names.
type AuthorizationServer struct {
	Issuer string
	Scopes []string
}

// origin is baseURL without a trailing slash, or the request's scheme and host.
func origin(baseURL string, r *http.Request) string {
	if baseURL != "" {
		return strings.TrimSuffix(baseURL, "/")
	}
	scheme := "http"
	if r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https" {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}
