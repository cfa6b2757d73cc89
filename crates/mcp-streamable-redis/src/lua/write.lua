-- Writes a session's events, a batch in the order of its sends, and keeps the session within
-- its caps: four commands for most batches, whatever the session keeps.
-- The open streams' bookkeeping is one field of the session's hash, `st`, each open stream's
-- events a list. A stream that finishes moves to the finished streams, kept for the resume
-- window: its bookkeeping in a hash of their own (with its events, when they all came in the
-- batch that finished it: most requests' streams), its place in a queue of them in the order
-- they finished. Over a cap, finished streams go first, whole, the oldest finished first, then
-- the open streams' oldest events, down to a sixteenth under the cap, so that the next writes
-- have room.
-- KEYS: the session, its record, the finished streams, their queue (a stream's list is the
-- session's key and ':N', in the same slot). ARGV: node, incarnation, generation ('' for no fence), key ttl (ms), resume
-- window (ms), max events, max bytes, overhead per event and per finished stream, now (ms),
-- then the writes: 'o' N (opened), 'a' N index message (appended), 'g' N index (a message not
-- kept: a replay from before it has a gap), 'f' N (finished).
-- Returns the events kept, or -1 when the fence is not the holding (nothing is written).
-- Formats: `st` has a line per open stream, in the order they opened, "<N> <last index>
-- <evicted through> <bytes kept> <events kept> <rank> <forward or -> <requests>"; field N of
-- the finished streams is "<finished at> <last index> <evicted through> <bytes> <events> <L: in
-- the list, I: inline> <forward or ->", then for I "\n" and each event "<index> <length>
-- <message>"; a queue entry "<N> <finished at> <cost> <events> <L|I>"; a list entry "<seq>
-- <index> <message>".
local key, record, finished, queue = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local ttl, window = tonumber(ARGV[4]), tonumber(ARGV[5])
local max_events, max_bytes, overhead = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local now = tonumber(ARGV[9])
-- (Numbers turned into strings and back cost more than most commands: what is not used as a
-- number stays a string, and only what changed is written back.)
local h = redis.call('HMGET', key, 'node', 'inc', 'gen', 'st', 'hi', 'seq', 'bytes', 'count',
  'fbytes', 'fcount', 'fhead', 'exp', 'fexp')
if ARGV[1] ~= '' and (h[1] ~= ARGV[1] or h[2] ~= ARGV[2] or h[3] ~= ARGV[3]) then return -1 end
-- What the open streams keep in their lists, and what the finished ones do, their
-- bookkeeping included; when the oldest finished stream finished.
local bytes, count = tonumber(h[7]) or 0, tonumber(h[8]) or 0
local fbytes, fcount = tonumber(h[9]) or 0, tonumber(h[10]) or 0
local fhead = tonumber(h[11])
local changed = {}

-- The open streams, in the order they opened, each its line of `st`; read in full, `open`,
-- when this batch writes to it ({last, evicted, bytes, events, "<rank> <forward> <requests>"}),
-- false once it finished.
local lines, order, open = {}, {}, {}
for line in string.gmatch(h[4] or '', '[^\n]+') do
  local n = string.match(line, '^(%d+) ')
  if n and not lines[n] then
    lines[n] = line
    order[#order + 1] = n
  end
end
local function get(s)
  local r = open[s]
  if r then return r end
  local line = lines[s]
  if line then
    local a, b, c, d, e = string.match(line, '^%d+ (%d+) (%d+) (%d+) (%d+) (.*)$')
    r = {a, b, tonumber(c), tonumber(d), e}
  else
    -- Written to before it began: opened now.
    r = {'0', '0', 0, 0, '0 -'}
    lines[s] = ''
    order[#order + 1] = s
    if tonumber(s) > (tonumber(h[5]) or 0) then
      h[5] = s
      changed.hi = s
    end
  end
  open[s] = r
  return r
end
local function later(index, last)
  if tonumber(index) > tonumber(last) then return index end
  return last
end
-- The streams that finish in this batch.
local ending = {}
for i = 10, #ARGV - 1 do
  if ARGV[i] == 'f' then ending[ARGV[i + 1]] = true end
end

-- The events of streams that end in this batch with nothing in their list: kept inline.
local inline = {}
local touched, ended = {}, false
local i = 10
while i <= #ARGV do
  local op, s = ARGV[i], ARGV[i + 1]
  local r = open[s] ~= false and get(s)
  if not r then
    -- Written to after it finished (no sender does): nothing of it changes.
    i = i + (op == 'a' and 4 or op == 'g' and 3 or 2)
  elseif op == 'a' then
    local index, message = ARGV[i + 2], ARGV[i + 3]
    local cost = #message + overhead
    r[1] = later(index, r[1])
    if ending[s] and r[4] == 0 then
      local kept = inline[s] or {n = 0, bytes = 0}
      inline[s] = kept
      kept[#kept + 1] = index .. ' ' .. #message .. ' ' .. message
      kept.n, kept.bytes = kept.n + 1, kept.bytes + cost
    else
      local seq = (tonumber(h[6]) or 0) + 1
      h[6], changed.seq = seq, seq
      redis.call('RPUSH', key .. ':' .. s, seq .. ' ' .. index .. ' ' .. message)
      r[3], r[4] = r[3] + cost, r[4] + 1
      bytes, count = bytes + cost, count + 1
      changed.bytes = true
      touched[s] = true
    end
    i = i + 4
  elseif op == 'g' then
    r[1] = later(ARGV[i + 2], r[1])
    r[2] = later(ARGV[i + 2], r[2])
    i = i + 3
  elseif op == 'f' then
    local kept = inline[s] or {n = 0, bytes = 0}
    local kind = r[4] > 0 and 'L' or 'I'
    local size, events = r[3] + kept.bytes, r[4] + kept.n
    local forward = string.match(r[5], '^%d+ (%S+)') or '-'
    local v = table.concat({ARGV[9], r[1], r[2], size, events, kind, forward}, ' ')
    if kind == 'I' then v = v .. '\n' .. table.concat(kept) end
    redis.call('HSET', finished, s, v)
    local entry = table.concat({s, ARGV[9], size + overhead, events, kind}, ' ')
    if redis.call('RPUSH', queue, entry) == 1 then
      -- A new queue (and hash; the last ones went with the window): their lifetime starts
      -- now, and nothing else finished is kept.
      h[13], fhead, fbytes, fcount = nil, now, 0, 0
      changed.fhead = true
    end
    -- As long as its bookkeeping (which the window's end, not the key's, makes go first).
    if kind == 'L' then redis.call('PEXPIRE', key .. ':' .. s, window + math.floor(window / 8)) end
    bytes, count = bytes - r[3], count - r[4]
    fbytes, fcount = fbytes + size + overhead, fcount + events
    changed.bytes = changed.bytes or r[4] > 0
    changed.fbytes = true
    open[s], touched[s], inline[s], ended = false, nil, nil, true
    i = i + 2
  else
    i = i + 2
  end
end

local function over(slack)
  return count + fcount > max_events - math.floor(max_events * slack)
    or bytes + fbytes > max_bytes - math.floor(max_bytes * slack)
end
-- Finished streams past the window go; over a cap, the oldest finished go first; a few looked
-- at in one command.
if over(0) or (fhead and fhead + window <= now) then
  local shrink = over(0)
  changed.fbytes, changed.fhead = true, true
  while true do
    local heads = redis.call('LRANGE', queue, 0, 15)
    local dropped = {}
    fhead = nil
    for _, head in ipairs(heads) do
      local s, at, cost, events, kind = string.match(head, '^(%d+) (%d+) (%d+) (%d+) (%a)$')
      if not (shrink and over(1 / 16)) and tonumber(at) + window > now then
        fhead = tonumber(at)
        break
      end
      dropped[#dropped + 1] = s
      fbytes, fcount = fbytes - tonumber(cost), fcount - tonumber(events)
      if kind == 'L' then redis.call('DEL', key .. ':' .. s) end
    end
    if #dropped > 0 then
      redis.call('LPOP', queue, #dropped)
      redis.call('HDEL', finished, unpack(dropped))
    end
    if #heads < 16 and not fhead then
      -- None kept: nothing is counted.
      fbytes, fcount = 0, 0
      break
    end
    if fhead then break end
  end
  -- Still over a cap: the open streams' oldest events go. Each stream's oldest event (its
  -- sequence, false for none) is read once, and again only for the stream that lost it.
  local first = {}
  local function oldest_of(s)
    local r = get(s)
    local entry = r[4] > 0 and redis.call('LINDEX', key .. ':' .. s, 0)
    return entry and tonumber(string.match(entry, '^(%d+) ')) or false
  end
  while shrink and over(1 / 16) do
    local oldest, at
    for _, s in ipairs(order) do
      if first[s] == nil then first[s] = open[s] ~= false and oldest_of(s) end
      local q = first[s]
      if q and (not oldest or q < oldest) then oldest, at = q, s end
    end
    if not at then break end
    local entry = redis.call('LPOP', key .. ':' .. at)
    local index, body = string.match(entry, '^%d+ (%d+) ()')
    local r = get(at)
    local cost = #entry - body + 1 + overhead
    r[2] = later(index, r[2])
    r[3], r[4] = r[3] - cost, r[4] - 1
    bytes, count = bytes - cost, count - 1
    changed.bytes = true
    first[at] = oldest_of(at)
  end
end

local still = {}
for _, s in ipairs(order) do
  local r = open[s]
  if r then
    still[#still + 1] = table.concat({s, r[1], r[2], r[3], r[4], r[5]}, ' ')
    if touched[s] then redis.call('PEXPIRE', key .. ':' .. s, ttl) end
  elseif r == nil then
    still[#still + 1] = lines[s]
  end
end
local set = {'st', table.concat(still, '\n')}
local function put(field, value)
  set[#set + 1] = field
  set[#set + 1] = value
end
if changed.hi then put('hi', changed.hi) end
if changed.seq then put('seq', changed.seq) end
if changed.bytes then
  put('bytes', math.max(bytes, 0))
  put('count', math.max(count, 0))
end
if changed.fbytes then
  put('fbytes', math.max(fbytes, 0))
  put('fcount', math.max(fcount, 0))
end
if changed.fhead then put('fhead', fhead or '') end
-- The keys' lifetime is renewed an eighth of it at a time, to a ninth more than asked.
if not h[12] or now - tonumber(h[12]) >= ttl / 8 then
  put('exp', ARGV[9])
  redis.call('PEXPIRE', key, ttl + math.floor(ttl / 8))
  redis.call('PEXPIRE', record, ttl + math.floor(ttl / 8))
end
if ended and (not h[13] or now - tonumber(h[13]) >= window / 8) then
  -- What the finished streams keep finished by now: it is all past the window then.
  put('fexp', ARGV[9])
  redis.call('PEXPIRE', finished, window + math.floor(window / 8))
  redis.call('PEXPIRE', queue, window + math.floor(window / 8))
end
redis.call('HSET', key, unpack(set))
return count + fcount
