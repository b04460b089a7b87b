-- The first schema. Times are Unix nanoseconds, 0 = unset. Booleans are 0/1.

CREATE TABLE counters (
    name  TEXT PRIMARY KEY,
    value INTEGER NOT NULL
);
INSERT INTO counters (name, value) VALUES ('catalog_version', 0);

CREATE TABLE workflows (
    id             TEXT PRIMARY KEY,
    name           TEXT NOT NULL,
    title          TEXT NOT NULL DEFAULT '',
    description    TEXT NOT NULL DEFAULT '',
    rev            INTEGER NOT NULL,
    definition     BLOB,
    latest_version INTEGER NOT NULL DEFAULT 0,
    published      INTEGER NOT NULL DEFAULT 0,
    webhook_token  TEXT NOT NULL,
    created_at     INTEGER NOT NULL DEFAULT 0,
    updated_at     INTEGER NOT NULL DEFAULT 0,
    deleted_at     INTEGER NOT NULL DEFAULT 0
);
-- A deleted workflow keeps its row (its versions serve admitted runs) but frees its name.
CREATE UNIQUE INDEX workflows_live_name ON workflows (name) WHERE deleted_at = 0;
CREATE UNIQUE INDEX workflows_live_webhook ON workflows (webhook_token) WHERE deleted_at = 0;

CREATE TABLE workflow_versions (
    workflow_id  TEXT NOT NULL REFERENCES workflows (id),
    version      INTEGER NOT NULL,
    definition   BLOB,
    hash         TEXT NOT NULL,
    published_at INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (workflow_id, version)
);

CREATE TABLE connections (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL UNIQUE,
    type       TEXT NOT NULL,
    header     TEXT NOT NULL DEFAULT '',
    username   TEXT NOT NULL DEFAULT '',
    sealed     BLOB,
    created_at INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE api_tokens (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    hash       BLOB NOT NULL UNIQUE,
    created_at INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE idempotency_keys (
    scope        TEXT NOT NULL,
    key          TEXT NOT NULL,
    fingerprint  TEXT NOT NULL,
    state        TEXT NOT NULL,
    status       INTEGER NOT NULL DEFAULT 0,
    header       BLOB,
    body         BLOB,
    created_at   INTEGER NOT NULL DEFAULT 0,
    locked_until INTEGER NOT NULL DEFAULT 0,
    expires_at   INTEGER NOT NULL,
    PRIMARY KEY (scope, key)
);
-- Covers the live-key count of a scope (the cap) without reading answers.
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (scope, expires_at, state, locked_until);

CREATE TABLE runs (
    id               TEXT PRIMARY KEY,
    workflow_id      TEXT NOT NULL,
    workflow         TEXT NOT NULL,
    version          INTEGER NOT NULL,
    environment      TEXT NOT NULL,
    status           TEXT NOT NULL,
    input            BLOB,
    output           BLOB,
    error            BLOB,
    steps            BLOB,
    waiting_on       BLOB,
    rerun_of         TEXT NOT NULL DEFAULT '',
    created_at       INTEGER NOT NULL DEFAULT 0,
    started_at       INTEGER NOT NULL DEFAULT 0,
    finished_at      INTEGER NOT NULL DEFAULT 0,
    definition       BLOB,
    wake_at          INTEGER NOT NULL DEFAULT 0,
    -- poke_at: the earliest wake-up asked from outside since the run was last claimed, so a
    -- worker's SaveRun cannot overwrite a wake-up it has not seen.
    poke_at          INTEGER NOT NULL DEFAULT 0,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    start_token      TEXT NOT NULL DEFAULT '',
    parent_run_id    TEXT NOT NULL DEFAULT '',
    lease_owner      TEXT NOT NULL DEFAULT '',
    lease_until      INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX runs_due ON runs (wake_at)
    WHERE wake_at > 0 AND status NOT IN ('completed', 'failed', 'cancelled');
CREATE INDEX runs_created ON runs (created_at, id);
CREATE INDEX runs_workflow_created ON runs (workflow_id, created_at, id);
CREATE INDEX runs_status_created ON runs (status, created_at, id);
CREATE INDEX runs_lease_owner ON runs (lease_owner) WHERE lease_owner != '';

CREATE TABLE hooks (
    environment TEXT NOT NULL,
    token       TEXT NOT NULL,
    run_id      TEXT NOT NULL,
    created_at  INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (environment, token)
);
CREATE INDEX hooks_run ON hooks (run_id);

CREATE TABLE payloads (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    environment TEXT NOT NULL,
    token       TEXT NOT NULL,
    run_id      TEXT NOT NULL,
    payload     BLOB,
    created_at  INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX payloads_run_token ON payloads (run_id, environment, token, seq);
