-- A run's place under its workflow's concurrency limit (runner.Run.Concurrency, SPEC §2):
-- the key its definition's concurrency.key evaluated to at admission ('' for the default
-- key) and the limit; NULL and 0 for a run of a workflow without one. runs_queue serves the
-- count of a key's active runs and the oldest of its queued ones, in the write that admits
-- or ends a run of the key.
ALTER TABLE runs ADD COLUMN concurrency_key TEXT;
ALTER TABLE runs ADD COLUMN concurrency_limit INTEGER NOT NULL DEFAULT 0;
CREATE INDEX runs_queue ON runs (workflow_id, environment, concurrency_key, status, created_at, id)
    WHERE concurrency_key IS NOT NULL;
