-- The initialize result settled the session's version. Nothing for an unknown session.
-- KEYS: the session. ARGV: node, incarnation, generation ('' for no fence), version.
-- Returns 1; 0 for an unknown session without a fence; -1 when the fence is not the holding.
local h = redis.call('HMGET', KEYS[1], 'node', 'inc', 'gen', 'active')
if ARGV[1] ~= '' and (h[1] ~= ARGV[1] or h[2] ~= ARGV[2] or h[3] ~= ARGV[3]) then return -1 end
if not h[4] then return 0 end
redis.call('HSET', KEYS[1], 'ver', ARGV[4])
return 1
