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

-- reindex_due puts a run where a claim finds it: scored by its wake-up, or by its lease's
-- end while a worker holds it; out of the due set when it ended or waits on nothing timed.
local function reindex_due(due, runkey, id)
  local f = redis.call('HMGET', runkey, 'status', 'wake_at', 'lease_owner', 'lease_until')
  if not f[1] or terminal(f[1]) or f[2] == ZERO then
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

-- key_drop deletes a key's record and its index entries.
local function key_drop(prefix, exps, locks, made, k)
  redis.call('DEL', prefix .. k)
  redis.call('ZREM', exps, k)
  redis.call('ZREM', locks, k)
  redis.call('ZREM', made, k)
end

-- key_check purges a scope's expired keys and reports how key stands, writing nothing
-- else: the reply {'existing', field, value, …} for a live key, {'limit', oldest
-- expires_at} for a full scope, or nil and the keys to evict (evict '1') before key may be
-- taken. Keys are records under prefix; exps, locks and made index them by expiry, lock
-- and creation.
local function key_check(prefix, exps, locks, made, now, now_score, key, limit, evict)
  -- Expired keys of the scope go first; a score only says "maybe", the record decides.
  for _, k in ipairs(redis.call('ZRANGEBYSCORE', exps, '-inf', now_score, 'LIMIT', 0, 1000)) do
    local e = redis.call('HGET', prefix .. k, 'expires_at')
    if not e or e <= now then
      key_drop(prefix, exps, locks, made, k)
    end
  end
  local function abandoned(k)
    local f = redis.call('HMGET', prefix .. k, 'state', 'locked_until')
    return f[1] == 'in_progress' and f[2] <= now
  end
  local cur, flat = hash(prefix .. key)
  if cur.state and cur.expires_at > now and not abandoned(key) then
    local out = {'existing'}
    for _, v in ipairs(flat) do
      table.insert(out, v)
    end
    return out, {}
  end
  local victims = {}
  if limit <= 0 then
    return nil, victims
  end
  local dead, ndead = {}, 0
  for _, k in ipairs(redis.call('ZRANGEBYSCORE', locks, '-inf', now_score)) do
    if abandoned(k) then
      dead[k] = true
      ndead = ndead + 1
    end
  end
  local live = redis.call('ZCARD', exps) - ndead
  if live < limit then
    return nil, victims
  end
  -- Walk the live keys, the first to expire first: refuse naming the oldest, or evict.
  local n = 0
  if evict == '1' then
    n = live - limit + 1
  end
  -- The first ndead + max(n, 1) keys hold enough live ones.
  for _, k in ipairs(redis.call('ZRANGE', exps, 0, ndead + math.max(n, 1) - 1)) do
    if not dead[k] then
      if n == 0 then
        return {'limit', redis.call('HGET', prefix .. k, 'expires_at')}, victims
      end
      table.insert(victims, k)
      if #victims == n then
        break
      end
    end
  end
  return nil, victims
end

-- key_put writes a key's record (fields: field, value, …) over whatever it held, after
-- evicting victims, and indexes it: by expiry and creation, and by lock while lock_score
-- is set (an in-progress claim). ttl (ms) only collects garbage; the record's expiry rules.
local function key_put(prefix, exps, locks, made, key, victims, ttl, exp_score, created_score, lock_score, fields)
  for _, k in ipairs(victims) do
    key_drop(prefix, exps, locks, made, k)
  end
  local rec = prefix .. key
  redis.call('DEL', rec)
  redis.call('HSET', rec, unpack(fields))
  redis.call('PEXPIRE', rec, ttl)
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
