-- KEYS: hook, token's queue, payload sequence, due
-- ARGV: 1 payload, 2 now, 3 hook member, 4 run key prefix, 5 payloads key prefix
-- Returns the owner's run ID. The run's payloads hash keeps seq → payload, q<seq> → the
-- hook member and t<seq> → when it was queued.
local owner = redis.call('HGET', KEYS[1], 'run_id')
if not owner then
  return fail('GR_NOTFOUND')
end
local seq = redis.call('INCR', KEYS[3])
redis.call('HSET', ARGV[5] .. owner, seq, ARGV[1], 'q' .. seq, ARGV[3], 't' .. seq, ARGV[2])
redis.call('ZADD', KEYS[2], seq, seq)
wake(KEYS[4], ARGV[4] .. owner, owner, ARGV[2])
return owner
