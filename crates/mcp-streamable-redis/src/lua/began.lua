-- A stream began for some requests: it is open, and remembers them and its rank.
-- KEYS: meta. ARGV: stream, requests (JSON), key ttl (ms).
local meta, stream = KEYS[1], ARGV[1]
local seq = redis.call('HINCRBY', meta, 'seq', 1)
redis.call('HSET', meta, 'b:' .. stream, seq .. ' ' .. ARGV[2])
redis.call('HSETNX', meta, 'l:' .. stream, 0)
local hi = redis.call('HGET', meta, 'hi')
if not hi or tonumber(stream) > tonumber(hi) then
  redis.call('HSET', meta, 'hi', stream)
end
redis.call('PEXPIRE', meta, ARGV[3])
return 1
