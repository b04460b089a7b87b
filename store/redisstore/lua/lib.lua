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
