-- Whether a stream got its last message: 0 open, 1 finished, -1 unknown.
-- KEYS: log, meta. ARGV: stream.
if redis.call('EXISTS', KEYS[2]) == 0 then return -1 end
if redis.call('HEXISTS', KEYS[2], 'l:' .. ARGV[1]) == 1 then return 0 end
for _, entry in ipairs(redis.call('XRANGE', KEYS[1], '-', '+')) do
  if entry[2][2] == ARGV[1] then return 1 end
end
return -1
