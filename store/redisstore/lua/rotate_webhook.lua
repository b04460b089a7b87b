-- KEYS: workflow, webhooks
-- ARGV: id, new digest, new sealed token, updated_at
local w = hash(KEYS[1])
if not w.id or w.deleted_at ~= ZERO then
  return fail('GR_NOTFOUND')
end
local other = redis.call('HGET', KEYS[2], ARGV[2])
if other and other ~= ARGV[1] then
  return fail('GR_CONFLICT')
end
if redis.call('HGET', KEYS[2], w.webhook_token) == ARGV[1] then
  redis.call('HDEL', KEYS[2], w.webhook_token)
end
redis.call('HSET', KEYS[2], ARGV[2], ARGV[1])
redis.call('HSET', KEYS[1], 'webhook_token', ARGV[2], 'webhook_sealed', ARGV[3], 'updated_at', ARGV[4])
return 'OK'
