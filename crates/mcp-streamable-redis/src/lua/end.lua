-- A session ended: its record, its streams, open and finished, and the forwards they
-- remember go, if the holding that ends it is the record's.
-- KEYS: the session, its record, the finished streams, their queue. ARGV: node, incarnation,
-- generation ('' for no fence: a store used without a cluster). (The formats are write.lua's;
-- a forward whose stream went before, with the window or a cap, goes with its own expiry.)
local key, finished, queue = KEYS[1], KEYS[3], KEYS[4]
local h = redis.call('HMGET', key, 'node', 'inc', 'gen', 'st')
if ARGV[1] ~= '' and (h[1] ~= ARGV[1] or h[2] ~= ARGV[2] or h[3] ~= ARGV[3]) then return 0 end
-- A stream's list, if it has one, and the forward it remembers, if any.
local function drop(stream, list, forward)
  if list then redis.call('DEL', key .. ':' .. stream) end
  if forward and forward ~= '-' then redis.call('DEL', key .. ':w:' .. forward) end
end
for line in string.gmatch(h[4] or '', '[^\n]+') do
  local stream, events, forward = string.match(line, '^(%d+) %d+ %d+ %d+ (%d+) %d+ (%S+)')
  if stream then drop(stream, events ~= '0', forward) end
end
for _, entry in ipairs(redis.call('LRANGE', queue, 0, -1)) do
  local stream, kind = string.match(entry, '^(%d+) %d+ %d+ %d+ (%a)$')
  local v = redis.call('HGET', finished, stream)
  drop(stream, kind == 'L', string.match(v or '', '^%d+ %d+ %d+ %d+ %d+ %a (%S+)'))
end
redis.call('DEL', key, KEYS[2], finished, queue)
return 1
