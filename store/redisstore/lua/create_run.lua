-- KEYS: 1 run, 2 created index, 3 workflow index, 4 status index, 5 due, 6 catalog version,
--       [key record, scope expiries, scope locks, scope creations,] [start hook, start run's hooks]
-- ARGV: 1 id, 2 sort key, 3 hook run id ('' without a start token), 4 hook created_at,
--       5 hook member, 6 the catalog version the run was resolved at ('' unchecked),
--       7 n: how many key arguments follow (0 without a key), then the key's
--       8 record prefix, 9 now, 10 now score, 11 key, 12 limit, 13 evict (1/0), 14 ttl ms,
--       15 expires score, 16 created score, field, value, … (its kept answer); then the
--       run's field, value, …
-- Returns {'claimed'} when everything was written; a live key's {'existing', …} or a full
-- scope's {'limit', …} (as claim_key), or an error for a catalog that moved since ARGV[6]
-- or a token owned by another run, with nothing written. A run admitted already ended
-- claims no token (it is only checked) and makes its parent due, as save_run's end does.
if ARGV[6] ~= '' and (redis.call('GET', KEYS[6]) or '0') ~= ARGV[6] then
  return fail('GR_STALE')
end
local n = tonumber(ARGV[7])
local hookk = 7
local reply, victims
if n > 0 then
  hookk = 11
  reply, victims = key_check(ARGV[8], KEYS[8], KEYS[9], KEYS[10], ARGV[9], ARGV[10], ARGV[11], tonumber(ARGV[12]), ARGV[13])
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
  key_put(ARGV[8], KEYS[8], KEYS[9], KEYS[10], ARGV[11], victims, tonumber(ARGV[14]), ARGV[15], ARGV[16], nil,
    {unpack(ARGV, 17, 7 + n)})
end
redis.call('HSET', KEYS[1], unpack(ARGV, 8 + n))
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
