-- KEYS: due
-- ARGV: 1 owner, 2 lease_until, 3 run key prefix, 4… run IDs
-- Returns {id, cancel_requested, …} for the runs owner still holds.
local out = {}
for i = 4, #ARGV do
  local id = ARGV[i]
  local key = ARGV[3] .. id
  local f = redis.call('HMGET', key, 'lease_owner', 'cancel_requested')
  if f[1] == ARGV[1] then
    redis.call('HSET', key, 'lease_until', ARGV[2])
    reindex_due(KEYS[1], key, id)
    table.insert(out, id)
    table.insert(out, f[2])
  end
end
return out
