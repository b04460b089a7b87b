-- KEYS: workflow, names, by-name, published, catalog version
-- ARGV: catalog channel, id, expected rev, name, title, description, definition, updated_at
local w = hash(KEYS[1])
if not w.id or w.deleted_at ~= ZERO then
  return fail('GR_NOTFOUND')
end
local expected = tonumber(ARGV[3])
if expected > 0 and expected ~= tonumber(w.rev) then
  return fail('GR_CONFLICT', 'rev is ' .. w.rev)
end
local name = ARGV[4]
if name ~= w.name then
  local other = redis.call('HGET', KEYS[2], name)
  if other and other ~= ARGV[2] then
    return fail('GR_CONFLICT', 'name taken')
  end
  redis.call('HDEL', KEYS[2], w.name)
  redis.call('HSET', KEYS[2], name, ARGV[2])
  redis.call('ZREM', KEYS[3], w.name)
  redis.call('ZADD', KEYS[3], 0, name)
  if w.published == '1' then
    redis.call('ZREM', KEYS[4], w.name)
    redis.call('ZADD', KEYS[4], 0, name)
  end
end
redis.call('HSET', KEYS[1], 'name', name, 'title', ARGV[5], 'description', ARGV[6],
  'definition', ARGV[7], 'updated_at', ARGV[8])
redis.call('HINCRBY', KEYS[1], 'rev', 1)
bump_catalog(KEYS[5], ARGV[1])
local _, flat = hash(KEYS[1])
return flat
