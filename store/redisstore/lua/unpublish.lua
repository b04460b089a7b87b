-- KEYS: workflow, published, catalog version
-- ARGV: catalog channel, updated_at
local w = hash(KEYS[1])
if not w.id or w.deleted_at ~= ZERO then
  return fail('GR_NOTFOUND')
end
redis.call('HSET', KEYS[1], 'published', '0', 'updated_at', ARGV[2])
redis.call('ZREM', KEYS[2], w.name)
bump_catalog(KEYS[3], ARGV[1])
local _, flat = hash(KEYS[1])
return flat
