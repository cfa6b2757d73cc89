-- A request of the session was seen: the time moves forward only, and every key of the
-- session lives on. Nothing for an unknown session.
-- KEYS: record, holder, log, meta. ARGV: time (fixed-width digits), key ttl (ms).
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local current = redis.call('HGET', KEYS[1], 'active')
if not current or ARGV[1] > current then
  redis.call('HSET', KEYS[1], 'active', ARGV[1])
end
for i = 1, 4 do
  redis.call('PEXPIRE', KEYS[i], ARGV[2])
end
return 1
