-- The nodes' membership: each node's incarnation, address and lease, by Redis's clock; and
-- since when renewals have come without a break (a gap of a whole lease with none means the
-- records restarted, failed over or were out of reach: nobody takes a session over until the
-- live nodes had a lease to renew).
-- KEYS: the members, the marker of continuity, the shared secret. ARGV: 'register' | 'renew' |
-- 'leave' | 'read', node, incarnation, address, lease (ms), the node's shared secret ('' when
-- the nodes were given theirs): a node registering keeps it there, should Redis have lost it.
-- Returns {ok, now (ms), renewals since (ms, -1 if none), node, "<incarnation> <address>
-- <expires ms>", ...}; ok is 0 when a renewal found the node's lease lapsed.
local members, up = KEYS[1], KEYS[2]
local mode, node, inc, lease = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[5])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ok = 1
if mode == 'register' then
  redis.call('HSET', members, node, inc .. ' ' .. ARGV[4] .. ' ' .. (now + lease))
  if ARGV[6] ~= '' then redis.call('SET', KEYS[3], ARGV[6], 'NX') end
  -- Members gone for a minute are forgotten.
  local all = redis.call('HGETALL', members)
  for k = 1, #all, 2 do
    local expires = tonumber(string.match(all[k + 1], ' (%d+)$'))
    if expires and expires + 60000 < now then redis.call('HDEL', members, all[k]) end
  end
elseif mode == 'renew' then
  local current = redis.call('HGET', members, node)
  local cinc, address, expires
  if current then cinc, address, expires = string.match(current, '^(%S+) (%S+) (%d+)$') end
  if cinc == inc and tonumber(expires) >= now then
    redis.call('HSET', members, node, inc .. ' ' .. address .. ' ' .. (now + lease))
  else
    ok = 0
  end
elseif mode == 'leave' then
  local current = redis.call('HGET', members, node)
  if current and string.match(current, '^(%S+) ') == inc then redis.call('HDEL', members, node) end
end
if mode == 'register' or (mode == 'renew' and ok == 1) then
  if redis.call('EXISTS', up) == 1 then
    redis.call('PEXPIRE', up, lease)
  else
    redis.call('SET', up, now, 'PX', lease)
  end
end
local out = {ok, now, tonumber(redis.call('GET', up)) or -1}
local all = redis.call('HGETALL', members)
for k = 1, #all do out[#out + 1] = all[k] end
return out
