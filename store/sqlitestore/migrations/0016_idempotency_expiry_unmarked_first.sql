-- The search for a scope's oldest live keys (a refusal at the cap, an eviction) walked the
-- expiry index from the first key to expire, stepping over every abandoned claim that
-- expires sooner, which is all of them when the live keys were answered after the claims
-- were abandoned: the read 0014 spared the count, as long as the claims a caller piled up.
-- The index puts the claims marked abandoned (0014) after the others, so that the search
-- reads the keys not marked, every one of them live once the check at the cap has marked
-- the claims whose lock ended; the purge of expired keys reads both parts.
DROP INDEX idempotency_keys_expiry;
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (scope, abandoned, expires_at, key, state, locked_until);
