-- OAuth 2.1 authorization server (SPEC §9): registered clients, authorization codes,
-- grants with their refresh tokens and access tokens, one-time sign-in codes. Secrets are
-- stored as SHA-256 only.
CREATE TABLE oauth_clients (
    id            TEXT PRIMARY KEY,
    name          TEXT NOT NULL,
    redirect_uris TEXT NOT NULL, -- JSON array
    grant_types   TEXT NOT NULL, -- JSON array
    created_at    INTEGER NOT NULL
);

CREATE TABLE oauth_codes (
    hash           BLOB PRIMARY KEY,
    client_id      TEXT NOT NULL,
    client_name    TEXT NOT NULL,
    redirect_uri   TEXT NOT NULL,
    challenge      TEXT NOT NULL,
    scope          TEXT NOT NULL,
    principal_id   TEXT NOT NULL,
    principal_name TEXT NOT NULL,
    expires_at     INTEGER NOT NULL,
    grant_id       TEXT NOT NULL DEFAULT ''
);
CREATE INDEX oauth_codes_expiry ON oauth_codes (expires_at);

CREATE TABLE oauth_grants (
    id                 TEXT PRIMARY KEY,
    client_id          TEXT NOT NULL,
    client_name        TEXT NOT NULL,
    principal_id       TEXT NOT NULL,
    principal_name     TEXT NOT NULL,
    scope              TEXT NOT NULL,
    created_at         INTEGER NOT NULL,
    refresh_hash       BLOB NOT NULL,
    refresh_expires_at INTEGER NOT NULL
);
CREATE INDEX oauth_grants_principal ON oauth_grants (principal_id, created_at);

-- Every refresh token a grant ever had, so that a rotated-away one is known as reused.
CREATE TABLE oauth_refresh_tokens (
    hash     BLOB PRIMARY KEY,
    grant_id TEXT NOT NULL REFERENCES oauth_grants (id) ON DELETE CASCADE
);
CREATE INDEX oauth_refresh_tokens_grant ON oauth_refresh_tokens (grant_id);

CREATE TABLE oauth_grant_tokens (
    grant_id TEXT NOT NULL REFERENCES oauth_grants (id) ON DELETE CASCADE,
    seq      INTEGER NOT NULL,
    token_id TEXT NOT NULL,
    PRIMARY KEY (grant_id, seq)
);

CREATE TABLE oauth_signin_codes (
    hash           BLOB PRIMARY KEY,
    principal_id   TEXT NOT NULL,
    principal_name TEXT NOT NULL,
    scope          TEXT NOT NULL,
    expires_at     INTEGER NOT NULL
);
CREATE INDEX oauth_signin_codes_expiry ON oauth_signin_codes (expires_at);
