-- The change log events.Bus reads across processes: each row is one topic that fired
-- (events.Transport); processes poll it by seq. Old rows are pruned as new ones arrive.
CREATE TABLE events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    origin TEXT NOT NULL,
    topic TEXT NOT NULL
);
