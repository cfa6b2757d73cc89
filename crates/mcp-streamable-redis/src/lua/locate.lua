-- Who holds a session; if its holder's lease lapsed, this node takes it over, in one step.
-- KEYS: record, holder. ARGV: this node, node liveness key prefix, key ttl (ms).
-- Returns {0} unknown, {1} here, {2, node} elsewhere, {3, generation} taken over.
-- (The liveness key is read by name: on Redis Cluster it must share the session's slot.)
if redis.call('EXISTS', KEYS[1]) == 0 then return {0} end
local node = redis.call('HGET', KEYS[2], 'node')
if node == ARGV[1] then return {1} end
if node and redis.call('EXISTS', ARGV[2] .. node) == 1 then return {2, node} end
-- The generations live in the record, so that none is handed out twice while it does.
local generation = redis.call('HINCRBY', KEYS[1], 'generations', 1)
redis.call('HSET', KEYS[2], 'node', ARGV[1], 'gen', generation)
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return {3, generation}
