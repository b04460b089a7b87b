-- KEYS: run, due
-- ARGV: id, time
-- A finished run is left alone.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return fail('GR_NOTFOUND')
end
return wake(KEYS[2], KEYS[1], ARGV[1], ARGV[2])
