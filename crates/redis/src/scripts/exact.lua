-- The exact sliding log of one key, decided and recorded in one atomic step.
--
-- KEYS[1]  the log: a sorted set, one member per recorded hit, scored by its tick; the
--          member is the hit's sequence number (unique per key, short)
-- KEYS[2]  the key's bookkeeping: a hash with `seq` (makes members unique) and `wm` (the
--          removal watermark: every member scored at or below it has been removed)
-- ARGV     op ('check' | 'take' | 'hit' | 'status'), now ('' = the server's TIME in
--          microseconds), window, max, n, ttl_ms, lateness,
--          and for 'take' the previous lease to give back: its score, its highest
--          sequence number, how many of its members are unused (0: none), the key's
--          `born` stamp it was taken under; then, for a limit of several windows, how many
--          narrower windows it has and each one's (window, max), narrowest first ('take' is
--          for single windows only)
-- Returns  {granted, live count after, retry-after ticks, now, highest sequence number,
--          too-late flag, born stamp}, then for a limit of several windows each window's
--          {live count, retry-after ticks}, narrowest first, the widest last; the retry-after
--          at index 3 is then the longest of them (when every window has room again)
--
-- A hit scored s is live at t when s > t - window, later hits included (they already
-- happened). A call whose window reaches below the watermark (t - window < wm) is
-- refused: the members it would have to count may be gone. Removal keeps the watermark at
-- most `lateness` behind the window of the newest call, so callers up to that late are
-- answered in full.
local log, meta = KEYS[1], KEYS[2]
local op = ARGV[1]
local now
if ARGV[2] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
else
  now = tonumber(ARGV[2])
end
local window, max, n = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local ttl, lateness = ARGV[6], tonumber(ARGV[7])
-- The narrower windows of a layered limit: each admission must fit them too. The log keeps
-- the newest `max` members (the widest window's count, the largest), which hold the newest
-- members every narrower window counts.
local narrower = {}
for i = 1, tonumber(ARGV[12] or '0') do
  narrower[i] = {tonumber(ARGV[11 + 2 * i]), tonumber(ARGV[12 + 2 * i])}
end
local layered = #narrower > 0

-- Integers are exact in Lua's doubles below 2^53; print them without an exponent.
local function num(x) return string.format('%.0f', x) end

local function call_chunked(cmd, key, items)
  local i = 1
  while i <= #items do
    redis.call(cmd, key, unpack(items, i, math.min(i + 999, #items)))
    i = i + 1000
  end
end

local state = redis.call('HMGET', meta, 'wm', 'bu')
local wm = tonumber(state[1] or '-1e300')

-- Give back the unused members of the caller's previous lease (they were never used, and
-- the caller will never use them).
-- Only members of this lifetime of the key: `born`, the tick of the key's first record,
-- tells a key that expired (or a server that restarted) and started its sequence anew.
if op == 'take' and tonumber(ARGV[10]) > 0 and redis.call('HGET', meta, 'born') == ARGV[11] then
  local hi, unused = tonumber(ARGV[9]), tonumber(ARGV[10])
  local members = {}
  for i = hi - unused + 1, hi do members[#members + 1] = num(i) end
  call_chunked('ZREM', log, members)
end

local floor = now - window
local too_late = floor < wm

-- The fast refusal of a full key: `bu` (blocked until), set by the admission that filled
-- the window, is its oldest live hit + window. Until then the window stays full for every
-- caller, however late: the `max` hits from that one on stay live before `bu` and stay
-- present (a removal by rank keeps the newest `max`; one by score that reached them would
-- have raised the watermark past the caller's window). Refusing reads only the hash.
if op == 'check' and n == 1 and not layered and not too_late and state[2]
    and now < tonumber(state[2]) then
  return {0, max, tonumber(state[2]) - now, now, 0, 0, 0}
end

local live = redis.call('ZCOUNT', log, '(' .. num(floor), '+inf')

-- Ticks until `need` more hits fit: the k-th oldest live hit must leave first.
local function retry_for(need)
  local k = live + need - max
  if k <= 0 then return 0 end
  local m = redis.call('ZRANGEBYSCORE', log, '(' .. num(floor), '+inf', 'WITHSCORES', 'LIMIT', k - 1, 1)
  return tonumber(m[2]) + window - now
end

-- A layered limit's windows: each narrower window's live count and retry for `need`, and
-- the widest window's, as {live, retry} pairs; `fits` says whether `need` fits them all.
local function in_window(w, m, need)
  local lv = redis.call('ZCOUNT', log, '(' .. num(now - w), '+inf')
  local k = lv + need - m
  if k <= 0 then return lv, 0 end
  local hit = redis.call('ZRANGEBYSCORE', log, '(' .. num(now - w), '+inf', 'WITHSCORES', 'LIMIT', k - 1, 1)
  return lv, tonumber(hit[2]) + w - now
end

local function windows_for(need)
  local pairs_, fits, longest = {}, true, 0
  for i = 1, #narrower do
    local lv, retry = in_window(narrower[i][1], narrower[i][2], need)
    pairs_[#pairs_ + 1] = lv
    pairs_[#pairs_ + 1] = retry
    if lv + need > narrower[i][2] then fits = false end
    if retry > longest then longest = retry end
  end
  local retry = retry_for(need)
  pairs_[#pairs_ + 1] = live
  pairs_[#pairs_ + 1] = retry
  if live + need > max then fits = false end
  if retry > longest then longest = retry end
  return pairs_, fits, longest
end

-- A reply, with the windows' pairs of a layered limit after the seven fields.
local function reply(fields, pairs_)
  if layered then
    for i = 1, #pairs_ do fields[#fields + 1] = pairs_[i] end
  end
  return fields
end

local function record(count)
  redis.call('HSETNX', meta, 'born', num(now))
  local hi = redis.call('HINCRBY', meta, 'seq', count)
  local score = num(now)
  local items = {}
  for i = hi - count + 1, hi do
    items[#items + 1] = score
    items[#items + 1] = num(i)
  end
  call_chunked('ZADD', log, items)
  return hi
end

-- Keep the newest `max` members: a removed member has `max` newer ones beside it, so every
-- window that would count it is full anyway. Only for logs that never give back (a lease
-- log's give-back could thin those newer ones out): 'check' and 'hit', never 'take'.
local function keep_newest()
  redis.call('ZREMRANGEBYRANK', log, 0, -(max + 1))
end

local function tidy()
  -- Forget what no admissible call can count any more, and raise the watermark first.
  local cut = floor - lateness
  if cut > wm then
    redis.call('HSET', meta, 'wm', num(cut))
    redis.call('ZREMRANGEBYSCORE', log, '-inf', num(cut))
  end
  redis.call('PEXPIRE', log, ttl)
  redis.call('PEXPIRE', meta, ttl)
end

if layered then
  -- A limit of several windows: 'check' admits all or nothing against every window.
  if op == 'take' then return redis.error_reply('a lease takes a single window') end
  local windows, fits, retry = windows_for(op == 'check' and n or 1)
  if op == 'check' then
    if too_late then return reply({0, live, 0, now, 0, 1, 0}, windows) end
    if not fits then return reply({0, live, retry, now, 0, 0, 0}, windows) end
    local hi = record(n)
    keep_newest()
    tidy()
    live = live + n
    windows, fits, retry = windows_for(1)
    return reply({n, live, retry, now, hi, 0, 0}, windows)
  elseif op == 'hit' then
    if now <= wm then return reply({0, live, 0, now, 0, 1, 0}, windows) end
    local hi = record(n)
    keep_newest()
    tidy()
    live = redis.call('ZCOUNT', log, '(' .. num(floor), '+inf')
    windows, fits, retry = windows_for(1)
    return reply({n, live, 0, now, hi, 0, 0}, windows)
  else
    if too_late then return reply({0, live, 0, now, 0, 1, 0}, windows) end
    return reply({0, live, retry, now, 0, 0, 0}, windows)
  end
end

if op == 'check' or op == 'take' then
  if too_late then return {0, live, 0, now, 0, 1, 0} end
  local grant = n
  if live + n > max then
    if op == 'take' then grant = max - live else grant = 0 end
  end
  if grant <= 0 then
    if op == 'take' then return {0, live, retry_for(1), now, 0, 0, 0} end
    return {0, live, retry_for(n), now, 0, 0, 0}
  end
  local hi = record(grant)
  if op == 'check' then keep_newest() end
  tidy()
  live = live + grant
  local retry = retry_for(1)
  if op == 'check' and retry > 0 then redis.call('HSET', meta, 'bu', num(now + retry)) end
  return {grant, live, retry, now, hi, 0, tonumber(redis.call('HGET', meta, 'born'))}
elseif op == 'hit' then
  if now <= wm then return {0, live, 0, now, 0, 1, 0} end
  local hi = record(n)
  keep_newest()
  -- A forced hit may push out the hit `bu` was computed from: drop it, the slow path
  -- answers (and the next admission that fills the window sets it again).
  redis.call('HDEL', meta, 'bu')
  tidy()
  live = redis.call('ZCOUNT', log, '(' .. num(floor), '+inf')
  return {n, live, 0, now, hi, 0, 0}
else
  if too_late then return {0, live, 0, now, 0, 1, 0} end
  return {0, live, retry_for(1), now, 0, 0, 0}
end
