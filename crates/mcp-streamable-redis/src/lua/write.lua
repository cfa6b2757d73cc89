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
local key, record, finished, queue = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local h = redis.call('HMGET', key, 'node', 'inc', 'gen', 'st', 'hi', 'seq', 'bytes', 'count',
  'fbytes', 'fcount', 'fhead', 'exp', 'fexp')
if ARGV[1] ~= '' and (h[1] ~= ARGV[1] or h[2] ~= ARGV[2] or h[3] ~= ARGV[3]) then return -1 end
-- (Lua turns numbers into strings and back with the C library's strtod and printf, each
-- dearer than most commands' work: what is only copied stays a string, a number is read once
-- and written with '%d', and numbers as nodes write them, without leading zeros, are
-- compared by their length first.)
local find, match, sub, fmt = string.find, string.match, string.sub, string.format
local overhead, now, at_now = tonumber(ARGV[8]), tonumber(ARGV[9]), ARGV[9]
local function number(v)
  if not v or v == '0' then return 0 end
  return tonumber(v) or 0
end
-- What the open streams keep in their lists, and what the finished ones do, their
-- bookkeeping included; when the oldest finished stream finished.
local bytes, count = number(h[7]), number(h[8])
local fbytes, fcount = number(h[9]), number(h[10])
local fhead, fhead_text = tonumber(h[11]), nil
local seq, hi, bytes_changed, finished_changed

-- The open streams, in the order they opened, each its line of `st`, found by where it
-- starts (`at`). Lines are read in full only for the streams this batch writes to, `open`:
-- {last, evicted, bytes, events, where the rest of the line starts (nil: "0 -"), bytes and
-- events as written (nil once changed), changed, finished}. Lines of the streams written to
-- change in place, the others are kept as they are; streams opened now (`fresh`) come last.
local st = h[4] or ''
local st_changed = not h[4]
local at = {}
local function index()
  local p, len = 1, #st
  while p <= len do
    local n, e = match(st, '^(%d+) ', p), find(st, '\n', p, true)
    if not n or at[n] or e == len then return false end
    at[n] = p
    if not e then break end
    p = e + 1
  end
  return true
end
if not index() then
  -- A line twice (a begin tried again): the first of each stream's is kept, as they were.
  local lines, seen = {}, {}
  for line in string.gmatch(st, '[^\n]+') do
    local n = match(line, '^(%d+) ')
    if n and not seen[n] then
      seen[n] = true
      lines[#lines + 1] = line
    end
  end
  st, at, st_changed = table.concat(lines, '\n'), {}, true
  index()
end
local open, hit, fresh = {}, {}, {}
local function get(s)
  local r = open[s]
  if r then return r end
  local p = at[s]
  if p then
    local a, b, c, d, q = match(st, '^%d+ (%d+) (%d+) (%d+) (%d+) ()', p)
    r = {a, b, number(c), number(d), q, c, d, false, false}
    hit[#hit + 1] = s
  else
    -- Written to before it began: opened now.
    r = {'0', '0', 0, 0, nil, '0', '0', true, false}
    fresh[#fresh + 1] = s
    if tonumber(s) > (tonumber(h[5]) or 0) then
      h[5], hi = s, s
    end
  end
  open[s] = r
  return r
end
local function later(x, y)
  local lx, ly = #x, #y
  if lx > ly or (lx == ly and x > y) then return x end
  return y
end
local function text(n)
  if n < 10 and n >= 0 then return sub('0123456789', n + 1, n + 1) end
  return fmt('%d', n)
end
-- The streams that finish in this batch.
local ending = {}
for i = 10, #ARGV - 1 do
  if ARGV[i] == 'f' then ending[ARGV[i + 1]] = true end
end

-- The events of streams that end in this batch with nothing in their list: kept inline.
local inline = {}
local touched, ended = {}, false
local window_life
local i = 10
while i <= #ARGV do
  local op, s = ARGV[i], ARGV[i + 1]
  local r = get(s)
  if r[9] then
    -- Written to after it finished (no sender does): nothing of it changes.
    i = i + (op == 'a' and 4 or op == 'g' and 3 or 2)
  elseif op == 'a' then
    local index, message = ARGV[i + 2], ARGV[i + 3]
    local cost = #message + overhead
    r[1], r[8] = later(index, r[1]), true
    if r[4] == 0 and ending[s] then
      local kept = inline[s]
      if not kept then
        kept = {bytes = 0}
        inline[s] = kept
      end
      kept[#kept + 1] = index .. ' ' .. fmt('%d', #message) .. ' ' .. message
      kept.bytes = kept.bytes + cost
    else
      seq = (seq or tonumber(h[6]) or 0) + 1
      redis.call('RPUSH', key .. ':' .. s, fmt('%d', seq) .. ' ' .. index .. ' ' .. message)
      r[3], r[4], r[6], r[7] = r[3] + cost, r[4] + 1, nil, nil
      bytes, count, bytes_changed = bytes + cost, count + 1, true
      touched[s] = true
    end
    i = i + 4
  elseif op == 'g' then
    local index = ARGV[i + 2]
    r[1], r[2], r[8] = later(index, r[1]), later(index, r[2]), true
    i = i + 3
  elseif op == 'f' then
    local kept = inline[s]
    local kind, size, events, body = 'L', r[3], r[4], ''
    if events == 0 then
      kind, body = 'I', '\n'
      if kept then
        size, events = size + kept.bytes, #kept
        body = #kept == 1 and '\n' .. kept[1] or '\n' .. table.concat(kept)
      end
    end
    local forward = r[5] and match(st, '^%d+ (%S+)', r[5]) or '-'
    local n = text(events)
    redis.call('HSET', finished, s, at_now .. ' ' .. r[1] .. ' ' .. r[2] .. ' ' .. fmt('%d', size)
      .. ' ' .. n .. ' ' .. kind .. ' ' .. forward .. body)
    local entry = s .. ' ' .. at_now .. ' ' .. fmt('%d', size + overhead) .. ' ' .. n .. ' ' .. kind
    if redis.call('RPUSH', queue, entry) == 1 then
      -- A new queue (and hash; the last ones went with the window): their lifetime starts
      -- now, and nothing else finished is kept.
      h[13], fhead, fhead_text, fbytes, fcount = false, now, at_now, 0, 0
    end
    -- As long as its bookkeeping (which the window's end, not the key's, makes go first).
    if kind == 'L' then
      local window = tonumber(ARGV[5])
      window_life = window_life or fmt('%d', window + math.floor(window / 8))
      redis.call('PEXPIRE', key .. ':' .. s, window_life)
      bytes_changed = true
    end
    bytes, count = bytes - r[3], count - r[4]
    fbytes, fcount = fbytes + size + overhead, fcount + events
    finished_changed, r[9], inline[s], ended = true, true, nil, true
    i = i + 2
  else
    i = i + 2
  end
end

-- Finished streams past the window go; over a cap, the oldest finished go first; a few looked
-- at in one command.
local max_events, max_bytes = tonumber(ARGV[6]), tonumber(ARGV[7])
local window = tonumber(ARGV[5])
local shrink = count + fcount > max_events or bytes + fbytes > max_bytes
if shrink or (fhead and fhead + window <= now) then
  local function over(slack)
    return count + fcount > max_events - math.floor(max_events * slack)
      or bytes + fbytes > max_bytes - math.floor(max_bytes * slack)
  end
  finished_changed = true
  while true do
    local heads = redis.call('LRANGE', queue, 0, 15)
    local dropped = {}
    fhead, fhead_text = nil, ''
    for _, head in ipairs(heads) do
      local s, at, cost, events, kind = match(head, '^(%d+) (%d+) (%d+) (%d+) (%a)$')
      if not (shrink and over(1 / 16)) and tonumber(at) + window > now then
        fhead, fhead_text = tonumber(at), at
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
  if shrink and over(1 / 16) then
    local order = {}
    for s in pairs(at) do order[#order + 1] = s end
    table.sort(order, function(x, y) return at[x] < at[y] end)
    for _, s in ipairs(fresh) do order[#order + 1] = s end
    local first = {}
    local function oldest_of(s)
      local r = get(s)
      local entry = not r[9] and r[4] > 0 and redis.call('LINDEX', key .. ':' .. s, 0)
      return entry and tonumber(match(entry, '^(%d+) ')) or false
    end
    while over(1 / 16) do
      local oldest, from
      for _, s in ipairs(order) do
        if first[s] == nil then first[s] = oldest_of(s) end
        local q = first[s]
        if q and (not oldest or q < oldest) then oldest, from = q, s end
      end
      if not from then break end
      local entry = redis.call('LPOP', key .. ':' .. from)
      local index, body = match(entry, '^%d+ (%d+) ()')
      local r = get(from)
      local cost = #entry - body + 1 + overhead
      r[2], r[8] = later(index, r[2]), true
      r[3], r[4], r[6], r[7] = r[3] - cost, r[4] - 1, nil, nil
      bytes, count, bytes_changed = bytes - cost, count - 1, true
      first[from] = oldest_of(from)
    end
  end
end

-- The lines that changed, from the last to the first (so that where each starts holds).
if #hit > 1 then table.sort(hit, function(x, y) return at[x] > at[y] end) end
for k = 1, #hit do
  local s = hit[k]
  local r, p = open[s], at[s]
  if r[9] then
    local e = find(st, '\n', p, true)
    if e then
      st = sub(st, 1, p - 1) .. sub(st, e + 1)
    elseif p > 1 then
      st = sub(st, 1, p - 2)
    else
      st = ''
    end
    st_changed = true
  elseif r[8] then
    st = sub(st, 1, p - 1) .. s .. ' ' .. r[1] .. ' ' .. r[2] .. ' ' .. (r[6] or fmt('%d', r[3]))
      .. ' ' .. (r[7] or fmt('%d', r[4])) .. ' ' .. sub(st, r[5])
    st_changed = true
  end
  if touched[s] and not r[9] then redis.call('PEXPIRE', key .. ':' .. s, ARGV[4]) end
end
for k = 1, #fresh do
  local s = fresh[k]
  local r = open[s]
  if not r[9] then
    local line = s .. ' ' .. r[1] .. ' ' .. r[2] .. ' ' .. (r[6] or fmt('%d', r[3])) .. ' '
      .. (r[7] or fmt('%d', r[4])) .. ' 0 -'
    if st == '' then st = line else st = st .. '\n' .. line end
    st_changed = true
    if touched[s] then redis.call('PEXPIRE', key .. ':' .. s, ARGV[4]) end
  end
end
local set, n = {}, 0
if st_changed then set[1], set[2], n = 'st', st, 2 end
if hi then set[n + 1], set[n + 2], n = 'hi', hi, n + 2 end
if seq then set[n + 1], set[n + 2], n = 'seq', fmt('%d', seq), n + 2 end
if bytes_changed then
  set[n + 1], set[n + 2], n = 'bytes', fmt('%d', math.max(bytes, 0)), n + 2
  set[n + 1], set[n + 2], n = 'count', fmt('%d', math.max(count, 0)), n + 2
end
if finished_changed then
  set[n + 1], set[n + 2], n = 'fbytes', fmt('%d', math.max(fbytes, 0)), n + 2
  set[n + 1], set[n + 2], n = 'fcount', fmt('%d', math.max(fcount, 0)), n + 2
  if fhead_text then set[n + 1], set[n + 2], n = 'fhead', fhead_text, n + 2 end
end
-- The keys' lifetime is renewed an eighth of it at a time, to a ninth more than asked.
local ttl = tonumber(ARGV[4])
if not h[12] or now - tonumber(h[12]) >= ttl / 8 then
  set[n + 1], set[n + 2], n = 'exp', at_now, n + 2
  local life = fmt('%d', ttl + math.floor(ttl / 8))
  redis.call('PEXPIRE', key, life)
  redis.call('PEXPIRE', record, life)
end
if ended and (not h[13] or now - tonumber(h[13]) >= window / 8) then
  -- What the finished streams keep finished by now: it is all past the window then.
  set[n + 1], set[n + 2], n = 'fexp', at_now, n + 2
  window_life = window_life or fmt('%d', window + math.floor(window / 8))
  redis.call('PEXPIRE', finished, window_life)
  redis.call('PEXPIRE', queue, window_life)
end
if n > 0 then redis.call('HSET', key, unpack(set)) end
return count + fcount
