-- Charges one request to a client's rate-limit buckets, all or none: GCRA, each bucket the
-- theoretical arrival time (TAT, microseconds on Redis's clock) of its next request, so that
-- every node charges against one clock.
-- KEYS: the buckets (one client's: one hash tag, one slot). ARGV: per bucket, its interval
-- (us), burst and cost.
-- Returns 0 when charged; else how long (us) until the request would fit, nothing charged.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local next, wait = {}, 0
for i, key in ipairs(KEYS) do
  local interval = tonumber(ARGV[i * 3 - 2])
  local burst, cost = tonumber(ARGV[i * 3 - 1]), tonumber(ARGV[i * 3])
  local tat = math.max(tonumber(redis.call('GET', key)) or now, now)
  local at = tat + interval * cost
  local over = at - (now + interval * burst)
  if over > 0 then
    wait = math.max(wait, over)
  else
    next[i] = at
  end
end
if wait > 0 then return wait end
for i, key in ipairs(KEYS) do
  -- Kept until it has refilled: then it is the same as none.
  redis.call('SET', key, string.format('%d', next[i]), 'PX', math.ceil((next[i] - now) / 1000) + 1)
end
return 0
