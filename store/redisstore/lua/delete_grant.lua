-- KEYS: grant, grant tokens, grant refresh set, refresh index, grants by created,
--       the principal's grants by created, access token → grant index
-- Deletes the grant and its refresh tokens; answers its token IDs.
local member = redis.call('HGET', KEYS[1], 'sort_key')
if not member then
  return fail('GR_NOTFOUND')
end
local tokens = redis.call('LRANGE', KEYS[2], 0, -1)
for _, t in ipairs(tokens) do
  redis.call('HDEL', KEYS[7], t)
end
for _, h in ipairs(redis.call('SMEMBERS', KEYS[3])) do
  redis.call('HDEL', KEYS[4], h)
end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
redis.call('ZREM', KEYS[5], member)
redis.call('ZREM', KEYS[6], member)
return tokens
