-- The events of one stream after an index, or why there are none to give.
-- KEYS: log, meta. ARGV: stream, after.
-- Returns {0} unknown stream, {1} unknown event, {2} purged, or {3, index, message, ...}.
local log, meta = KEYS[1], KEYS[2]
local stream, after = ARGV[1], tonumber(ARGV[2])

local hi = redis.call('HGET', meta, 'hi')
if not hi then return {0} end
local last = redis.call('HGET', meta, 'l:' .. stream)
if not last and tonumber(stream) > tonumber(hi) then return {0} end

-- A rare request (a reconnection), against a log bounded by the session's caps.
local out = {3}
local first, final
for _, entry in ipairs(redis.call('XRANGE', log, '-', '+')) do
  local fields = entry[2]
  if fields[2] == stream then
    local i = tonumber(fields[4])
    first = first or i
    final = i
    if i > after then
      out[#out + 1] = fields[4]
      out[#out + 1] = fields[6]
    end
  end
end

if last then
  if after > tonumber(last) then return {1} end
  local evicted = redis.call('HGET', meta, 'e:' .. stream)
  if evicted and tonumber(evicted) > after then return {2} end
  return out
end
-- A finished stream: indices grow by one, so the first kept tells whether any after `after`
-- is gone; with nothing kept, it all went.
if not first then return {2} end
if first > after + 1 then return {2} end
if after > final then return {1} end
return out
