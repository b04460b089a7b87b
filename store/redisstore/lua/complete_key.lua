-- KEYS: record, scope expiries, scope locks
-- ARGV: key, expires score, ttl ms, field, value, …
-- Written even if the claim was purged meanwhile, so the answer still replays.
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], unpack(ARGV, 4))
local ttl = tonumber(ARGV[3])
redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
if redis.call('PTTL', KEYS[2]) < ttl then
  redis.call('PEXPIRE', KEYS[2], ttl)
end
return 'OK'
