-- KEYS: run
-- ARGV: step
-- Counts one more answer to the question of the hook step at index step that did not fit;
-- a count kept for another step starts again at 1. Returns the count.
local refused = not_open(KEYS[1])
if refused then
  return refused
end
if redis.call('HGET', KEYS[1], 'ask_step') == ARGV[1] then
  return redis.call('HINCRBY', KEYS[1], 'ask_misses', 1)
end
redis.call('HSET', KEYS[1], 'ask_step', ARGV[1], 'ask_misses', 1)
return 1
