-- Webhook tokens are no longer kept in the clear: webhook_token now holds the token's keyed
-- lookup digest (the name stays, so that a process of the version before keeps reading the
-- table while both run) and webhook_sealed the token sealed under the data directory's
-- secret key. A migration cannot know that key: the catalog upgrades each row still holding
-- its plaintext token, and an empty webhook_sealed, when a process starts.
ALTER TABLE workflows ADD COLUMN webhook_sealed BLOB NOT NULL DEFAULT x'';
