-- The principal that started a run (SPEC §9: runs are readable by the token that started
-- them). Runs from before, webhooks and the local principal's earlier runs have none.
ALTER TABLE runs ADD COLUMN started_by TEXT NOT NULL DEFAULT '';
CREATE INDEX runs_started_by ON runs (started_by, created_at DESC, id DESC);
