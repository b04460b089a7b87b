-- KEYS: code
-- ARGV: grant ID
-- Marks the code used by the grant and answers {'OK', its fields…}. A code used before
-- answers {'USED', its fields…} and is deleted, so that the grant of its first exchange
-- can no longer be stored (create_grant checks the code).
if redis.call('EXISTS', KEYS[1]) == 0 then
  return fail('GR_NOTFOUND')
end
local status = 'OK'
if redis.call('HGET', KEYS[1], 'grant_id') ~= '' then
  status = 'USED'
else
  redis.call('HSET', KEYS[1], 'grant_id', ARGV[1])
end
local reply = redis.call('HGETALL', KEYS[1])
table.insert(reply, 1, status)
if status == 'USED' then
  redis.call('DEL', KEYS[1])
end
return reply
