-- The initialize result settled the session's version. Nothing for an unknown session.
-- KEYS: record. ARGV: version.
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'version', ARGV[1])
return 1
