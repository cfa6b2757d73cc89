-- Appends one event to a session's log and trims the log to the session's caps, oldest first.
-- KEYS: log, meta. ARGV: stream, index, message, max events, max bytes, key ttl (ms), overhead.
local log, meta = KEYS[1], KEYS[2]
local stream, index, message = ARGV[1], ARGV[2], ARGV[3]
local max_events, max_bytes, overhead = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[7])

-- The stream is open (as in memory, appending to an unknown stream opens it) and its last
-- index is the highest appended.
local last = redis.call('HGET', meta, 'l:' .. stream)
if not last or tonumber(index) > tonumber(last) then
  redis.call('HSET', meta, 'l:' .. stream, index)
end
local hi = redis.call('HGET', meta, 'hi')
if not hi or tonumber(stream) > tonumber(hi) then
  redis.call('HSET', meta, 'hi', stream)
end

redis.call('XADD', log, '*', 's', stream, 'i', index, 'm', message)
local bytes = redis.call('HINCRBY', meta, 'bytes', #message + overhead)
local count = redis.call('XLEN', log)
while count > max_events or bytes > max_bytes do
  local oldest = redis.call('XRANGE', log, '-', '+', 'COUNT', 1)[1]
  if not oldest then break end
  local fields = oldest[2]
  local s, i, m = fields[2], fields[4], fields[6]
  -- An open stream remembers how far it was evicted: a replay from before that has a gap.
  if redis.call('HEXISTS', meta, 'l:' .. s) == 1 then
    redis.call('HSET', meta, 'e:' .. s, i)
  end
  redis.call('XDEL', log, oldest[1])
  bytes = redis.call('HINCRBY', meta, 'bytes', -(#m + overhead))
  count = count - 1
end
redis.call('PEXPIRE', log, ARGV[6])
redis.call('PEXPIRE', meta, ARGV[6])
return count
