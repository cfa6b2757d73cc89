-- Writes a session's events, a batch in the order of its sends, and keeps the session within
-- its caps, the oldest events going first, across its streams. Finished streams are kept for
-- the resume window: their lists expire by themselves, and their bookkeeping goes at the next
-- write after that.
-- KEYS: the session, its record, then the streams written (same slot). ARGV: node, incarnation, generation
-- ('' for no fence), key ttl (ms), resume window (ms), max events, max bytes, overhead per
-- event, then the writes: 'o' N (opened), 'a' N index message (appended), 'g' N index (a
-- message not kept: a replay from before it has a gap), 'f' N (finished).
-- Returns the events kept, or -1 when the fence is not the holding (nothing is written).
-- A stream's bookkeeping, s:N, is "<last index> <evicted through> <finished at ms, 0 while
-- open> <bytes kept> <events kept>"; its events, the list KEYS[1]..':'..N, "<seq> <index> <message>".
local key = KEYS[1]
local h = redis.call('HMGET', key, 'node', 'inc', 'gen', 'st', 'hi', 'seq', 'bytes', 'count')
if ARGV[1] ~= '' and (h[1] ~= ARGV[1] or h[2] ~= ARGV[2] or h[3] ~= ARGV[3]) then return -1 end
local ttl, window = tonumber(ARGV[4]), tonumber(ARGV[5])
local max_events, max_bytes, overhead = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local seq, bytes, count = tonumber(h[6]) or 0, tonumber(h[7]) or 0, tonumber(h[8]) or 0
local hi = tonumber(h[5]) or 0

local streams, order = {}, {}
for s in string.gmatch(h[4] or '', '%d+') do
  if streams[s] == nil then
    streams[s] = false
    order[#order + 1] = s
  end
end
-- A stream's bookkeeping, read once.
local function get(s)
  local r = streams[s]
  if r then return r end
  local v = redis.call('HGET', key, 's:' .. s)
  if v then
    local a, b, c, d, e = string.match(v, '^(%d+) (%d+) (%d+) (%d+) (%d+)$')
    r = {tonumber(a), tonumber(b), tonumber(c), tonumber(d), tonumber(e)}
    streams[s] = r
  end
  return r
end
-- Writing to a stream the bookkeeping does not know opens it.
local function open(s)
  local r = get(s)
  if r then return r end
  r = {0, 0, 0, 0, 0}
  if streams[s] == nil then order[#order + 1] = s end
  streams[s] = r
  if tonumber(s) > hi then hi = tonumber(s) end
  return r
end

local touched = {}
local i = 9
while i <= #ARGV do
  local op, s = ARGV[i], ARGV[i + 1]
  local r = open(s)
  if op == 'a' then
    local index, message = tonumber(ARGV[i + 2]), ARGV[i + 3]
    seq = seq + 1
    redis.call('RPUSH', key .. ':' .. s, seq .. ' ' .. ARGV[i + 2] .. ' ' .. message)
    if index > r[1] then r[1] = index end
    local cost = #message + overhead
    r[4], r[5] = r[4] + cost, r[5] + 1
    bytes, count = bytes + cost, count + 1
    touched[s] = true
    i = i + 4
  elseif op == 'g' then
    local index = tonumber(ARGV[i + 2])
    if index > r[1] then r[1] = index end
    if index > r[2] then r[2] = index end
    i = i + 3
  elseif op == 'f' then
    r[3] = now
    redis.call('HDEL', key, 'r:' .. s)
    touched[s] = true
    i = i + 2
  else
    i = i + 2
  end
end

-- Finished streams past the resume window go, bookkeeping and all.
local kept = {}
for _, s in ipairs(order) do
  local r = get(s)
  if r and r[3] > 0 and r[3] + window <= now then
    bytes, count = bytes - r[4], count - r[5]
    redis.call('DEL', key .. ':' .. s)
    local forward = redis.call('HGET', key, 'w:' .. s)
    if forward then redis.call('HDEL', key, 'f:' .. forward) end
    redis.call('HDEL', key, 's:' .. s, 'r:' .. s, 'w:' .. s)
    streams[s] = false
  elseif r then
    kept[#kept + 1] = s
  end
end

-- Over a cap: the oldest event of the session goes, whichever stream it is of.
while count > 0 and (count > max_events or bytes > max_bytes) do
  local oldest, at
  for _, s in ipairs(kept) do
    local r = get(s)
    if r and r[5] > 0 then
      local head = redis.call('LINDEX', key .. ':' .. s, 0)
      if head then
        local q = tonumber(string.match(head, '^(%d+) '))
        if not oldest or q < oldest then oldest, at = q, s end
      else
        -- Its list expired with the window: nothing of it is kept.
        bytes, count = bytes - r[4], count - r[5]
        r[4], r[5] = 0, 0
      end
    end
  end
  if not at then break end
  local entry = redis.call('LPOP', key .. ':' .. at)
  local _, prefix = string.find(entry, '^%d+ %d+ ')
  local index = tonumber(string.match(entry, '^%d+ (%d+) '))
  local r = get(at)
  local cost = #entry - prefix + overhead
  r[4], r[5] = r[4] - cost, r[5] - 1
  bytes, count = bytes - cost, count - 1
  if index > r[2] then r[2] = index end
end

for _, s in ipairs(kept) do
  local r = get(s)
  redis.call('HSET', key, 's:' .. s, r[1] .. ' ' .. r[2] .. ' ' .. r[3] .. ' ' .. r[4] .. ' ' .. r[5])
  if touched[s] then
    redis.call('PEXPIRE', key .. ':' .. s, r[3] > 0 and window or ttl)
  end
end
redis.call('HSET', key, 'st', table.concat(kept, ' '), 'seq', seq, 'bytes', math.max(bytes, 0),
  'count', math.max(count, 0), 'hi', hi)
redis.call('PEXPIRE', key, ttl)
redis.call('PEXPIRE', KEYS[2], ttl)
return count
