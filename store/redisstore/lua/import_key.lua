-- KEYS: the key's scope's indexes: expiries, locks, creations, abandoned claims
-- ARGV: 1 the scope's record prefix, 2 key, 3 ttl ms, 4 expires score, 5 created score,
--       6 lock score ('' for a key not in progress), field, value, … (its record)
-- Writes a copied key's record and indexes it as a claim or an answer would (key_put).
local lock = nil
if ARGV[6] ~= '' then
  lock = ARGV[6]
end
key_put(ARGV[1], {KEYS[1], KEYS[2], KEYS[3], KEYS[4]}, ARGV[2], {}, tonumber(ARGV[3]), ARGV[4], ARGV[5], lock,
  {unpack(ARGV, 7)})
return 'OK'
