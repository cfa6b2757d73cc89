-- Takes a session over, if its record still names the holder it was read with (a node whose
-- lease lapsed, or none: handed over): a compare-and-swap, one winner per generation.
-- KEYS: the session, its record. ARGV: the holder read (node, incarnation, generation; node '' when it was
-- handed over), this node, its incarnation, key ttl (ms).
-- Returns the new generation; -1 when the record changed since it was read; -2 when it is gone.
local key = KEYS[1]
local h = redis.call('HMGET', key, 'node', 'inc', 'gen')
if not h[3] then return -2 end
if ARGV[1] == '' then
  if h[1] or h[3] ~= ARGV[3] then return -1 end
elseif h[1] ~= ARGV[1] or h[2] ~= ARGV[2] or h[3] ~= ARGV[3] then
  return -1
end
local generation = tonumber(h[3]) + 1
redis.call('HSET', key, 'node', ARGV[4], 'inc', ARGV[5], 'gen', generation)
redis.call('PEXPIRE', key, ARGV[6])
redis.call('PEXPIRE', KEYS[2], ARGV[6])
return generation
