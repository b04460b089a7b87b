-- KEYS: record, scope expiries, scope locks, scope creations
-- ARGV: 1 now, 2 now score, 3 key, 4 fingerprint, 5 locked_until, 6 locked score,
--       7 expires_at, 8 expires score, 9 limit, 10 evict (1/0), 11 record prefix, 12 ttl ms,
--       13 method, 14 path
-- Returns {'claimed'}, {'existing', field, value, …} or {'limit', oldest expires_at}.
local rec, exps, locks, made = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local now, prefix = ARGV[1], ARGV[11]

-- Expired keys of the scope go first; a score only says "maybe", the record decides.
for _, k in ipairs(redis.call('ZRANGEBYSCORE', exps, '-inf', ARGV[2], 'LIMIT', 0, 1000)) do
  local e = redis.call('HGET', prefix .. k, 'expires_at')
  if not e or e <= now then
    redis.call('DEL', prefix .. k)
    redis.call('ZREM', exps, k)
    redis.call('ZREM', locks, k)
    redis.call('ZREM', made, k)
  end
end

local function abandoned(k)
  local f = redis.call('HMGET', prefix .. k, 'state', 'locked_until')
  return f[1] == 'in_progress' and f[2] <= now
end

local cur, flat = hash(rec)
if cur.state and cur.expires_at > now and not abandoned(ARGV[3]) then
  local out = {'existing'}
  for _, v in ipairs(flat) do
    table.insert(out, v)
  end
  return out
end

local limit = tonumber(ARGV[9])
if limit > 0 then
  local dead, ndead = {}, 0
  for _, k in ipairs(redis.call('ZRANGEBYSCORE', locks, '-inf', ARGV[2])) do
    if abandoned(k) then
      dead[k] = true
      ndead = ndead + 1
    end
  end
  local live = redis.call('ZCARD', exps) - ndead
  if live >= limit then
    -- Walk the live keys, the first to expire first: refuse naming the oldest, or evict.
    local evict = 0
    if ARGV[10] == '1' then
      evict = live - limit + 1
    end
    -- The first ndead + max(evict, 1) keys hold enough live ones.
    for _, k in ipairs(redis.call('ZRANGE', exps, 0, ndead + math.max(evict, 1) - 1)) do
      if not dead[k] then
        if evict == 0 then
          return {'limit', redis.call('HGET', prefix .. k, 'expires_at')}
        end
        redis.call('DEL', prefix .. k)
        redis.call('ZREM', exps, k)
        redis.call('ZREM', locks, k)
        redis.call('ZREM', made, k)
        evict = evict - 1
        if evict == 0 then
          break
        end
      end
    end
  end
end

redis.call('DEL', rec)
redis.call('HSET', rec, 'key', ARGV[3], 'fingerprint', ARGV[4], 'method', ARGV[13], 'path', ARGV[14],
  'state', 'in_progress', 'status', 0, 'created_at', now, 'locked_until', ARGV[5], 'expires_at', ARGV[7])
local ttl = tonumber(ARGV[12])
redis.call('PEXPIRE', rec, ttl)
redis.call('ZADD', exps, ARGV[8], ARGV[3])
redis.call('ZADD', locks, ARGV[6], ARGV[3])
redis.call('ZADD', made, ARGV[2], ARGV[3])
for _, k in ipairs({exps, locks, made}) do
  if redis.call('PTTL', k) < ttl then
    redis.call('PEXPIRE', k, ttl)
  end
end
return {'claimed'}
