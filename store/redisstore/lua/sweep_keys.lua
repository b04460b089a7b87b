-- KEYS: the scope's indexes: expiries, locks, creations, abandoned claims
-- ARGV: 1 record prefix, 2 now, 3 now score
-- Purges a batch of the scope's expired keys and sets a batch of abandoned claims apart;
-- returns 1 when more remain, else 0.
local _, more = key_tidy(ARGV[1], {KEYS[1], KEYS[2], KEYS[3], KEYS[4]}, ARGV[2], ARGV[3])
if more then
  return 1
end
return 0
