-- What a run kept, when it ended, of the payloads queued for its tokens that no hook step
-- took (storecodec.EncodeUndelivered); NULL when none was left.
ALTER TABLE runs ADD COLUMN undelivered BLOB;
