-- KEYS: due
-- ARGV: 1 owner, 2 now, 3 now score, 4 lease_until, 5 limit, 6 run key prefix
-- Returns the IDs leased to owner; each claim counts up the run's claims. A due-set entry
-- is a hint; the run record decides.
local due, now, now_us = KEYS[1], ARGV[2], tonumber(ARGV[3])
local limit, prefix = tonumber(ARGV[5]), ARGV[6]
local out, offset, batch = {}, 0, limit + 16
while #out < limit do
  local ids = redis.call('ZRANGEBYSCORE', due, '-inf', now_us, 'LIMIT', offset, batch)
  for _, id in ipairs(ids) do
    local key = prefix .. id
    local f = redis.call('HMGET', key, 'status', 'wake_at', 'lease_owner', 'lease_until', 'cancel_requested')
    if not f[1] or terminal(f[1]) or f[2] == ZERO or (f[1] == 'queued' and f[5] ~= '1') then
      redis.call('ZREM', due, id)
    elseif f[2] <= now and (f[3] == '' or f[4] < now) then
      redis.call('HSET', key, 'lease_owner', ARGV[1], 'lease_until', ARGV[4], 'poke_at', ZERO)
      redis.call('HINCRBY', key, 'claims', 1)
      reindex_due(due, key, id)
      table.insert(out, id)
      if tonumber(redis.call('ZSCORE', due, id)) <= now_us then
        offset = offset + 1
      end
      if #out == limit then
        break
      end
    else
      offset = offset + 1
    end
  end
  if #ids < batch then
    break
  end
end
return out
