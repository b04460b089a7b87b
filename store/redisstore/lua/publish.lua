-- KEYS: workflow, published, catalog version
-- ARGV: catalog channel, hash, now, version key prefix, publisher (storecodec.EncodePublisher)
-- Returns {version, created (1/0)}.
local w = hash(KEYS[1])
if not w.id or w.deleted_at ~= ZERO then
  return fail('GR_NOTFOUND')
end
local latest = tonumber(w.latest_version)
local n, created = latest, 0
if latest == 0 or redis.call('HGET', ARGV[4] .. latest, 'hash') ~= ARGV[2] then
  n, created = latest + 1, 1
  redis.call('HSET', ARGV[4] .. n, 'workflow_id', w.id, 'version', n,
    'definition', w.definition or '', 'hash', ARGV[2], 'published_at', ARGV[3], 'published_by', ARGV[5])
end
redis.call('HSET', KEYS[1], 'published', '1', 'latest_version', n, 'updated_at', ARGV[3])
redis.call('ZADD', KEYS[2], 0, w.name)
bump_catalog(KEYS[3], ARGV[1])
return {n, created}
