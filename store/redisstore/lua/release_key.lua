-- KEYS: record, then the scope's indexes: expiries, locks, creations, abandoned claims
-- ARGV: key
-- Only an in-progress key is freed; a completed one stays.
if redis.call('HGET', KEYS[1], 'state') ~= 'in_progress' then
  return 0
end
redis.call('DEL', KEYS[1])
for i = 2, 5 do
  redis.call('ZREM', KEYS[i], ARGV[1])
end
return 1
