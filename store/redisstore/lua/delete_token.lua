-- KEYS: token, hashes, by-created
-- ARGV: (none)
local f = redis.call('HMGET', KEYS[1], 'hash', 'sort_key')
if not f[1] then
  return fail('GR_NOTFOUND')
end
redis.call('DEL', KEYS[1])
redis.call('HDEL', KEYS[2], f[1])
redis.call('ZREM', KEYS[3], f[2])
return 'OK'
