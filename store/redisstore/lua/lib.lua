-- Shared by every script. Times are 20-digit zero-padded Unix nanosecond strings, so
-- they compare as strings; ZERO means unset. Sorted-set scores are microseconds: the
-- first 17 digits of a time.
local ZERO = '00000000000000000000'

local function us(t)
  return string.sub(t, 1, 17)
end

local function fail(word, detail)
  if detail then
    return redis.error_reply(word .. ' ' .. detail)
  end
  return redis.error_reply(word)
end

local function terminal(status)
  return status == 'completed' or status == 'failed' or status == 'cancelled'
end

-- not_open is the error reply for the run at runkey when it is missing (GR_NOTFOUND) or
-- ended (GR_FINISHED), nil while it runs or waits. A function cannot end the script (short
-- of error(), whose reply differs), so its caller returns the reply:
--   local refused = not_open(KEYS[1])
--   if refused then return refused end
local function not_open(runkey)
  local status = redis.call('HGET', runkey, 'status')
  if not status then
    return fail('GR_NOTFOUND')
  end
  if terminal(status) then
    return fail('GR_FINISHED')
  end
  return nil
end

-- reindex_due puts a run where a claim finds it: scored by its wake-up, or by its lease's
-- end while a worker holds it; out of the due set when it ended or waits on nothing timed.
-- A queued run (over its concurrency limit) is out of it until its cancel is asked.
local function reindex_due(due, runkey, id)
  local f = redis.call('HMGET', runkey, 'status', 'wake_at', 'lease_owner', 'lease_until', 'cancel_requested')
  if not f[1] or terminal(f[1]) or f[2] == ZERO or (f[1] == 'queued' and f[5] ~= '1') then
    redis.call('ZREM', due, id)
    return
  end
  local at = f[2]
  if f[3] ~= '' and f[4] > at then
    at = f[4]
  end
  redis.call('ZADD', due, us(at), id)
end

-- wake makes a non-terminal run due at t if that is sooner, and records t as a wake-up
-- asked from outside (poke_at) so the holder's next save keeps it. 1 if the run changed.
local function wake(due, runkey, id, t)
  local f = redis.call('HMGET', runkey, 'status', 'wake_at', 'poke_at')
  if not f[1] or terminal(f[1]) then
    return 0
  end
  if f[2] == ZERO or f[2] > t then
    redis.call('HSET', runkey, 'wake_at', t)
  end
  if f[3] == ZERO or f[3] > t then
    redis.call('HSET', runkey, 'poke_at', t)
  end
  reindex_due(due, runkey, id)
  return 1
end

-- promote makes the oldest queued runs of a concurrency key pending, due and started at t,
-- while fewer than each one's limit (its concurrency_limit) of the key's runs are active.
-- queue is the key's lex zset of its queued runs' sort keys, active the set of its active
-- run IDs; runprefix and statusprefix start the run hashes and status indexes.
local function promote(queue, active, runprefix, statusprefix, due, t)
  while true do
    local head = redis.call('ZRANGE', queue, 0, 0)[1]
    if not head then
      return
    end
    local id = string.sub(head, #ZERO + 2)
    local runkey = runprefix .. id
    local f = redis.call('HMGET', runkey, 'status', 'concurrency_limit')
    if f[1] == 'queued' and redis.call('SCARD', active) >= tonumber(f[2]) then
      return
    end
    redis.call('ZREM', queue, head)
    if f[1] == 'queued' then
      redis.call('SADD', active, id)
      redis.call('HSET', runkey, 'status', 'pending', 'wake_at', t, 'started_at', t)
      redis.call('ZREM', statusprefix .. 'queued', head)
      redis.call('ZADD', statusprefix .. 'pending', 0, head)
      reindex_due(due, runkey, id)
    end
  end
end

-- bump_catalog moves the catalog version and tells every process.
local function bump_catalog(version_key, channel)
  local v = redis.call('INCR', version_key)
  redis.call('PUBLISH', channel, v)
end

-- hash reads HGETALL into a table.
local function hash(key)
  local flat = redis.call('HGETALL', key)
  local h = {}
  for i = 1, #flat, 2 do
    h[flat[i]] = flat[i + 1]
  end
  return h, flat
end

-- claim_token gives a token (its hook key) to run id unless another run owns it; it
-- returns the other owner, or nil when id owns the token now.
local function claim_token(hookkey, runhooks, id, created, member)
  local owner = redis.call('HGET', hookkey, 'run_id')
  if owner then
    if owner == id then
      return nil
    end
    return owner
  end
  redis.call('HSET', hookkey, 'run_id', id, 'created_at', created)
  redis.call('SADD', runhooks, member)
  return nil
end

-- A scope's keys are records under its prefix, indexed by four sorted sets, ix: 1 exps
-- (every stored key but the abandoned claims set apart, by expiry), 2 locks (the
-- in-progress keys of exps, by lock end), 3 made (every stored key, by creation, for
-- lists) and 4 dead (abandoned claims, by expiry, kept until they expire or are taken
-- over). Once a check at the cap has set apart the claims whose lock ran out (each once
-- in its life), a scope's live keys are exps less its expired keys, which sit below now:
-- counted with ZCARD and ZCOUNT, never read. Data written before dead existed keeps its
-- abandoned claims in exps and locks: they are set apart as any other claim whose lock
-- ran out, and counted right meanwhile.

-- KEY_BATCH bounds how many expired keys, or claims whose lock ran out, one pass over an
-- index takes; what a pass reads it frees, or moves out of the range it read.
local KEY_BATCH = 100

-- key_drop deletes a key's record and its index entries.
local function key_drop(prefix, ix, k)
  redis.call('DEL', prefix .. k)
  for i = 1, 4 do
    redis.call('ZREM', ix[i], k)
  end
end

-- key_live: whether a record's fields (state, locked_until, expires_at) make a live key
-- at now: stored, not expired, and not an abandoned claim.
local function key_live(f, now)
  return f[1] and f[3] and f[3] > now and not (f[1] == 'in_progress' and f[2] <= now)
end

-- key_reindex puts key k where its record says at now: dropped when missing or expired,
-- set apart in dead when an abandoned claim, else in exps (and locks while in progress)
-- by the record's own times.
local function key_reindex(prefix, ix, k, now)
  local rec = prefix .. k
  local f = redis.call('HMGET', rec, 'state', 'locked_until', 'expires_at')
  if not f[1] or not f[3] or f[3] <= now then
    key_drop(prefix, ix, k)
    return
  end
  if f[1] == 'in_progress' and f[2] <= now then
    redis.call('ZREM', ix[1], k)
    redis.call('ZREM', ix[2], k)
    redis.call('ZADD', ix[4], us(f[3]), k)
    local ttl = redis.call('PTTL', rec)
    if ttl > 0 and redis.call('PTTL', ix[4]) < ttl then
      redis.call('PEXPIRE', ix[4], ttl)
    end
    return
  end
  redis.call('ZREM', ix[4], k)
  redis.call('ZADD', ix[1], us(f[3]), k)
  if f[1] == 'in_progress' then
    redis.call('ZADD', ix[2], us(f[2]), k)
  else
    redis.call('ZREM', ix[2], k)
  end
end

-- key_sweep reindexes up to KEY_BATCH keys of index z scored from lo to hi; it returns how
-- many it read.
local function key_sweep(prefix, ix, z, lo, hi, now)
  local ks = redis.call('ZRANGEBYSCORE', z, lo, hi, 'LIMIT', 0, KEY_BATCH)
  for _, k in ipairs(ks) do
    key_reindex(prefix, ix, k, now)
  end
  return #ks
end

-- key_tidy purges up to a batch of a scope's expired keys and sets apart up to a batch of
-- claims whose lock ran out, the ones scored in now's own microsecond first (only their
-- records tell); it returns how many entries it read.
local function key_tidy(prefix, ix, now, now_score)
  local below = '(' .. now_score
  local seen = 0
  for _, p in ipairs({{ix[1], now_score, now_score}, {ix[1], '-inf', below}, {ix[4], '-inf', below},
                      {ix[2], now_score, now_score}, {ix[2], '-inf', below}}) do
    seen = seen + key_sweep(prefix, ix, p[1], p[2], p[3], now)
  end
  return seen
end

-- key_check purges expired keys and sets abandoned claims apart, a batch of each, and
-- reports how key stands, writing nothing else: the reply {'existing', field, value, …}
-- for a live key, {'limit', oldest expires_at, entries read} for a full scope, or nil, the
-- keys to evict (evict '1') before key may be taken, and the index entries it read. At
-- the cap it reads a constant number of entries besides those it frees or sets apart.
local function key_check(prefix, ix, now, now_score, key, limit, evict)
  local seen = key_tidy(prefix, ix, now, now_score)
  local cur, flat = hash(prefix .. key)
  if key_live({cur.state, cur.locked_until, cur.expires_at}, now) then
    local out = {'existing'}
    for _, v in ipairs(flat) do
      table.insert(out, v)
    end
    return out, {}, seen
  end
  local victims = {}
  if limit <= 0 then
    return nil, victims, seen
  end
  local exps, below = ix[1], '(' .. now_score
  local function stored()
    return redis.call('ZCARD', exps) - redis.call('ZCOUNT', exps, '-inf', below)
  end
  -- Expired keys still below now are not counted; abandoned claims only lower the count.
  if stored() < limit then
    return nil, victims, seen
  end
  -- At the cap every abandoned claim is set apart, each once in its life, so that exps
  -- from now on holds only live keys.
  local n
  repeat
    n = key_sweep(prefix, ix, ix[2], '-inf', below, now)
    seen = seen + n
  until n < KEY_BATCH
  local live = stored()
  -- Walk the live keys, the first to expire first: refuse naming the oldest, or evict. An
  -- entry whose record is not live (gone with its TTL) is reindexed and not counted.
  local at = 0
  while live >= limit do
    local want = 1
    if evict == '1' then
      want = live - limit + 1 - #victims
    end
    if want <= 0 then
      break
    end
    local ks = redis.call('ZRANGEBYSCORE', exps, now_score, '+inf', 'LIMIT', at, want)
    if #ks == 0 then
      break
    end
    for _, k in ipairs(ks) do
      seen = seen + 1
      local f = redis.call('HMGET', prefix .. k, 'state', 'locked_until', 'expires_at')
      if not key_live(f, now) then
        key_reindex(prefix, ix, k, now)
        live = live - 1
      elseif evict ~= '1' then
        return {'limit', f[3], seen}, victims, seen
      else
        table.insert(victims, k)
        at = at + 1
      end
    end
  end
  return nil, victims, seen
end

-- key_put writes a key's record (fields: field, value, …) over whatever it held, after
-- evicting victims, and indexes it: by expiry and creation, and by lock while lock_score
-- is set (an in-progress claim). ttl (ms) only collects garbage; the record's expiry rules.
local function key_put(prefix, ix, key, victims, ttl, exp_score, created_score, lock_score, fields)
  for _, k in ipairs(victims) do
    key_drop(prefix, ix, k)
  end
  local exps, locks, made = ix[1], ix[2], ix[3]
  local rec = prefix .. key
  redis.call('DEL', rec)
  redis.call('HSET', rec, unpack(fields))
  redis.call('PEXPIRE', rec, ttl)
  redis.call('ZREM', ix[4], key)
  redis.call('ZADD', exps, exp_score, key)
  redis.call('ZADD', made, created_score, key)
  local indexes = {exps, made}
  if lock_score then
    redis.call('ZADD', locks, lock_score, key)
    table.insert(indexes, locks)
  else
    redis.call('ZREM', locks, key)
  end
  for _, k in ipairs(indexes) do
    if redis.call('PTTL', k) < ttl then
      redis.call('PEXPIRE', k, ttl)
    end
  end
end
