-- KEYS: token's queue, run's payloads
-- Returns {seq, payload} of the oldest payload of the run on the token, or nil.
local seq = redis.call('ZRANGE', KEYS[1], 0, 0)[1]
if not seq then
  return nil
end
local p = redis.call('HGET', KEYS[2], seq)
if not p then
  return nil
end
return {seq, p}
