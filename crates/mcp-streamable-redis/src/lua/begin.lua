-- A stream begins for some requests, before they are delivered: the fence is checked, the
-- stream recorded with its requests among the open streams (for a node taking the session
-- over to answer), the forward that carried them remembered under a key of its own for a while
-- (sent again, it begins nothing), the session touched. Two commands, most of the time.
-- KEYS: the session, the record, and the forward's key when there is one.
-- ARGV: node, incarnation, generation, stream, requests (JSON), forward id ('' for none),
-- active (fixed-width digits), now (ms), key ttl (ms), how long a forward is remembered (ms).
-- Returns {0} begun; {1, stream} when the forward began that stream before; -1 when the fence
-- is not the holding. (The open streams' format is write.lua's.)
local key = KEYS[1]
local h = redis.call('HMGET', key, 'node', 'inc', 'gen', 'active', 'st', 'hi', 'seq', 'exp')
if h[1] ~= ARGV[1] or h[2] ~= ARGV[2] or h[3] ~= ARGV[3] then return -1 end
local stream, forward = ARGV[4], ARGV[6]
if forward ~= '' then
  local first = redis.call('GET', KEYS[3])
  if first then return {1, tonumber(first)} end
  redis.call('SET', KEYS[3], stream, 'PX', ARGV[10])
else
  forward = '-'
end
-- Ranked by the session's sequence, which its events share.
local rank = (tonumber(h[7]) or 0) + 1
local entry = stream .. ' 0 0 0 0 ' .. rank .. ' ' .. forward .. ' ' .. ARGV[5]
local st = h[5]
if st and st ~= '' then st = st .. '\n' .. entry else st = entry end
local fields = {'st', st, 'seq', rank}
if not h[6] or tonumber(stream) > tonumber(h[6]) then
  fields[#fields + 1] = 'hi'
  fields[#fields + 1] = stream
end
if not h[4] or ARGV[7] > h[4] then
  fields[#fields + 1] = 'active'
  fields[#fields + 1] = ARGV[7]
end
-- The keys' lifetime is renewed an eighth of it at a time, to a ninth more than asked.
local now, ttl = tonumber(ARGV[8]), tonumber(ARGV[9])
if not h[8] or now - tonumber(h[8]) >= ttl / 8 then
  fields[#fields + 1] = 'exp'
  fields[#fields + 1] = now
  redis.call('PEXPIRE', key, ttl + math.floor(ttl / 8))
  redis.call('PEXPIRE', KEYS[2], ttl + math.floor(ttl / 8))
end
redis.call('HSET', key, unpack(fields))
return {0}
