-- KEYS: record, scope expiries, scope locks, scope creations
-- ARGV: key, expires score, ttl ms, created score, field, value, …
-- Written even if the claim was purged meanwhile, so the answer still replays.
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], unpack(ARGV, 5))
local ttl = tonumber(ARGV[3])
redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('ZADD', KEYS[4], ARGV[4], ARGV[1])
for _, k in ipairs({KEYS[2], KEYS[4]}) do
  if redis.call('PTTL', k) < ttl then
    redis.call('PEXPIRE', k, ttl)
  end
end
return 'OK'
