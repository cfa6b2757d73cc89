-- A session ended: its record and its streams go, if the holding that ends it is the record's.
-- KEYS: the session. ARGV: node, incarnation, generation ('' for no fence: a store used
-- without a cluster).
local key = KEYS[1]
local h = redis.call('HMGET', key, 'node', 'inc', 'gen', 'st')
if ARGV[1] ~= '' and (h[1] ~= ARGV[1] or h[2] ~= ARGV[2] or h[3] ~= ARGV[3]) then return 0 end
for stream in string.gmatch(h[4] or '', '%d+') do
  redis.call('DEL', key .. ':' .. stream)
end
redis.call('DEL', key, key .. ':r')
return 1
