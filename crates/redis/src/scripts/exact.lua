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
--          `born` stamp it was taken under
-- Returns  {granted, live count after, retry-after ticks, now, highest sequence number,
--          too-late flag, born stamp}
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
if op == 'check' and n == 1 and not too_late and state[2] and now < tonumber(state[2]) then
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
