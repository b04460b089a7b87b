-- A run admitted already ended (its steps ran within its admission) is never saved again:
-- it keeps its step records in its own row, as one JSON array, instead of one run_steps row
-- each. Runs written before, and runs admitted live, keep theirs in run_steps (steps NULL).
ALTER TABLE runs ADD COLUMN steps BLOB;
