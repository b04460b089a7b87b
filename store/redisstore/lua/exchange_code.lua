-- KEYS: code
-- ARGV: grant ID
-- Marks the code used by the grant; a code used before fails GR_USED, nothing changed.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return fail('GR_NOTFOUND')
end
if redis.call('HGET', KEYS[1], 'grant_id') ~= '' then
  return fail('GR_USED')
end
redis.call('HSET', KEYS[1], 'grant_id', ARGV[1])
return 'OK'
