-- The change log events.Bus reads across processes: each row is one topic that fired
-- (events.Transport); processes poll it by seq. Old rows are pruned as new ones arrive.
CREATE TABLE events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    origin TEXT NOT NULL,
    topic TEXT NOT NULL
);

-- The processes reading the change log, so that a process alone on the file writes none.
CREATE TABLE event_listeners (
    id TEXT PRIMARY KEY,
    seen_at INTEGER NOT NULL
);
