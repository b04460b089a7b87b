-- KEYS: workflow, names, webhooks, by-name, published, catalog version
-- ARGV: catalog channel, id, name, webhook digest, published (1/0), field, value, …
if redis.call('EXISTS', KEYS[1]) == 1 or redis.call('HEXISTS', KEYS[2], ARGV[3]) == 1
    or redis.call('HEXISTS', KEYS[3], ARGV[4]) == 1 then
  return fail('GR_CONFLICT')
end
redis.call('HSET', KEYS[1], unpack(ARGV, 6))
redis.call('HSET', KEYS[2], ARGV[3], ARGV[2])
redis.call('HSET', KEYS[3], ARGV[4], ARGV[2])
redis.call('ZADD', KEYS[4], 0, ARGV[3])
if ARGV[5] == '1' then
  redis.call('ZADD', KEYS[5], 0, ARGV[3])
end
bump_catalog(KEYS[6], ARGV[1])
return 'OK'
