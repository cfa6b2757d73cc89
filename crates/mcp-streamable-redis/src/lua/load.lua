-- A session's record: {record ("<owner length> <owner><initialize>"), active, version}, or
-- {} for an unknown session.
-- KEYS: the session, its record.
local record = redis.call('GET', KEYS[2])
if not record then return {} end
local h = redis.call('HMGET', KEYS[1], 'active', 'ver')
return {record, h[1] or false, h[2] or false}
