-- A request of the session was seen: the time moves forward only, and the session's keys live
-- on (its open streams' lists too).
-- KEYS: the session, its record. ARGV: node, incarnation, generation ('' for no fence), time (fixed-width
-- digits), key ttl (ms).
-- Returns 1; 0 for an unknown session without a fence; -1 when the fence is not the holding.
-- (The open streams, `st`, are write.lua's: a line each, its number first.)
local key = KEYS[1]
local h = redis.call('HMGET', key, 'node', 'inc', 'gen', 'active', 'st')
if ARGV[1] ~= '' and (h[1] ~= ARGV[1] or h[2] ~= ARGV[2] or h[3] ~= ARGV[3]) then return -1 end
if not h[4] then return 0 end
if ARGV[4] > h[4] then redis.call('HSET', key, 'active', ARGV[4]) end
redis.call('PEXPIRE', key, ARGV[5])
redis.call('PEXPIRE', KEYS[2], ARGV[5])
for line in string.gmatch(h[5] or '', '[^\n]+') do
  local stream, events = string.match(line, '^(%d+) %d+ %d+ %d+ (%d+) ')
  if events and events ~= '0' then redis.call('PEXPIRE', key .. ':' .. stream, ARGV[5]) end
end
return 1
