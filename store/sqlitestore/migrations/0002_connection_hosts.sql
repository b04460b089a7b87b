-- Connections name the hosts their secret may be sent to, as a JSON array of host
-- patterns. Connections made before have none, so they are sent nowhere until recreated.
ALTER TABLE connections ADD COLUMN hosts TEXT NOT NULL DEFAULT '[]';
