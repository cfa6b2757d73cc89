-- The holder lets go of a session that goes on (it shuts down): the record stays, held by
-- nobody, and the next node to need it takes it over at once.
-- KEYS: the session. ARGV: node, incarnation, generation.
local h = redis.call('HMGET', KEYS[1], 'node', 'inc', 'gen')
if h[1] ~= ARGV[1] or h[2] ~= ARGV[2] or h[3] ~= ARGV[3] then return 0 end
redis.call('HDEL', KEYS[1], 'node', 'inc')
return 1
