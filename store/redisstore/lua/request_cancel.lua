-- KEYS: run, due
-- ARGV: id, now
-- Returns the run as it stands after the request.
local refused = not_open(KEYS[1])
if refused then
  return refused
end
redis.call('HSET', KEYS[1], 'cancel_requested', '1')
wake(KEYS[2], KEYS[1], ARGV[1], ARGV[2])
local _, flat = hash(KEYS[1])
return flat
