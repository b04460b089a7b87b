-- How many access tokens each OAuth grant was issued: the code exchange's, then one per
-- refresh. A grant made before counts its first.
ALTER TABLE oauth_grants ADD COLUMN tokens_issued INTEGER NOT NULL DEFAULT 1;
