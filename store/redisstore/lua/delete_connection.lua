-- KEYS: connection, names, by-name
-- ARGV: id
local name = redis.call('HGET', KEYS[1], 'name')
if not name then
  return fail('GR_NOTFOUND')
end
redis.call('DEL', KEYS[1])
redis.call('HDEL', KEYS[2], name)
redis.call('ZREM', KEYS[3], name)
return 'OK'
