-- KEYS: workflow, webhooks
-- ARGV: id, plaintext token, digest, sealed token
-- Upgrades a workflow still holding its plaintext token (webhook_token, no webhook_sealed):
-- its digest replaces it, here and in the index. updated_at and rev stay: the address is
-- the same.
local w = hash(KEYS[1])
if not w.id or w.deleted_at ~= ZERO or w.webhook_token ~= ARGV[2] or (w.webhook_sealed or '') ~= '' then
  return fail('GR_NOTFOUND')
end
local other = redis.call('HGET', KEYS[2], ARGV[3])
if other and other ~= ARGV[1] then
  return fail('GR_CONFLICT')
end
if redis.call('HGET', KEYS[2], ARGV[2]) == ARGV[1] then
  redis.call('HDEL', KEYS[2], ARGV[2])
end
redis.call('HSET', KEYS[2], ARGV[3], ARGV[1])
redis.call('HSET', KEYS[1], 'webhook_token', ARGV[3], 'webhook_sealed', ARGV[4])
return 'OK'
