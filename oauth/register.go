package oauth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
)

// registration is the answer to a dynamic registration (RFC 7591 §3.2.1).
type registration struct {
	ClientID                string   `json:"client_id"`
	ClientIDIssuedAt        int64    `json:"client_id_issued_at"`
	ClientName              string   `json:"client_name"`
	RedirectURIs            []string `json:"redirect_uris"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
}

// registerClient is RFC 7591 dynamic registration, for clients that predate Client ID
// Metadata Documents. Every client is public (token_endpoint_auth_method "none", PKCE
// protects its codes): a request for another method is answered with "none", as §3.2.1
// lets the server replace values.
func (s *Server) registerClient(w http.ResponseWriter, r *http.Request) {
	c, err := s.registration(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, registration{ClientID: c.ID, ClientIDIssuedAt: c.CreatedAt.Unix(),
		ClientName: c.Name, RedirectURIs: c.RedirectURIs, GrantTypes: c.GrantTypes,
		ResponseTypes: []string{"code"}, TokenEndpointAuthMethod: "none"})
}

// checkRoom refuses a registration while Config.MaxClients clients are registered, after a due
// sweep had its chance to delete unused ones.
func (s *Server) checkRoom(ctx context.Context) *oauthError {
	s.sweepIfDue(ctx)
	n, err := s.store.CountClients(ctx)
	if err != nil {
		return internal(err)
	}
	if n >= s.cfg.MaxClients {
		e := newError(errTemporarilyUnavailable, "too many registered clients; try again later")
		e.retryAfter = SweepInterval
		return e
	}
	return nil
}

func (s *Server) registration(r *http.Request) (*Client, *oauthError) {
	if r.Method != http.MethodPost {
		return nil, postOnly()
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if ok, wait := s.register.allow(host, s.cfg.Now()); !ok {
		e := newError(errTemporarilyUnavailable, "too many registrations from this address; try again later")
		e.status, e.retryAfter = http.StatusTooManyRequests, wait
		return nil, e
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxRegistrationBytes+1))
	if err != nil {
		return nil, newError(errInvalidClientMetadata, "reading the request failed")
	}
	if len(body) > MaxRegistrationBytes {
		e := newError(errInvalidClientMetadata, "the registration request is larger than 16384 bytes")
		e.status = http.StatusRequestEntityTooLarge
		return nil, e
	}
	var doc clientDocument
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(&doc); err != nil {
		return nil, newError(errInvalidClientMetadata, "the body must be a JSON object: "+err.Error())
	}
	// The answer names the grant types, so a client that named none learns it may refresh.
	c, err := s.checkMetadata(doc, "Unnamed client", []string{grantAuthorizationCode, grantRefreshToken})
	if err != nil {
		code := errInvalidClientMetadata
		if ce := (*errClient)(nil); errors.As(err, &ce) && ce.redirect {
			code = errInvalidRedirectURI
		}
		return nil, newError(code, err.Error())
	}
	if e := s.checkRoom(r.Context()); e != nil {
		return nil, e
	}
	c.ID, c.CreatedAt = newID(), s.cfg.Now().UTC()
	if err := s.store.CreateClient(r.Context(), c); err != nil {
		return nil, internal(err)
	}
	return c, nil
}
