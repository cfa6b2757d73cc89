-- The streams begun and not finished, with their rank and requests.
-- KEYS: the session. Returns {stream, "<rank> <requests as JSON>", ...}.
-- (The open streams, `st`, are write.lua's: a line each, its rank, forward and requests last.)
local out = {}
for line in string.gmatch(redis.call('HGET', KEYS[1], 'st') or '', '[^\n]+') do
  local stream, rank, requests = string.match(line, '^(%d+) %d+ %d+ %d+ %d+ (%d+) %S+ (.+)$')
  if requests then
    out[#out + 1] = stream
    out[#out + 1] = rank .. ' ' .. requests
  end
end
return out
