-- How many keys each scope stores, kept by triggers in the transactions that add and delete
-- keys, so that a key's admission checks its scope's cap without counting the scope's keys:
-- only a scope whose stored keys reach the cap is counted (live keys only), as before.
CREATE TABLE idempotency_scopes (
    scope TEXT PRIMARY KEY,
    keys  INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO idempotency_scopes (scope, keys) SELECT scope, COUNT(*) FROM idempotency_keys GROUP BY scope;
CREATE TRIGGER idempotency_keys_counted AFTER INSERT ON idempotency_keys BEGIN
    INSERT OR IGNORE INTO idempotency_scopes (scope, keys) VALUES (NEW.scope, 0);
    UPDATE idempotency_scopes SET keys = keys + 1 WHERE scope = NEW.scope;
END;
CREATE TRIGGER idempotency_keys_uncounted AFTER DELETE ON idempotency_keys BEGIN
    UPDATE idempotency_scopes SET keys = keys - 1 WHERE scope = OLD.scope;
    DELETE FROM idempotency_scopes WHERE scope = OLD.scope AND keys = 0;
END;
