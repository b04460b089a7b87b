-- KEYS: workflow, names, webhooks, by-name, published, catalog version
-- ARGV: catalog channel, id, deleted_at
-- The record stays (its versions serve admitted runs); its name and webhook are freed.
local w = hash(KEYS[1])
if not w.id or w.deleted_at ~= ZERO then
  return fail('GR_NOTFOUND')
end
redis.call('HSET', KEYS[1], 'deleted_at', ARGV[3], 'published', '0')
if redis.call('HGET', KEYS[2], w.name) == ARGV[2] then
  redis.call('HDEL', KEYS[2], w.name)
end
if redis.call('HGET', KEYS[3], w.webhook_token) == ARGV[2] then
  redis.call('HDEL', KEYS[3], w.webhook_token)
end
redis.call('ZREM', KEYS[4], w.name)
redis.call('ZREM', KEYS[5], w.name)
bump_catalog(KEYS[6], ARGV[1])
return 'OK'
