-- A scope at its cap is checked without reading its keys: its abandoned claims (the only
-- stored keys that are not live once expired keys are purged) are counted through this
-- index of in-progress keys, and its oldest live keys are found in expiry order, the key
-- breaking ties, without sorting them.
CREATE INDEX idempotency_keys_locks ON idempotency_keys (scope, locked_until) WHERE state = 'in_progress';
DROP INDEX idempotency_keys_expiry;
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (scope, expires_at, key, state, locked_until);
