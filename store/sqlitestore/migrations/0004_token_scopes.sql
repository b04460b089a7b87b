-- Scopes (SPEC §9): tokens made before scopes existed become admin.
ALTER TABLE api_tokens ADD COLUMN scopes TEXT NOT NULL DEFAULT 'admin';
ALTER TABLE api_tokens ADD COLUMN expires_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE api_tokens ADD COLUMN audience TEXT NOT NULL DEFAULT '';
