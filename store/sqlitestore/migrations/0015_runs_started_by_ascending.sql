-- The indexes of runs by who started them were descending in time, so that every new run
-- went in at the front of its starter's entries: SQLite splits a page there by sharing its
-- cells with its siblings, writing about two index pages per run, where one appended at the
-- end writes one. Ascending, they are read backwards for newest first, as runs_created is.
DROP INDEX runs_started_by;
CREATE INDEX runs_started_by ON runs (started_by, created_at, id);
DROP INDEX runs_tasks;
CREATE INDEX runs_tasks ON runs (started_by, environment, created_at, id) WHERE task = 1;
