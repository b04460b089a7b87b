-- Step records move out of runs.steps, one JSON array rewritten on every save, into one
-- row per step, so a save writes only the steps that changed. Runs gain their nesting
-- depth (child workflows) and their count of claims since they last made progress.

CREATE TABLE run_steps (
    run_id TEXT NOT NULL,
    idx    INTEGER NOT NULL,
    data   BLOB NOT NULL,
    PRIMARY KEY (run_id, idx)
) WITHOUT ROWID;

INSERT INTO run_steps (run_id, idx, data)
    SELECT runs.id, step.key, step.value
    FROM runs, json_each(CAST(runs.steps AS TEXT)) AS step
    WHERE runs.steps IS NOT NULL AND length(runs.steps) > 0;

ALTER TABLE runs DROP COLUMN steps;
ALTER TABLE runs ADD COLUMN depth INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN claims INTEGER NOT NULL DEFAULT 0;
