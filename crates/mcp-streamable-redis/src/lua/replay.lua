-- The events of one stream after an index, or why there are none to give.
-- KEYS: log, meta. ARGV: stream, after.
-- Returns {0} unknown stream, {1} unknown event, {2} purged, or {3, index, message, ...}.
local log, meta = KEYS[1], KEYS[2]
local stream, after = ARGV[1], tonumber(ARGV[2])

local hi = redis.call('HGET', meta, 'hi')
if not hi then return {0} end
local last = redis.call('HGET', meta, 'l:' .. stream)
if not last and tonumber(stream) > tonumber(hi) then return {0} end

local prefix = stream .. ' '
-- The index and message of `entry` if it is of this stream.
local function parse(entry)
  if string.sub(entry, 1, #prefix) ~= prefix then return nil end
  local space = string.find(entry, ' ', #prefix + 1, true)
  return string.sub(entry, #prefix + 1, space - 1), string.sub(entry, space + 1)
end

if last then
  -- A stream whose last index is known (open, or finished with events kept): a follower reads
  -- it at every write, so only its newest events are read, from the end of the log back to its
  -- event at `after`, in chunks that double, and no further than the `last - after` events it
  -- can have after `after`.
  last = tonumber(last)
  if after > last then return {1} end
  local evicted = redis.call('HGET', meta, 'e:' .. stream)
  if evicted and tonumber(evicted) > after then return {2} end
  if after == last then return {3} end
  local wanted = last - after
  local newest_first = {}
  local length = redis.call('LLEN', log)
  local stop, chunk, done = -1, 16, false
  while not done and -stop <= length do
    local start = stop - chunk + 1
    local entries = redis.call('LRANGE', log, start, stop)
    for k = #entries, 1, -1 do
      local index, message = parse(entries[k])
      if index then
        if tonumber(index) <= after then
          done = true
          break
        end
        newest_first[#newest_first + 1] = index
        newest_first[#newest_first + 1] = message
        if #newest_first / 2 >= wanted then
          done = true
          break
        end
      end
    end
    stop, chunk = start - 1, chunk * 2
  end
  local out = {3}
  for k = #newest_first - 1, 1, -2 do
    out[#out + 1] = newest_first[k]
    out[#out + 1] = newest_first[k + 1]
  end
  return out
end

-- A finished stream whose bookkeeping went with its last kept event (or that never had one):
-- the whole log, bounded by the session's caps. Indices grow by one, so the first kept tells whether any after `after` is gone; with
-- nothing kept, it all went.
local out = {3}
local first, final
for _, entry in ipairs(redis.call('LRANGE', log, 0, -1)) do
  local index, message = parse(entry)
  if index then
    local i = tonumber(index)
    first = first or i
    final = i
    if i > after then
      out[#out + 1] = index
      out[#out + 1] = message
    end
  end
end
if not first then return {2} end
if first > after + 1 then return {2} end
if after > final then return {1} end
return out
