-- A scope's abandoned claims are counted as its keys are (0010), so that a key's admission
-- at the cap does not count them through an index, a read as long as the claims a caller
-- piled up. A claim is marked abandoned once, by the first check at the cap that finds its
-- lock over (it cannot come back: a claim taken over or answered is written anew, which
-- clears the mark); triggers keep the scope's count in the same transactions that mark,
-- rewrite, release, evict and purge keys. The index of in-progress keys holds the claims
-- not marked yet, so that marking reads only the claims it marks.
ALTER TABLE idempotency_keys ADD COLUMN abandoned INTEGER NOT NULL DEFAULT 0;
ALTER TABLE idempotency_scopes ADD COLUMN abandoned INTEGER NOT NULL DEFAULT 0;
DROP TRIGGER idempotency_keys_uncounted;
CREATE TRIGGER idempotency_keys_uncounted AFTER DELETE ON idempotency_keys BEGIN
    UPDATE idempotency_scopes SET keys = keys - 1, abandoned = abandoned - OLD.abandoned WHERE scope = OLD.scope;
    DELETE FROM idempotency_scopes WHERE scope = OLD.scope AND keys = 0;
END;
CREATE TRIGGER idempotency_keys_abandoned AFTER UPDATE OF abandoned ON idempotency_keys
WHEN NEW.abandoned != OLD.abandoned BEGIN
    UPDATE idempotency_scopes SET abandoned = abandoned + NEW.abandoned - OLD.abandoned WHERE scope = NEW.scope;
END;
DROP INDEX idempotency_keys_locks;
CREATE INDEX idempotency_keys_locks ON idempotency_keys (scope, locked_until) WHERE state = 'in_progress' AND abandoned = 0;
