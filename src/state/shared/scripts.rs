//! The Lua scripts of the Redis state store: each runs atomically on the one slot its keys
//! share (the keys of one script always carry the same hash tag).

/// Takes a pending elicitation: KEYS = pending hash, answered hash; ARGV = field, purpose,
/// now (ms), answered-until (ms), answered hash TTL (ms).
pub(super) const TAKE: &str = r"
local v = redis.call('HGET', KEYS[1], ARGV[1])
local now = tonumber(ARGV[3])
if v then
  local sep = string.find(v, '|', 1, true)
  local deadline = tonumber(string.sub(v, 1, sep - 1))
  if ARGV[2] == 'answer' and deadline <= now then return {'absent'} end
  redis.call('HDEL', KEYS[1], ARGV[1])
  if ARGV[2] == 'answer' then
    redis.call('HSET', KEYS[2], ARGV[1], ARGV[4])
    if redis.call('PTTL', KEYS[2]) < tonumber(ARGV[5]) then
      redis.call('PEXPIRE', KEYS[2], ARGV[5])
    end
  end
  return {'pending', string.sub(v, sep + 1)}
end
local a = redis.call('HGET', KEYS[2], ARGV[1])
if a and tonumber(a) > now then return {'answered'} end
return {'absent'}
";

/// Records a pending elicitation: KEYS = pending hash; ARGV = field, `deadline|record`, hash
/// TTL (ms), now (ms), grace (ms). Past 256 entries, those long past their deadline go; a
/// session holding 4096 is refused (an error: the caller fails closed).
pub(super) const PUT_PENDING: &str = r"
if redis.call('HLEN', KEYS[1]) >= 4096 then
  return redis.error_reply('elicitgate: too many pending elicitations in one session')
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[3]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
end
if redis.call('HLEN', KEYS[1]) > 256 then
  local limit = tonumber(ARGV[4]) - tonumber(ARGV[5])
  local all = redis.call('HGETALL', KEYS[1])
  for i = 1, #all, 2 do
    local sep = string.find(all[i + 1], '|', 1, true)
    if sep and tonumber(string.sub(all[i + 1], 1, sep - 1)) < limit then
      redis.call('HDEL', KEYS[1], all[i])
    end
  end
end
return 1
";

/// Declares an announced session: KEYS = caps key; ARGV = record, TTL (ms).
pub(super) const DECLARE: &str = r#"
local v = redis.call('GET', KEYS[1])
if not v then return 'unknown' end
if string.sub(v, 1, 12) == '{"caps":null' then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 'declared'
end
return 'already'
"#;
