-- KEYS: refresh index
-- ARGV: old hash (hex), new hash (hex), new expiry, token ID, grant key prefix,
--       grant tokens key prefix, grant refresh set prefix, access token → grant index
-- Replaces the grant's current refresh token and its access tokens; a rotated-away one
-- fails GR_USED, nothing changed. Answers the grant ID.
local id = redis.call('HGET', KEYS[1], ARGV[1])
if not id then
  return fail('GR_NOTFOUND')
end
local grant = ARGV[5] .. id
local current = redis.call('HGET', grant, 'refresh_hash')
if not current then
  return fail('GR_NOTFOUND')
end
if current ~= ARGV[1] then
  return fail('GR_USED', id)
end
redis.call('HSET', grant, 'refresh_hash', ARGV[2], 'refresh_expires_at', ARGV[3])
if redis.call('HEXISTS', grant, 'tokens_issued') == 0 then
  redis.call('HSET', grant, 'tokens_issued', 1) -- a grant stored before the count: its first
end
redis.call('HINCRBY', grant, 'tokens_issued', 1)
redis.call('HSET', KEYS[1], ARGV[2], id)
redis.call('SADD', ARGV[7] .. id, ARGV[2])
for _, t in ipairs(redis.call('LRANGE', ARGV[6] .. id, 0, -1)) do
  redis.call('HDEL', ARGV[8], t)
end
redis.call('DEL', ARGV[6] .. id)
redis.call('RPUSH', ARGV[6] .. id, ARGV[4])
redis.call('HSET', ARGV[8], ARGV[4], id)
return id
