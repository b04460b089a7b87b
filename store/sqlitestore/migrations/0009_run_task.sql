-- Whether a run was started as an MCP task (runner.Run.Task): tasks/list lists a principal's
-- task runs in an environment, newest first. Runs from before are not tasks.
ALTER TABLE runs ADD COLUMN task INTEGER NOT NULL DEFAULT 0;
CREATE INDEX runs_tasks ON runs (started_by, environment, created_at DESC, id DESC) WHERE task = 1;
