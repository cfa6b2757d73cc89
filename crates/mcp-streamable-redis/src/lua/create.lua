-- A session's record, kept by a session store used without a cluster.
-- KEYS: the session, its record. ARGV: the record ("<owner length> <owner><initialize>"),
-- active (fixed-width digits), version ('' for none), key ttl (ms).
local key, record = KEYS[1], KEYS[2]
redis.call('DEL', key)
redis.call('SET', record, ARGV[1], 'PX', ARGV[4])
redis.call('HSET', key, 'active', ARGV[2])
if ARGV[3] ~= '' then redis.call('HSET', key, 'ver', ARGV[3]) end
redis.call('PEXPIRE', key, ARGV[4])
return 1
