-- Whether a stream got its last message: 0 open, 1 finished, -1 unknown.
-- KEYS: log, meta. ARGV: stream.
if redis.call('EXISTS', KEYS[2]) == 0 then return -1 end
if redis.call('HEXISTS', KEYS[2], 'f:' .. ARGV[1]) == 1 then return 1 end
if redis.call('HEXISTS', KEYS[2], 'l:' .. ARGV[1]) == 1 then return 0 end
-- A finished stream whose bookkeeping went with its last event: found in the log, if at all.
local prefix = ARGV[1] .. ' '
for _, entry in ipairs(redis.call('LRANGE', KEYS[1], 0, -1)) do
  if string.sub(entry, 1, #prefix) == prefix then return 1 end
end
return -1
