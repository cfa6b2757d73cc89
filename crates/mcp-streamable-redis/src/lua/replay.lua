-- The events of one stream after an index, or why there are none to give.
-- KEYS: the session, the stream. ARGV: stream, after, resume window (ms).
-- Returns {0} unknown stream, {1} unknown event, {2} purged, or {3, index, message, ...}.
local key, list = KEYS[1], KEYS[2]
local after = tonumber(ARGV[2])
local v = redis.call('HGET', key, 's:' .. ARGV[1])
if not v then
  -- Gone with its window, or never there.
  local hi = redis.call('HGET', key, 'hi')
  if hi and tonumber(ARGV[1]) <= tonumber(hi) then return {2} end
  return {0}
end
local last, evicted, finished = string.match(v, '^(%d+) (%d+) (%d+) ')
last, evicted, finished = tonumber(last), tonumber(evicted), tonumber(finished)
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if finished > 0 and finished + tonumber(ARGV[3]) <= now then return {2} end
if after > last then return {1} end
if evicted > after then return {2} end
if after == last then return {3} end
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
    local _, prefix = string.find(entry, '^%d+ %d+ ')
    local index = string.match(entry, '^%d+ (%d+) ')
    if tonumber(index) <= after then
      done = true
      break
    end
    newest_first[#newest_first + 1] = index
    newest_first[#newest_first + 1] = string.sub(entry, prefix + 1)
  end
  stop, chunk = start - 1, chunk * 2
end
local out = {3}
for k = #newest_first - 1, 1, -2 do
  out[#out + 1] = newest_first[k]
  out[#out + 1] = newest_first[k + 1]
end
return out
