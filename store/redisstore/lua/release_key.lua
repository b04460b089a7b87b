-- KEYS: record, scope expiries, scope locks, scope creations
-- ARGV: key
-- Only an in-progress key is freed; a completed one stays.
if redis.call('HGET', KEYS[1], 'state') ~= 'in_progress' then
  return 0
end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('ZREM', KEYS[4], ARGV[1])
return 1
