-- Rolling bucket counters of one key, decided and recorded in one atomic step.
--
-- KEYS[1]  a hash: `h` the head epoch, `t` the running total of the retained buckets, and
--          one field per retained epoch holding its weight
-- ARGV     op ('check' | 'hit' | 'status'), now ('' = the server's TIME in microseconds),
--          bucket_ticks, buckets B, lateness L (buckets), max, n, ttl_ms
-- Returns  {granted, total after, retry-after ticks, now, 0, too-late flag, 0}
--
-- The epoch of tick t is floor(t / bucket_ticks). The retained epochs are
-- [head - B - L, head]; a call at epoch e first advances the head to e (when later),
-- dropping the buckets that leave; it is too late when e + L < head. An admission needs
-- total + n <= max. A refusal writes nothing.
local k = KEYS[1]
local op = ARGV[1]
local now
if ARGV[2] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
else
  now = tonumber(ARGV[2])
end
local w, B, L = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local max, n, ttl = tonumber(ARGV[6]), tonumber(ARGV[7]), ARGV[8]
local span = B + L

local function num(x) return string.format('%.0f', x) end

local e = math.floor(now / w)
local state = redis.call('HMGET', k, 'h', 't')
local head, total = e, 0
if state[1] then head, total = tonumber(state[1]), tonumber(state[2]) end

-- Advance the head to e: the epochs below e - span leave (at most span + 1 of them).
local leaving = {}
if e > head then
  for ep = head - span, math.min(e - span - 1, head) do
    local c = redis.call('HGET', k, num(ep))
    if c then
      total = total - tonumber(c)
      leaving[#leaving + 1] = num(ep)
    end
  end
  head = e
end

local function commit()
  if #leaving > 0 then redis.call('HDEL', k, unpack(leaving)) end
  redis.call('HSET', k, 'h', num(head), 't', num(total))
  redis.call('PEXPIRE', k, ttl)
end

-- Ticks until `need` more fit: the buckets leave oldest first, bucket ep once the head
-- reaches ep + span + 1.
local function retry_for(need)
  local excess = total + need - max
  if excess <= 0 then return 0 end
  for ep = head - span, head do
    local c = redis.call('HGET', k, num(ep))
    if c then
      excess = excess - tonumber(c)
      if excess <= 0 then return (ep + span + 1) * w - now end
    end
  end
  return (head + span + 1) * w - now
end

local too_late = e + L < head
if op == 'check' then
  if too_late then return {0, total, 0, now, 0, 1, 0} end
  if total + n > max then return {0, total, retry_for(n), now, 0, 0, 0} end
  redis.call('HINCRBY', k, num(e), n)
  total = total + n
  commit()
  return {n, total, 0, now, 0, 0, 0}
elseif op == 'hit' then
  -- A hit older than every retained bucket can never count for an admissible call.
  if e < head - span then return {0, total, 0, now, 0, 1, 0} end
  redis.call('HINCRBY', k, num(e), n)
  total = total + n
  commit()
  return {n, total, 0, now, 0, 0, 0}
else
  if too_late then return {0, total, 0, now, 0, 1, 0} end
  return {0, total, retry_for(1), now, 0, 0, 0}
end
