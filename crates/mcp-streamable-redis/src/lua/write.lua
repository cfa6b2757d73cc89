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
-- (The fence's fields last, read only for a fenced write.)
local h
if ARGV[1] == '' then
  h = redis.call('HMGET', key, 'st', 'hi', 'seq', 'bytes', 'count', 'fbytes', 'fcount', 'fhead',
    'exp', 'fexp')
else
  h = redis.call('HMGET', key, 'st', 'hi', 'seq', 'bytes', 'count', 'fbytes', 'fcount', 'fhead',
    'exp', 'fexp', 'node', 'inc', 'gen')
  if h[11] ~= ARGV[1] or h[12] ~= ARGV[2] or h[13] ~= ARGV[3] then return -1 end
end
-- (Lua turns strings into numbers and back with the C library's strtod and printf, dearer
-- than most commands' work: what is only copied stays a string; a number is read once, by
-- arithmetic (which parses once, where tonumber parses twice), and written with '%d'; the
-- numbers nodes write, without leading zeros, are compared by their length first.)
local find, match, sub, fmt = string.find, string.match, string.sub, string.format
local overhead, now, at_now = ARGV[8] + 0, ARGV[9] + 0, ARGV[9]
-- What the open streams keep in their lists, and what the finished ones do, their
-- bookkeeping included; when the oldest finished stream finished.
local bytes, count, fbytes, fcount = h[4] or 0, h[5] or 0, h[6] or 0, h[7] or 0
bytes, count = bytes == '0' and 0 or bytes + 0, count == '0' and 0 or count + 0
fbytes, fcount = fbytes == '0' and 0 or fbytes + 0, fcount == '0' and 0 or fcount + 0
local fhead, fhead_text = h[8], nil
fhead = fhead and fhead ~= '' and fhead + 0 or nil
local seq, hi, bytes_changed, finished_changed

-- The open streams, in the order they opened, each its line of `st`. `lines` has where each
-- line starts, or once it is read (only for a stream this batch writes to) what it says:
-- {last, evicted, bytes, events, where the rest of the line starts (false: "0 -"), bytes and
-- events as written (false once changed), changed, finished, written to its list, its events
-- kept inline (false: none; one: where it is in ARGV; more: a table of them, made), their
-- bytes, whether it finishes later in the batch (0: not known yet), where its line starts
-- (false: opened now)}. Only the lines read change, in place; the streams opened now
-- (`fresh`) come last.
local st = h[1] or ''
local st_changed, fixed = not h[1], false
local lines = {}
local p, len = 1, #st
while p <= len do
  local n, e = match(st, '^(%d+) ', p), find(st, '\n', p, true)
  if (not n or lines[n] or e == len) and not fixed then
    -- A stream's line twice (a begin tried again), or a line not a stream's: the first line
    -- of each stream is kept, as it was, and nothing else.
    local kept, seen = {}, {}
    for line in string.gmatch(st, '[^\n]+') do
      local s = match(line, '^(%d+) ')
      if s and not seen[s] then
        seen[s] = true
        kept[#kept + 1] = line
      end
    end
    st, lines, st_changed, fixed = table.concat(kept, '\n'), {}, true, true
    p, len = 1, #st
  else
    lines[n] = p
    p = e and e + 1 or len + 1
  end
end
local hit, fresh = {}, {}
local function get(s)
  local r = lines[s]
  if r then
    if type(r) == 'table' then return r end
    local after = r + #s
    if find(st, '^ 0 0 0 0 ', after) then
      -- Begun, nothing written yet (most streams a batch writes to): nothing to parse.
      r = {'0', '0', 0, 0, after + 9, '0', '0', false, false, false, false, 0, 0, r}
    else
      local a, b, c, d, q = match(st, '^ (%d+) (%d+) (%d+) (%d+) ()', after)
      r = {a, b, c == '0' and 0 or c + 0, d == '0' and 0 or d + 0, q, c, d, false, false, false,
        false, 0, 0, r}
    end
    hit[#hit + 1] = s
  else
    -- Written to before it began: opened now.
    r = {'0', '0', 0, 0, false, '0', '0', true, false, false, false, 0, 0, false}
    fresh[#fresh + 1] = s
    local top = h[2] or '0'
    if #s > #top or (#s == #top and s > top) then
      h[2], hi = s, s
    end
  end
  lines[s] = r
  return r
end
-- The later of two indices.
local function later(x, y)
  local lx, ly = #x, #y
  if lx > ly or (lx == ly and x > y) then return x end
  return y
end

local nargs, ended, window_life = #ARGV, false, nil
local i = 10
while i <= nargs do
  local op, s = ARGV[i], ARGV[i + 1]
  local r = get(s)
  if r[9] then
    -- Written to after it finished (no sender does): nothing of it changes.
    i = i + (op == 'a' and 4 or op == 'g' and 3 or 2)
  elseif op == 'a' then
    local index, message = ARGV[i + 2], ARGV[i + 3]
    local cost, last = #message + overhead, r[1]
    if #index > #last or (#index == #last and index > last) then r[1] = index end
    r[8] = true
    local ends = r[13]
    if ends == 0 and r[4] == 0 then
      -- Whether it finishes later in the batch.
      ends = false
      local j = i + 4
      while j < nargs do
        local o = ARGV[j]
        if o == 'f' and ARGV[j + 1] == s then
          ends = true
          break
        end
        j = j + (o == 'a' and 4 or o == 'g' and 3 or 2)
      end
      r[13] = ends
    end
    if ends == true and r[4] == 0 then
      -- It finishes in this batch with nothing in its list: its events are kept inline (the
      -- first as where it is in the batch).
      local kept = r[11]
      if not kept then
        r[11] = i
      else
        local event = index .. ' ' .. fmt('%d', #message) .. ' ' .. message
        if type(kept) == 'number' then
          local m = ARGV[kept + 3]
          r[11] = {ARGV[kept + 2] .. ' ' .. fmt('%d', #m) .. ' ' .. m, event}
        else
          kept[#kept + 1] = event
        end
      end
      r[12] = r[12] + cost
    else
      seq = (seq or h[3] or 0) + 1
      redis.call('RPUSH', key .. ':' .. s, fmt('%d', seq) .. ' ' .. index .. ' ' .. message)
      r[3], r[4], r[6], r[7], r[10] = r[3] + cost, r[4] + 1, false, false, true
      bytes, count, bytes_changed = bytes + cost, count + 1, true
    end
    i = i + 4
  elseif op == 'g' then
    local index = ARGV[i + 2]
    r[1], r[2], r[8] = later(index, r[1]), later(index, r[2]), true
    i = i + 3
  elseif op == 'f' then
    local kept = r[11]
    local kind, size, events = 'L', r[3], r[4]
    local forward = r[5] and match(st, '^%d+ (%S+)', r[5]) or '-'
    local head = at_now .. ' ' .. r[1] .. ' ' .. r[2] .. ' '
    local n, v
    if events > 0 then
      n = events == 1 and '1' or fmt('%d', events)
      v = head .. fmt('%d', size) .. ' ' .. n .. ' L ' .. forward
    else
      kind = 'I'
      if type(kept) == 'number' then
        local m = ARGV[kept + 3]
        size, events, n = size + r[12], 1, '1'
        v = head .. fmt('%d', size) .. ' 1 I ' .. forward .. '\n' .. ARGV[kept + 2] .. ' '
          .. fmt('%d', #m) .. ' ' .. m
      elseif kept then
        size, events = size + r[12], #kept
        n = fmt('%d', events)
        v = head .. fmt('%d', size) .. ' ' .. n .. ' I ' .. forward .. '\n' .. table.concat(kept)
      else
        n = '0'
        v = head .. fmt('%d', size) .. ' 0 I ' .. forward .. '\n'
      end
    end
    redis.call('HSET', finished, s, v)
    local entry = s .. ' ' .. at_now .. ' ' .. fmt('%d', size + overhead) .. ' ' .. n .. ' ' .. kind
    if redis.call('RPUSH', queue, entry) == 1 then
      -- A new queue (and hash; the last ones went with the window): their lifetime starts
      -- now, and nothing else finished is kept.
      h[10], fhead, fhead_text, fbytes, fcount = false, now, at_now, 0, 0
    end
    -- As long as its bookkeeping (which the window's end, not the key's, makes go first).
    if kind == 'L' then
      window_life = window_life or fmt('%d', ARGV[5] + math.floor(ARGV[5] / 8))
      redis.call('PEXPIRE', key .. ':' .. s, window_life)
      bytes_changed = true
    end
    bytes, count = bytes - r[3], count - r[4]
    fbytes, fcount = fbytes + size + overhead, fcount + events
    finished_changed, r[9], r[11], ended = true, true, false, true
    i = i + 2
  else
    i = i + 2
  end
end

-- Finished streams past the window go; over a cap, the oldest finished go first; a few looked
-- at in one command.
local max_events, max_bytes, window = ARGV[6] + 0, ARGV[7] + 0, ARGV[5] + 0
local shrink = count + fcount > max_events or bytes + fbytes > max_bytes
if shrink or (fhead and fhead + window <= now) then
  local function over(slack)
    return count + fcount > max_events - math.floor(max_events * slack)
      or bytes + fbytes > max_bytes - math.floor(max_bytes * slack)
  end
  finished_changed = true
  -- (Past the window, most writes let go of one stream: a few heads are read first.)
  local chunk = shrink and 16 or 4
  while true do
    local heads = redis.call('LRANGE', queue, 0, chunk - 1)
    local dropped = {}
    fhead, fhead_text = nil, ''
    for _, head in ipairs(heads) do
      local s, at_s, cost, events, kind = match(head, '^(%d+) (%d+) (%d+) (%d+) (%a)$')
      if not (shrink and over(1 / 16)) and at_s + window > now then
        fhead, fhead_text = at_s + 0, at_s
        break
      end
      dropped[#dropped + 1] = s
      fbytes, fcount = fbytes - cost, fcount - events
      if kind == 'L' then redis.call('DEL', key .. ':' .. s) end
    end
    if #dropped > 0 then
      redis.call('LPOP', queue, #dropped)
      redis.call('HDEL', finished, unpack(dropped))
    end
    if #heads < chunk and not fhead then
      -- None kept: nothing is counted.
      fbytes, fcount = 0, 0
      break
    end
    if fhead then break end
    chunk = 16
  end
  -- Still over a cap: the open streams' oldest events go. Each stream's oldest event (its
  -- sequence, false for none) is read once, and again only for the stream that lost it.
  if shrink and over(1 / 16) then
    local order = {}
    local function start(s)
      local r = lines[s]
      if type(r) == 'table' then return r[14] end
      return r
    end
    for s in pairs(lines) do
      if start(s) then order[#order + 1] = s end
    end
    table.sort(order, function(x, y) return start(x) < start(y) end)
    for _, s in ipairs(fresh) do order[#order + 1] = s end
    local first = {}
    local function oldest_of(s)
      local r = get(s)
      local entry = not r[9] and r[4] > 0 and redis.call('LINDEX', key .. ':' .. s, 0)
      return entry and match(entry, '^(%d+) ') + 0 or false
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
      r[3], r[4], r[6], r[7] = r[3] - cost, r[4] - 1, false, false
      bytes, count, bytes_changed = bytes - cost, count - 1, true
      first[from] = oldest_of(from)
    end
  end
end

-- The lines that changed, from the last to the first (so that where each starts holds).
if #hit > 1 then table.sort(hit, function(x, y) return lines[x][14] > lines[y][14] end) end
for k = 1, #hit do
  local s = hit[k]
  local r = lines[s]
  local at_s = r[14]
  if r[9] then
    local e = find(st, '\n', at_s, true)
    if e then
      st = sub(st, 1, at_s - 1) .. sub(st, e + 1)
    elseif at_s > 1 then
      st = sub(st, 1, at_s - 2)
    else
      st = ''
    end
    st_changed = true
  elseif r[8] then
    st = sub(st, 1, at_s - 1) .. s .. ' ' .. r[1] .. ' ' .. r[2] .. ' '
      .. (r[6] or fmt('%d', r[3])) .. ' ' .. (r[7] or fmt('%d', r[4])) .. ' ' .. sub(st, r[5])
    st_changed = true
    if r[10] then redis.call('PEXPIRE', key .. ':' .. s, ARGV[4]) end
  end
end
for k = 1, #fresh do
  local s = fresh[k]
  local r = lines[s]
  if not r[9] then
    local line = s .. ' ' .. r[1] .. ' ' .. r[2] .. ' ' .. (r[6] or fmt('%d', r[3])) .. ' '
      .. (r[7] or fmt('%d', r[4])) .. ' 0 -'
    if st == '' then st = line else st = st .. '\n' .. line end
    st_changed = true
    if r[10] then redis.call('PEXPIRE', key .. ':' .. s, ARGV[4]) end
  end
end
local set, n = {}, 0
if st_changed then set[1], set[2], n = 'st', st, 2 end
if hi then set[n + 1], set[n + 2], n = 'hi', hi, n + 2 end
if seq then set[n + 1], set[n + 2], n = 'seq', fmt('%d', seq), n + 2 end
if bytes_changed then
  set[n + 1], set[n + 2], n = 'bytes', fmt('%d', bytes > 0 and bytes or 0), n + 2
  set[n + 1], set[n + 2], n = 'count', fmt('%d', count > 0 and count or 0), n + 2
end
if finished_changed then
  set[n + 1], set[n + 2], n = 'fbytes', fmt('%d', fbytes > 0 and fbytes or 0), n + 2
  set[n + 1], set[n + 2], n = 'fcount', fmt('%d', fcount > 0 and fcount or 0), n + 2
  if fhead_text then set[n + 1], set[n + 2], n = 'fhead', fhead_text, n + 2 end
end
-- The keys' lifetime is renewed an eighth of it at a time, to a ninth more than asked.
if not h[9] or now - h[9] >= ARGV[4] / 8 then
  set[n + 1], set[n + 2], n = 'exp', at_now, n + 2
  local life = fmt('%d', ARGV[4] + math.floor(ARGV[4] / 8))
  redis.call('PEXPIRE', key, life)
  redis.call('PEXPIRE', record, life)
end
if ended and (not h[10] or now - h[10] >= window / 8) then
  -- What the finished streams keep finished by now: it is all past the window then.
  set[n + 1], set[n + 2], n = 'fexp', at_now, n + 2
  window_life = window_life or fmt('%d', window + math.floor(window / 8))
  redis.call('PEXPIRE', finished, window_life)
  redis.call('PEXPIRE', queue, window_life)
end
if n > 0 then redis.call('HSET', key, unpack(set)) end
return count + fcount
