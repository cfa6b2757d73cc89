-- The events of one stream after an index, or why there are none to give.
-- KEYS: the session, the stream's list, the finished streams. ARGV: stream, after, resume
-- window (ms), now (ms). (The formats are write.lua's.)
-- Returns {0} unknown stream, {1} unknown event, {2} purged, or {3, index, message, ...}.
local key, list = KEYS[1], KEYS[2]
local after = tonumber(ARGV[2])
local last, evicted, kind, v
local open
for line in string.gmatch(redis.call('HGET', key, 'st') or '', '[^\n]+') do
  local n, a, b = string.match(line, '^(%d+) (%d+) (%d+) ')
  if n == ARGV[1] then
    open, last, evicted, kind = true, a, b, 'L'
    break
  end
end
if not open then
  v = redis.call('HGET', KEYS[3], ARGV[1])
  if not v then
    -- Gone with its window or a cap, or never there.
    local hi = redis.call('HGET', key, 'hi')
    if hi and tonumber(ARGV[1]) <= tonumber(hi) then return {2} end
    return {0}
  end
  local at
  at, last, evicted, kind = string.match(v, '^(%d+) (%d+) (%d+) %d+ %d+ (%a) ')
  if tonumber(at) + tonumber(ARGV[3]) <= tonumber(ARGV[4]) then return {2} end
end
last, evicted = tonumber(last), tonumber(evicted)
if after > last then return {1} end
if evicted > after then return {2} end
if after == last then return {3} end
local out = {3}
if kind == 'I' then
  -- Its events follow its bookkeeping, each "<index> <length> <message>".
  local pos = string.find(v, '\n', 1, true) + 1
  while pos <= #v do
    local index, length, start = string.match(v, '^(%d+) (%d+) ()', pos)
    local stop = start + tonumber(length)
    if tonumber(index) > after then
      out[#out + 1] = index
      out[#out + 1] = string.sub(v, start, stop - 1)
    end
    pos = stop
  end
  return out
end
-- Newest first, from the end back to the event at `after`, in chunks that double: a reader of a
-- live stream asks for its newest events only.
local newest_first = {}
local length = redis.call('LLEN', list)
local stop, chunk, done = -1, 16, false
while not done and -stop <= length do
  local start = stop - chunk + 1
  local entries = redis.call('LRANGE', list, start, stop)
  for k = #entries, 1, -1 do
    local entry = entries[k]
    local index, body = string.match(entry, '^%d+ (%d+) ()')
    if tonumber(index) <= after then
      done = true
      break
    end
    newest_first[#newest_first + 1] = index
    newest_first[#newest_first + 1] = string.sub(entry, body)
  end
  stop, chunk = start - 1, chunk * 2
end
-- Events after `after` were written but none is here: the list went (its window ran out by
-- Redis's clock first), and the client must not wait for them.
if #newest_first == 0 then return {2} end
for k = #newest_first - 1, 1, -2 do
  out[#out + 1] = newest_first[k]
  out[#out + 1] = newest_first[k + 1]
end
return out
