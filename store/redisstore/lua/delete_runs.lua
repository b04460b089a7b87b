-- Deletes ended runs with their steps, hooks, queued payloads and every index entry.
-- KEYS: 1 the index walked (sweep: the created index or a workflow's; one run: the created
--       index)
-- ARGV: 1 the store's key prefix, 2 mode: 'one' or 'sweep';
--       one: 3 run ID. Returns 1, or GR_NOTFOUND / GR_ACTIVE (not ended, or its parent
--       has not) with nothing deleted.
--       sweep: 3 the cut (a time), 4 the lex lower bound, 5 the lex upper bound, 6 how many
--       entries to examine. Deletes the runs among them that ended at or before the cut,
--       trims entries that name no run, and returns {deleted, examined, last entry examined
--       or ''}.
local p = ARGV[1]

local function delete_run(id, f)
  for _, m in ipairs(redis.call('SMEMBERS', p .. 'runhooks:' .. id)) do
    if redis.call('HGET', p .. 'hook:' .. m, 'run_id') == id then
      redis.call('DEL', p .. 'hook:' .. m, p .. 'pq:' .. m)
    end
  end
  redis.call('DEL', p .. 'run:' .. id, p .. 'runhooks:' .. id, p .. 'pl:' .. id)
  redis.call('ZREM', p .. 'runs:created', f[3])
  redis.call('ZREM', p .. 'runs:wf:' .. f[1], f[3])
  redis.call('ZREM', p .. 'runs:status:' .. f[2], f[3])
  redis.call('ZREM', p .. 'runs:due', id)
end

local function fields(id)
  return redis.call('HMGET', p .. 'run:' .. id, 'workflow_id', 'status', 'sort_key', 'finished_at', 'parent_run_id')
end

-- A run may go once it ended, and so did its parent, if any: a parent still active reads
-- its child's end when it resumes, and would start a child run anew were it gone.
local function deletable(f)
  if not terminal(f[2]) then
    return false
  end
  if not f[5] or f[5] == '' then
    return true
  end
  local parent = redis.call('HGET', p .. 'run:' .. f[5], 'status')
  return not parent or terminal(parent)
end

if ARGV[2] == 'one' then
  local f = fields(ARGV[3])
  if not f[2] then
    return fail('GR_NOTFOUND')
  end
  if not deletable(f) then
    return fail('GR_ACTIVE')
  end
  delete_run(ARGV[3], f)
  return 1
end

local members = redis.call('ZRANGEBYLEX', KEYS[1], ARGV[4], ARGV[5], 'LIMIT', 0, tonumber(ARGV[6]))
local deleted = 0
for _, m in ipairs(members) do
  local at = string.find(m, ':', 1, true)
  local id = at and string.sub(m, at + 1) or ''
  local f = fields(id)
  if not f[2] then
    redis.call('ZREM', KEYS[1], m)
  elseif f[4] and f[4] ~= ZERO and f[4] <= ARGV[3] and deletable(f) then
    delete_run(id, f)
    deleted = deleted + 1
  end
end
return {deleted, #members, members[#members] or ''}
