-- KEYS: 1 run, 2 created index, 3 workflow index, 4 status index, 5 due,
--       [key record, scope expiries, scope locks, scope creations,] [start hook, start run's hooks]
-- ARGV: 1 id, 2 sort key, 3 hook run id ('' without a start token), 4 hook created_at,
--       5 hook member, 6 n: how many key arguments follow (0 without a key), then the key's
--       7 record prefix, 8 now, 9 now score, 10 key, 11 limit, 12 evict (1/0), 13 ttl ms,
--       14 expires score, 15 created score, field, value, … (its kept answer); then the
--       run's field, value, …
-- Returns {'claimed'} when everything was written; a live key's {'existing', …} or a full
-- scope's {'limit', …} (as claim_key), or an error for a token owned by another run, with
-- nothing written. A run admitted already ended claims no token (it is only checked) and
-- makes its parent due, as save_run's end does.
local n = tonumber(ARGV[6])
local hookk = 6
local reply, victims
if n > 0 then
  hookk = 10
  reply, victims = key_check(ARGV[7], KEYS[7], KEYS[8], KEYS[9], ARGV[8], ARGV[9], ARGV[10], tonumber(ARGV[11]), ARGV[12])
  if reply then
    return reply
  end
end
if redis.call('EXISTS', KEYS[1]) == 1 then
  return fail('GR_CONFLICT', 'run exists')
end
local start = ARGV[3] ~= ''
if start then
  local owner = redis.call('HGET', KEYS[hookk], 'run_id')
  if owner and owner ~= ARGV[3] then
    return fail('GR_TOKEN', owner)
  end
end
if n > 0 then
  key_put(ARGV[7], KEYS[7], KEYS[8], KEYS[9], ARGV[10], victims, tonumber(ARGV[13]), ARGV[14], ARGV[15], nil,
    {unpack(ARGV, 16, 6 + n)})
end
redis.call('HSET', KEYS[1], unpack(ARGV, 7 + n))
for i = 2, 4 do
  redis.call('ZADD', KEYS[i], 0, ARGV[2])
end
reindex_due(KEYS[5], KEYS[1], ARGV[1])
local f = redis.call('HMGET', KEYS[1], 'status', 'parent_run_id', 'finished_at')
if not terminal(f[1]) then
  if start then
    claim_token(KEYS[hookk], KEYS[hookk + 1], ARGV[3], ARGV[4], ARGV[5])
  end
elseif f[2] ~= '' then
  local prefix = string.sub(KEYS[1], 1, #KEYS[1] - #ARGV[1])
  wake(KEYS[5], prefix .. f[2], f[2], f[3])
end
return {'claimed'}
