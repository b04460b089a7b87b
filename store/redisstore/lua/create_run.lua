-- KEYS: run, created index, workflow index, status index, due [, start hook, start run's hooks]
-- ARGV: 1 id, 2 sort key, 3 wake_at, 4 status, 5 hook run id, 6 hook created_at,
--       7 hook member, 8 field, value, …
-- Nothing is written when the start token is owned by another run.
if redis.call('EXISTS', KEYS[1]) == 1 then
  return fail('GR_CONFLICT', 'run exists')
end
if #KEYS == 7 then
  local owner = redis.call('HGET', KEYS[6], 'run_id')
  if owner and owner ~= ARGV[5] then
    return fail('GR_TOKEN', owner)
  end
end
redis.call('HSET', KEYS[1], unpack(ARGV, 8))
for i = 2, 4 do
  redis.call('ZADD', KEYS[i], 0, ARGV[2])
end
reindex_due(KEYS[5], KEYS[1], ARGV[1])
if #KEYS == 7 then
  claim_token(KEYS[6], KEYS[7], ARGV[5], ARGV[6], ARGV[7])
end
return 'OK'
