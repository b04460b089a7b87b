-- Listing a principal's keys (GET /api/idempotency-keys): the request each key was first
-- used for, the run its answer names, and an index for newest-first pages.
ALTER TABLE idempotency_keys ADD COLUMN method TEXT NOT NULL DEFAULT '';
ALTER TABLE idempotency_keys ADD COLUMN path TEXT NOT NULL DEFAULT '';
ALTER TABLE idempotency_keys ADD COLUMN run_id TEXT NOT NULL DEFAULT '';
CREATE INDEX idempotency_keys_created ON idempotency_keys (scope, created_at, key);
