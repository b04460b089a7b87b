// Package oauth is GoRunner's own OAuth 2.1 authorization server for remote MCP clients
// (SPEC §9): RFC 8414 metadata, the authorize page, authorization codes with PKCE (S256
// only), clients identified by Client ID Metadata Documents or registered with RFC 7591,
// refresh tokens that rotate on every use (a reused one revokes the whole grant), and RFC
// 7009 revocation. A grant lives no longer than the token of the person who approved it. Access tokens are ordinary GoRunner tokens from auth, limited in time,
// audience and scope. Codes, refresh tokens and sign-in codes are stored as SHA-256 only.
package oauth
