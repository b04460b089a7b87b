-- KEYS: run, due
-- ARGV: id, owner
if redis.call('HGET', KEYS[1], 'lease_owner') ~= ARGV[2] then
  return 0
end
redis.call('HSET', KEYS[1], 'lease_owner', '', 'lease_until', ZERO, 'claims', '0')
reindex_due(KEYS[2], KEYS[1], ARGV[1])
return 1
