-- KEYS: a counter
-- ARGV: a value
-- Sets the counter to the value unless it holds more: a copy's payload sequence goes on
-- past the copied numbers.
if tonumber(redis.call('GET', KEYS[1]) or '0') < tonumber(ARGV[1]) then
  redis.call('SET', KEYS[1], ARGV[1])
end
return 'OK'
