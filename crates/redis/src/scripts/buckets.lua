-- Rolling bucket counters of one key, decided and recorded in one atomic step.
--
-- KEYS[1]  a hash: `h` the head epoch, `t` the running total of the retained buckets, and
--          one field per retained epoch holding its weight; for a limit of several windows,
--          the same fields again per narrower window, prefixed `n1:`, `n2:`, ...
-- ARGV     op ('check' | 'hit' | 'status'), now ('' = the server's TIME in microseconds),
--          bucket_ticks, buckets B, lateness L (buckets), max, n, ttl_ms; then, for a limit of
--          several windows, how many narrower windows it has and each one's (bucket_ticks,
--          B, max), narrowest first (the core's geometry of that window: the configured B
--          clamped to its own W)
-- Returns  {granted, total after, retry-after ticks, now, 0, too-late flag, 0}, then for a
--          limit of several windows each window's {total, retry-after ticks}, narrowest
--          first, the widest last; the retry-after at index 3 is then the longest of them
--
-- The epoch of tick t is floor(t / bucket_ticks). The retained epochs are
-- [head - B - L, head]; a call at epoch e first advances the head to e (when later),
-- dropping the buckets that leave; it is too late when e + L < head. An admission needs
-- total + n <= max in every window, and then counts in every window. A refusal writes
-- nothing.
local k = KEYS[1]
local op = ARGV[1]
local now
if ARGV[2] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
else
  now = tonumber(ARGV[2])
end
local L, n, ttl = tonumber(ARGV[5]), tonumber(ARGV[7]), ARGV[8]

local function num(x) return string.format('%.0f', x) end

-- Every window, narrowest first; the widest (the first arguments) keeps the unprefixed
-- fields, so a single-window key reads as it always did.
local windows = {}
local narrower = tonumber(ARGV[9] or '0')
for i = 1, narrower do
  local at = 7 + 3 * i
  windows[i] = {w = tonumber(ARGV[at]), B = tonumber(ARGV[at + 1]),
                max = tonumber(ARGV[at + 2]), prefix = 'n' .. i .. ':'}
end
windows[narrower + 1] = {w = tonumber(ARGV[3]), B = tonumber(ARGV[4]),
                         max = tonumber(ARGV[6]), prefix = ''}
local widest = windows[narrower + 1]

-- Each window read and advanced to this call's epoch (in memory: written by commit only).
for _, win in ipairs(windows) do
  win.span = win.B + L
  win.e = math.floor(now / win.w)
  local state = redis.call('HMGET', k, win.prefix .. 'h', win.prefix .. 't')
  win.head, win.total = win.e, 0
  if state[1] then win.head, win.total = tonumber(state[1]), tonumber(state[2]) end
  -- Advance the head to e: the epochs below e - span leave (at most span + 1 of them).
  win.leaving = {}
  if win.e > win.head then
    for ep = win.head - win.span, math.min(win.e - win.span - 1, win.head) do
      local c = redis.call('HGET', k, win.prefix .. num(ep))
      if c then
        win.total = win.total - tonumber(c)
        win.leaving[#win.leaving + 1] = win.prefix .. num(ep)
      end
    end
    win.head = win.e
  end
end

local function commit(win)
  if #win.leaving > 0 then redis.call('HDEL', k, unpack(win.leaving)) end
  redis.call('HSET', k, win.prefix .. 'h', num(win.head), win.prefix .. 't', num(win.total))
end

-- Ticks until `need` more fit in `win`: the buckets leave oldest first, bucket ep once the
-- head reaches ep + span + 1.
local function retry_for(win, need)
  local excess = win.total + need - win.max
  if excess <= 0 then return 0 end
  for ep = win.head - win.span, win.head do
    local c = redis.call('HGET', k, win.prefix .. num(ep))
    if c then
      excess = excess - tonumber(c)
      if excess <= 0 then return (ep + win.span + 1) * win.w - now end
    end
  end
  return (win.head + win.span + 1) * win.w - now
end

-- The reply: the seven fields, then each window's {total, retry} for a layered limit.
local function reply(granted, retry_need, too_late)
  local longest, pairs_ = 0, {}
  for _, win in ipairs(windows) do
    local retry = 0
    if retry_need > 0 and not too_late then retry = retry_for(win, retry_need) end
    if retry > longest then longest = retry end
    pairs_[#pairs_ + 1] = win.total
    pairs_[#pairs_ + 1] = retry
  end
  local late = 0
  if too_late then late = 1 end
  local fields = {granted, widest.total, longest, now, 0, late, 0}
  if narrower > 0 then
    for i = 1, #pairs_ do fields[#fields + 1] = pairs_[i] end
  end
  return fields
end

local too_late = false
for _, win in ipairs(windows) do
  if win.e + L < win.head then too_late = true end
end

if op == 'check' then
  if too_late then return reply(0, 0, true) end
  for _, win in ipairs(windows) do
    if win.total + n > win.max then return reply(0, n, false) end
  end
  for _, win in ipairs(windows) do
    redis.call('HINCRBY', k, win.prefix .. num(win.e), n)
    win.total = win.total + n
    commit(win)
  end
  redis.call('PEXPIRE', k, ttl)
  return reply(n, 0, false)
elseif op == 'hit' then
  -- A hit older than every retained bucket of the widest window can never count for an
  -- admissible call; a narrower window drops it alone when it is that old for it.
  if widest.e < widest.head - widest.span then return reply(0, 0, true) end
  for _, win in ipairs(windows) do
    if win.e >= win.head - win.span then
      redis.call('HINCRBY', k, win.prefix .. num(win.e), n)
      win.total = win.total + n
    end
    commit(win)
  end
  redis.call('PEXPIRE', k, ttl)
  return reply(n, 0, false)
else
  if too_late then return reply(0, 0, true) end
  return reply(0, 1, false)
end
