-- KEYS: hook, run's hooks
-- ARGV: run id, created_at, hook member
local owner = claim_token(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3])
if owner then
  return fail('GR_TOKEN', owner)
end
return 'OK'
