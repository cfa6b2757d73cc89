-- A stream was opened with a priming event: it is open, with nothing appended yet.
-- KEYS: meta, holder. ARGV: stream, key ttl (ms), this node (empty: no fence).
-- Returns 1, or -1 when the fence is up and this node does not hold the session.
local meta = KEYS[1]
if ARGV[3] ~= '' and redis.call('HGET', KEYS[2], 'node') ~= ARGV[3] then return -1 end
redis.call('HSETNX', meta, 'l:' .. ARGV[1], 0)
redis.call('HSETNX', meta, 'hi', 0)
redis.call('PEXPIRE', meta, ARGV[2])
return 1
