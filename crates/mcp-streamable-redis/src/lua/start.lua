-- A session starts: its record, held by this node as generation 0, in one step.
-- KEYS: the session, its record. ARGV: the record ("<owner length> <owner><initialize>"),
-- active (fixed-width digits), node, incarnation, key ttl (ms).
local key, record = KEYS[1], KEYS[2]
redis.call('DEL', key)
redis.call('SET', record, ARGV[1], 'PX', ARGV[5])
redis.call('HSET', key, 'active', ARGV[2], 'node', ARGV[3], 'inc', ARGV[4], 'gen', 0)
redis.call('PEXPIRE', key, ARGV[5])
return 1
