-- A run admitted already ended (its steps ran within its admission) is never saved again:
-- it keeps its step records in its own row, as one JSON array, instead of one run_steps row
-- each. Runs written before, and runs admitted live, keep theirs in run_steps (steps NULL).
ALTER TABLE runs ADD COLUMN steps BLOB;

-- Most runs complete: the index of runs by status leaves completed runs out, so that
-- writing one costs a page less. A list of completed runs walks runs_created instead.
DROP INDEX runs_status_created;
CREATE INDEX runs_status_created ON runs (status, created_at, id) WHERE status != 'completed';
