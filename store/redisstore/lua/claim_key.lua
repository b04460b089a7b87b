-- KEYS: record, then the scope's indexes: expiries, locks, creations, abandoned claims
-- ARGV: 1 now, 2 now score, 3 key, 4 fingerprint, 5 locked_until, 6 locked score,
--       7 expires_at, 8 expires score, 9 limit, 10 evict (1/0), 11 record prefix, 12 ttl ms,
--       13 method, 14 path
-- Returns {'claimed', entries read}, {'existing', field, value, …} or {'limit', oldest
-- expires_at, entries read} (the entries of the scope's indexes the check read).
local ix = {KEYS[2], KEYS[3], KEYS[4], KEYS[5]}
local reply, victims, seen = key_check(ARGV[11], ix, ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[9]), ARGV[10])
if reply then
  return reply
end
key_put(ARGV[11], ix, ARGV[3], victims, tonumber(ARGV[12]), ARGV[8], ARGV[2], ARGV[6],
  {'key', ARGV[3], 'fingerprint', ARGV[4], 'method', ARGV[13], 'path', ARGV[14], 'state', 'in_progress',
   'status', 0, 'created_at', ARGV[1], 'locked_until', ARGV[5], 'expires_at', ARGV[7]})
return {'claimed', seen}
