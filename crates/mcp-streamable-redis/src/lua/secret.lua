-- The key the nodes sign their forwarded requests with: made by the first node, read by all.
-- KEYS: the secret. ARGV: a new random key, kept if there is none yet.
redis.call('SET', KEYS[1], ARGV[1], 'NX')
return redis.call('GET', KEYS[1])
