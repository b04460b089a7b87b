-- What a run kept, when it ended, of the payloads queued for its tokens that no hook step
-- took (storecodec.EncodeUndelivered); NULL when none was left.
ALTER TABLE runs ADD COLUMN undelivered bytea;
-- How many access tokens each OAuth grant was issued: the code exchange's, then one per
-- refresh. A grant made before counts its first.
ALTER TABLE oauth_grants ADD COLUMN tokens_issued integer NOT NULL DEFAULT 1;
