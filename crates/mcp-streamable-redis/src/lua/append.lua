-- Appends one event to a session's log and trims the log to the session's caps, oldest first.
-- KEYS: log, meta, holder. ARGV: stream, index, message, max events, max bytes, key ttl (ms),
-- overhead, this node (empty: no fence).
-- Returns the events kept, or -1 when the fence is up and this node does not hold the session.
-- The log is a list of "<stream> <index> <message>", oldest first: a list, not a Redis stream,
-- since Redis 7 gives each new stream 4 KiB up front, twice an idle session's budget.
local log, meta = KEYS[1], KEYS[2]
local stream, index, message = ARGV[1], ARGV[2], ARGV[3]
local max_events, max_bytes, overhead = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[7])

-- A node whose session another node took over (or that Redis forgot) writes nothing.
if ARGV[8] ~= '' and redis.call('HGET', KEYS[3], 'node') ~= ARGV[8] then return -1 end

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

local count = redis.call('RPUSH', log, stream .. ' ' .. index .. ' ' .. message)
local bytes = redis.call('HINCRBY', meta, 'bytes', #message + overhead)
while count > 0 and (count > max_events or bytes > max_bytes) do
  local oldest = redis.call('LPOP', log)
  local first = string.find(oldest, ' ', 1, true)
  local second = string.find(oldest, ' ', first + 1, true)
  local s = string.sub(oldest, 1, first - 1)
  local i = string.sub(oldest, first + 1, second - 1)
  -- A stream remembers how far it was evicted: a replay from before that has a gap. A finished
  -- stream whose last event goes is forgotten with it.
  local kept_last = redis.call('HGET', meta, 'l:' .. s)
  if kept_last and kept_last == i and redis.call('HEXISTS', meta, 'f:' .. s) == 1 then
    redis.call('HDEL', meta, 'l:' .. s, 'e:' .. s, 'f:' .. s)
  elseif kept_last then
    redis.call('HSET', meta, 'e:' .. s, i)
  end
  bytes = redis.call('HINCRBY', meta, 'bytes', -(#oldest - second + overhead))
  count = count - 1
end
redis.call('PEXPIRE', log, ARGV[6])
redis.call('PEXPIRE', meta, ARGV[6])
return count
