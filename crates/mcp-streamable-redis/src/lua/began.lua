-- A stream began for some requests: it is open, and remembers them and its rank.
-- KEYS: meta, holder. ARGV: stream, requests (JSON), key ttl (ms), this node (empty: no fence).
-- Returns 1, or -1 when the fence is up and this node does not hold the session.
local meta, stream = KEYS[1], ARGV[1]
if ARGV[4] ~= '' and redis.call('HGET', KEYS[2], 'node') ~= ARGV[4] then return -1 end
local seq = redis.call('HINCRBY', meta, 'seq', 1)
redis.call('HSET', meta, 'b:' .. stream, seq .. ' ' .. ARGV[2])
redis.call('HSETNX', meta, 'l:' .. stream, 0)
local hi = redis.call('HGET', meta, 'hi')
if not hi or tonumber(stream) > tonumber(hi) then
  redis.call('HSET', meta, 'hi', stream)
end
redis.call('PEXPIRE', meta, ARGV[3])
return 1
