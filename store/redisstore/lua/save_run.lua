-- KEYS: run, due, run's payloads, run's hooks
-- ARGV: 1 id, 2 owner, 3 status, 4 output, 5 error, 6 every step written (1/0), 7 waiting_on,
--       8 started_at, 9 finished_at, 10 wake_at, 11 cancel (1/0), 12 payload seq to consume
--       (0: none), 13 end time, 14 status index prefix, 15 hook prefix, 16 queue prefix,
--       17 run prefix, 18 attempt start only (1/0), 19 most undelivered payloads kept,
--       20… step field, value, …
-- Returns OK, or for a run it ends that left payloads queued, what it kept of them (the
-- 'undelivered' field).
-- A run stored before steps had a field each keeps them in 'steps' until a save writes them
-- all: a partial save of such a run fails with GR_ALLSTEPS.

-- undelivered is the JSON of storecodec's undeliveredRow for the payloads still in the
-- run's payloads hash (seq -> payload, 'q'..seq -> hook member "env:token", 't'..seq -> when
-- it was queued), the oldest max of them; nil when there are none.
local function undelivered(payloads, max)
  local all = redis.call('HGETALL', payloads)
  local seqs, body, member = {}, {}, {}
  for i = 1, #all, 2 do
    local field, value = all[i], all[i + 1]
    local kind = string.sub(field, 1, 1)
    if kind == 'q' then
      member[string.sub(field, 2)] = value
    elseif kind ~= 't' then
      seqs[#seqs + 1] = tonumber(field)
      body[field] = value
    end
  end
  if #seqs == 0 then
    return nil
  end
  table.sort(seqs)
  local n = math.min(#seqs, max)
  local parts = {}
  for i = 1, n do
    local seq = tostring(seqs[i])
    local m = member[seq] or ''
    local token = string.sub(m, (string.find(m, ':', 1, true) or 0) + 1)
    parts[i] = '{"token":' .. cjson.encode(token) .. ',"payload":' .. body[seq] .. '}'
  end
  return '{"payloads":[' .. table.concat(parts, ',') .. '],"omitted":' .. (#seqs - n) .. '}'
end

local id = ARGV[1]
local f = redis.call('HMGET', KEYS[1], 'lease_owner', 'poke_at', 'status', 'sort_key', 'parent_run_id')
if not f[1] or f[1] ~= ARGV[2] then
  return fail('GR_LEASELOST')
end
if ARGV[6] ~= '1' and redis.call('HEXISTS', KEYS[1], 'steps') == 1 then
  return fail('GR_ALLSTEPS')
end
local seq, member = ARGV[12], nil
if seq ~= '0' then
  member = redis.call('HGET', KEYS[3], 'q' .. seq)
  if not member then
    return fail('GR_NOTFOUND', 'payload ' .. seq)
  end
end

-- A wake-up asked from outside since the claim is kept.
local wake_at = ARGV[10]
if f[2] ~= ZERO and (wake_at == ZERO or f[2] < wake_at) then
  wake_at = f[2]
end
local ended = terminal(ARGV[3])
redis.call('HSET', KEYS[1], 'status', ARGV[3], 'output', ARGV[4], 'error', ARGV[5],
  'waiting_on', ARGV[7], 'started_at', ARGV[8], 'finished_at', ARGV[9], 'wake_at', wake_at)
if #ARGV >= 22 then
  redis.call('HSET', KEYS[1], unpack(ARGV, 22))
end
if ARGV[6] == '1' then
  redis.call('HDEL', KEYS[1], 'steps')
end
if ARGV[18] ~= '1' then
  redis.call('HSET', KEYS[1], 'claims', '1')
end
if ARGV[11] == '1' then
  redis.call('HSET', KEYS[1], 'cancel_requested', '1')
end
if ended then
  redis.call('HSET', KEYS[1], 'lease_owner', '', 'lease_until', ZERO)
end
if f[3] ~= ARGV[3] then
  redis.call('ZREM', ARGV[14] .. f[3], f[4])
  redis.call('ZADD', ARGV[14] .. ARGV[3], 0, f[4])
end
if member then
  redis.call('HDEL', KEYS[3], seq, 'q' .. seq, 't' .. seq)
  redis.call('ZREM', ARGV[16] .. member, seq)
end
reindex_due(KEYS[2], KEYS[1], id)
if not ended then
  return 'OK'
end

-- The run's end releases its tokens, keeps their undelivered payloads on the run (the
-- oldest ARGV[19], and how many more) and drops them from the queues, makes its parent due
-- and promotes its concurrency key's queue.
local kept = undelivered(KEYS[3], tonumber(ARGV[19]))
if kept then
  redis.call('HSET', KEYS[1], 'undelivered', kept)
end
for _, m in ipairs(redis.call('SMEMBERS', KEYS[4])) do
  if redis.call('HGET', ARGV[15] .. m, 'run_id') == id then
    redis.call('DEL', ARGV[15] .. m, ARGV[16] .. m)
  end
end
redis.call('DEL', KEYS[4], KEYS[3])
if f[5] and f[5] ~= '' then
  wake(KEYS[2], ARGV[17] .. f[5], f[5], ARGV[13])
end
-- The end frees the run's slot of its concurrency key (or takes it out of the key's queue)
-- and promotes the key's oldest queued runs.
if ARGV[20] ~= '' then
  redis.call('SREM', ARGV[21], id)
  redis.call('ZREM', ARGV[20], f[4])
  promote(ARGV[20], ARGV[21], ARGV[17], ARGV[14], KEYS[2], ARGV[13])
end
return kept or 'OK'
