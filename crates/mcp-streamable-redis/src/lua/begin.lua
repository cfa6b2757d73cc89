-- A stream begins for some requests, before they are delivered: the fence is checked, the
-- requests recorded (for a node taking the session over to answer), the forward that carried
-- them remembered (sent again, it begins nothing), the session touched.
-- KEYS: the session, the stream, the record. ARGV: node, incarnation, generation, stream, requests (JSON),
-- forward id ('' for none), time (fixed-width digits), key ttl (ms).
-- Returns {0} begun; {1, stream} when the forward began that stream before; -1 when the fence is
-- not the holding.
local key = KEYS[1]
local h = redis.call('HMGET', key, 'node', 'inc', 'gen', 'active', 'st', 'hi')
if h[1] ~= ARGV[1] or h[2] ~= ARGV[2] or h[3] ~= ARGV[3] then return -1 end
local stream, forward = ARGV[4], ARGV[6]
if forward ~= '' then
  local first = redis.call('HGET', key, 'f:' .. forward)
  if first then return {1, tonumber(first)} end
  redis.call('HSET', key, 'f:' .. forward, stream, 'w:' .. stream, forward)
end
-- Ranked by the session's sequence, which its events share.
local rank = redis.call('HINCRBY', key, 'seq', 1)
-- s:N is "<last index> <evicted through> <finished at ms, 0 while open> <bytes kept> <events kept>"
redis.call('HSET', key, 's:' .. stream, '0 0 0 0 0', 'r:' .. stream, rank .. ' ' .. ARGV[5],
  'st', ((h[5] or '') .. ' ' .. stream))
if not h[6] or tonumber(stream) > tonumber(h[6]) then redis.call('HSET', key, 'hi', stream) end
if not h[4] or ARGV[7] > h[4] then redis.call('HSET', key, 'active', ARGV[7]) end
redis.call('PEXPIRE', key, ARGV[8])
redis.call('PEXPIRE', KEYS[3], ARGV[8])
return {0}
