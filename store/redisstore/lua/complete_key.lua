-- KEYS: record, then the scope's indexes: expiries, locks, creations, abandoned claims
-- ARGV: 1 key, 2 expires score, 3 ttl ms, 4 created score, 5 record prefix, 6 field, value, …
-- Written even if the claim was purged meanwhile, so the answer still replays.
key_put(ARGV[5], {KEYS[2], KEYS[3], KEYS[4], KEYS[5]}, ARGV[1], {}, tonumber(ARGV[3]), ARGV[2], ARGV[4], nil,
  {unpack(ARGV, 6)})
return 'OK'
