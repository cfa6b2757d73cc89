-- A stream got its last message. A stream with events kept keeps its last index, marked
-- finished (`f:N`), so that a replay of it reads its newest events only; both go with its last
-- event (`append.lua`). A stream with none kept is forgotten now. Nothing is written for a
-- stream the session's bookkeeping does not know (a session Redis forgot stays forgotten).
-- KEYS: log, meta. ARGV: stream.
local log, meta, stream = KEYS[1], KEYS[2], ARGV[1]
redis.call('HDEL', meta, 'b:' .. stream)
if redis.call('HEXISTS', meta, 'l:' .. stream) == 0 then return 0 end
-- Its newest event is near the end of the log: looked for from there, in chunks that double.
local prefix = stream .. ' '
local length = redis.call('LLEN', log)
local stop, chunk = -1, 16
while -stop <= length do
  local start = stop - chunk + 1
  for _, entry in ipairs(redis.call('LRANGE', log, start, stop)) do
    if string.sub(entry, 1, #prefix) == prefix then
      redis.call('HSET', meta, 'f:' .. stream, 1)
      return 1
    end
  end
  stop, chunk = start - 1, chunk * 2
end
redis.call('HDEL', meta, 'l:' .. stream, 'e:' .. stream)
return 0
