-- KEYS: connection, names, by-name
-- ARGV: id, name, field, value, …
if redis.call('EXISTS', KEYS[1]) == 1 or redis.call('HEXISTS', KEYS[2], ARGV[2]) == 1 then
  return fail('GR_CONFLICT')
end
redis.call('HSET', KEYS[1], unpack(ARGV, 3))
redis.call('HSET', KEYS[2], ARGV[2], ARGV[1])
redis.call('ZADD', KEYS[3], 0, ARGV[2])
return 'OK'
