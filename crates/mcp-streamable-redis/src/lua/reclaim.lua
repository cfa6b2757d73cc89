-- A node back from a lapsed lease, as a new incarnation, claims a session its earlier one held,
-- if nobody took it over meanwhile: the generation stays.
-- KEYS: the session. ARGV: node, earlier incarnation, generation, new incarnation.
-- Returns 1 when claimed, 0 when the record names another holding.
local h = redis.call('HMGET', KEYS[1], 'node', 'inc', 'gen')
if h[1] ~= ARGV[1] or h[2] ~= ARGV[2] or h[3] ~= ARGV[3] then return 0 end
redis.call('HSET', KEYS[1], 'inc', ARGV[4])
return 1
