-- A key's admission counts it in its scope (0010) with one statement instead of two: the
-- trigger runs on every new key, inside the admission's write.
DROP TRIGGER idempotency_keys_counted;
CREATE TRIGGER idempotency_keys_counted AFTER INSERT ON idempotency_keys BEGIN
    INSERT INTO idempotency_scopes (scope, keys) VALUES (NEW.scope, 1)
        ON CONFLICT (scope) DO UPDATE SET keys = keys + 1;
END;
