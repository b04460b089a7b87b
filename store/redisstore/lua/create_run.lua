-- KEYS: 1 run, 2 created index, 3 workflow index, 4 status index, 5 due, 6 catalog version,
--       [7 key record, 8 scope expiries, 9 scope locks, 10 scope creations, 11 scope's
--       abandoned claims,]
--       [start hook, start run's hooks]
--       [the run's concurrency key's queue, its active set, the queued status index]
-- ARGV: 1 id, 2 sort key, 3 hook run id ('' without a start token), 4 hook created_at,
--       5 hook member, 6 the catalog version the run was resolved at ('' unchecked),
--       7 the run's due score ('' not due), 8 ended (1/0), 9 the parent to wake ('' none),
--       10 its wake-up (the run's finish), 11 n: how many key arguments follow (0 without a
--       key), then the key's 12 record prefix, 13 now, 14 now score, 15 key, 16 limit,
--       17 evict (1/0), 18 ttl ms, 19 expires score, 20 created score, field, value, … (its
--       kept answer); then the run's field, value, …
-- Returns {'claimed', queued (1/0), entries read} when everything was written; a live key's
-- {'existing', …} or a full scope's {'limit', …} (as claim_key), or an error for a
-- catalog that moved since ARGV[6] or a token owned by another run, with nothing written.
-- The key is checked before the catalog, as the SQLite store does: a retry whose key is
-- live gets the key's answer, whatever the catalog did since. A run admitted already ended
-- claims no token (it is only checked) and makes its parent due, as save_run's end does.
-- The caller derives the due score and the parent from the run, as reindex_due would.
-- A run with a concurrency key (the last keys) is admitted as it is while fewer than its
-- concurrency_limit runs of the key are active and none is queued, else queued, not due.
local n = tonumber(ARGV[11])
local hookk = 7
local reply, victims, ix, seen
if n > 0 then
  hookk = 12
  ix = {KEYS[8], KEYS[9], KEYS[10], KEYS[11]}
  reply, victims, seen = key_check(ARGV[12], ix, ARGV[13], ARGV[14], ARGV[15], tonumber(ARGV[16]), ARGV[17])
  if reply then
    return reply
  end
end
if ARGV[6] ~= '' and (redis.call('GET', KEYS[6]) or '0') ~= ARGV[6] then
  return fail('GR_STALE')
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
  key_put(ARGV[12], ix, ARGV[15], victims, tonumber(ARGV[18]), ARGV[19], ARGV[20], nil,
    {unpack(ARGV, 21, 11 + n)})
end
redis.call('HSET', KEYS[1], unpack(ARGV, 12 + n))
for i = 2, 4 do
  redis.call('ZADD', KEYS[i], 0, ARGV[2])
end
if ARGV[7] ~= '' then
  redis.call('ZADD', KEYS[5], ARGV[7], ARGV[1])
end
if ARGV[8] ~= '1' then
  if start then
    claim_token(KEYS[hookk], KEYS[hookk + 1], ARGV[3], ARGV[4], ARGV[5])
  end
elseif ARGV[9] ~= '' then
  local prefix = string.sub(KEYS[1], 1, #KEYS[1] - #ARGV[1])
  wake(KEYS[5], prefix .. ARGV[9], ARGV[9], ARGV[10])
end
local queued = 0
local qk = hookk
if start then
  qk = hookk + 2
end
if ARGV[8] ~= '1' and KEYS[qk] then
  local queue, active = KEYS[qk], KEYS[qk + 1]
  local limit = tonumber(redis.call('HGET', KEYS[1], 'concurrency_limit'))
  if redis.call('SCARD', active) < limit and redis.call('ZCARD', queue) == 0 then
    redis.call('SADD', active, ARGV[1])
  else
    redis.call('HSET', KEYS[1], 'status', 'queued', 'wake_at', ZERO)
    redis.call('HDEL', KEYS[1], 'started_at')
    redis.call('ZREM', KEYS[4], ARGV[2])
    redis.call('ZADD', KEYS[qk + 2], 0, ARGV[2])
    redis.call('ZREM', KEYS[5], ARGV[1])
    redis.call('ZADD', queue, 0, ARGV[2])
    local runprefix = string.sub(KEYS[1], 1, #KEYS[1] - #ARGV[1])
    local statusprefix = string.sub(KEYS[qk + 2], 1, #KEYS[qk + 2] - #'queued')
    promote(queue, active, runprefix, statusprefix, KEYS[5], redis.call('HGET', KEYS[1], 'created_at'))
    if redis.call('HGET', KEYS[1], 'status') == 'queued' then
      queued = 1
    end
  end
end
return {'claimed', queued, seen or 0}
