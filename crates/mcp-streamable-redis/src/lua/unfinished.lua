-- The streams begun and not finished, with their rank and requests.
-- KEYS: the session. Returns {stream, "<rank> <requests as JSON>", ...}.
local key = KEYS[1]
local out = {}
for stream in string.gmatch(redis.call('HGET', key, 'st') or '', '%d+') do
  local r = redis.call('HGET', key, 'r:' .. stream)
  if r then
    out[#out + 1] = stream
    out[#out + 1] = r
  end
end
return out
