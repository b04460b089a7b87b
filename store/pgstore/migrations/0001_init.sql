-- The first schema. Times are UTC Unix nanoseconds, 0 = unset. Records are encoded by
-- store/storecodec as in the other backends (step records, errors, waits are its JSON, in
-- bytea); columns are what the queries select, order or filter by. Text sorts by its bytes
-- (COLLATE "C"), as in SQLite and Redis, so that every list has one order whatever the
-- database's locale.

CREATE TABLE counters (
    name  text COLLATE "C" PRIMARY KEY,
    value bigint NOT NULL
);
INSERT INTO counters (name, value) VALUES ('catalog_version', 0);

CREATE TABLE workflows (
    id             text COLLATE "C" PRIMARY KEY,
    name           text COLLATE "C" NOT NULL,
    title          text COLLATE "C" NOT NULL DEFAULT '',
    description    text COLLATE "C" NOT NULL DEFAULT '',
    rev            integer NOT NULL,
    definition     bytea,
    latest_version integer NOT NULL DEFAULT 0,
    published      boolean NOT NULL DEFAULT false,
    -- The webhook token's keyed lookup digest, and the token sealed under secret.key.
    webhook_token  text COLLATE "C" NOT NULL,
    webhook_sealed bytea NOT NULL DEFAULT '',
    created_at     bigint NOT NULL DEFAULT 0,
    updated_at     bigint NOT NULL DEFAULT 0,
    deleted_at     bigint NOT NULL DEFAULT 0
);
-- A deleted workflow keeps its row (its versions serve admitted runs) but frees its name.
CREATE UNIQUE INDEX workflows_live_name ON workflows (name) WHERE deleted_at = 0;
CREATE UNIQUE INDEX workflows_live_webhook ON workflows (webhook_token) WHERE deleted_at = 0;

CREATE TABLE workflow_versions (
    workflow_id  text COLLATE "C" NOT NULL REFERENCES workflows (id),
    version      integer NOT NULL,
    definition   bytea,
    hash         text COLLATE "C" NOT NULL,
    published_at bigint NOT NULL DEFAULT 0,
    -- published_by: storecodec.EncodePublisher of who published it (SPEC §6).
    published_by text NOT NULL DEFAULT '',
    PRIMARY KEY (workflow_id, version)
);

CREATE TABLE connections (
    id         text COLLATE "C" PRIMARY KEY,
    name       text COLLATE "C" NOT NULL UNIQUE,
    type       text COLLATE "C" NOT NULL,
    header     text COLLATE "C" NOT NULL DEFAULT '',
    username   text COLLATE "C" NOT NULL DEFAULT '',
    sealed     bytea,
    created_at bigint NOT NULL DEFAULT 0,
    hosts      text COLLATE "C" NOT NULL DEFAULT '[]'
);

CREATE TABLE api_tokens (
    id         text COLLATE "C" PRIMARY KEY,
    name       text COLLATE "C" NOT NULL,
    hash       bytea NOT NULL UNIQUE,
    scopes     text COLLATE "C" NOT NULL,
    expires_at bigint NOT NULL DEFAULT 0,
    audience   text COLLATE "C" NOT NULL DEFAULT '',
    created_at bigint NOT NULL DEFAULT 0
);

CREATE TABLE idempotency_keys (
    scope        text COLLATE "C" NOT NULL,
    key          text COLLATE "C" NOT NULL,
    fingerprint  text COLLATE "C" NOT NULL,
    method       text COLLATE "C" NOT NULL DEFAULT '',
    path         text COLLATE "C" NOT NULL DEFAULT '',
    run_id       text COLLATE "C" NOT NULL DEFAULT '',
    state        text COLLATE "C" NOT NULL,
    status       integer NOT NULL DEFAULT 0,
    header       bytea,
    body         bytea,
    created_at   bigint NOT NULL DEFAULT 0,
    locked_until bigint NOT NULL DEFAULT 0,
    expires_at   bigint NOT NULL,
    PRIMARY KEY (scope, key)
);
-- A scope's live keys in expiry order (its cap), and its keys newest first (its list).
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (scope, expires_at, key);
CREATE INDEX idempotency_keys_created ON idempotency_keys (scope, created_at, key);

CREATE TABLE runs (
    id               text COLLATE "C" PRIMARY KEY,
    workflow_id      text COLLATE "C" NOT NULL,
    workflow         text COLLATE "C" NOT NULL,
    version          integer NOT NULL,
    environment      text COLLATE "C" NOT NULL,
    status           text COLLATE "C" NOT NULL,
    input            bytea,
    output           bytea,
    error            bytea,
    waiting_on       bytea,
    rerun_of         text COLLATE "C" NOT NULL DEFAULT '',
    created_at       bigint NOT NULL DEFAULT 0,
    started_at       bigint NOT NULL DEFAULT 0,
    finished_at      bigint NOT NULL DEFAULT 0,
    definition       bytea,
    wake_at          bigint NOT NULL DEFAULT 0,
    -- poke_at: the earliest wake-up asked from outside since the run was last claimed, so a
    -- worker's SaveRun cannot overwrite a wake-up it has not seen.
    poke_at          bigint NOT NULL DEFAULT 0,
    cancel_requested boolean NOT NULL DEFAULT false,
    start_token      text COLLATE "C" NOT NULL DEFAULT '',
    parent_run_id    text COLLATE "C" NOT NULL DEFAULT '',
    depth            integer NOT NULL DEFAULT 0,
    claims           integer NOT NULL DEFAULT 0,
    started_by       text COLLATE "C" NOT NULL DEFAULT '',
    task             boolean NOT NULL DEFAULT false,
    -- acts_for: storecodec.EncodeAuthority of whom the run acts for (SPEC §6).
    acts_for         text NOT NULL DEFAULT '',
    -- run_trigger: storecodec.EncodeTrigger of what started the run; NULL for none.
    run_trigger      bytea,
    ask_step         integer NOT NULL DEFAULT 0,
    ask_misses       integer NOT NULL DEFAULT 0,
    lease_owner      text COLLATE "C" NOT NULL DEFAULT '',
    lease_until      bigint NOT NULL DEFAULT 0
);
CREATE INDEX runs_due ON runs (wake_at, id)
    WHERE wake_at > 0 AND status NOT IN ('completed', 'failed', 'cancelled');
CREATE INDEX runs_created ON runs (created_at, id);
CREATE INDEX runs_workflow_created ON runs (workflow_id, created_at, id);
CREATE INDEX runs_status_created ON runs (status, created_at, id);
CREATE INDEX runs_started_by ON runs (started_by, created_at, id);
CREATE INDEX runs_tasks ON runs (started_by, environment, created_at, id) WHERE task;
CREATE INDEX runs_lease_owner ON runs (lease_owner) WHERE lease_owner != '';

-- One row per step record, so that a save writes only the steps that changed.
CREATE TABLE run_steps (
    run_id text COLLATE "C" NOT NULL,
    idx    integer NOT NULL,
    data   bytea NOT NULL,
    PRIMARY KEY (run_id, idx)
);

CREATE TABLE hooks (
    environment text COLLATE "C" NOT NULL,
    token       text COLLATE "C" NOT NULL,
    run_id      text COLLATE "C" NOT NULL,
    created_at  bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (environment, token)
);
CREATE INDEX hooks_run ON hooks (run_id);

CREATE TABLE payloads (
    seq         bigserial PRIMARY KEY,
    environment text COLLATE "C" NOT NULL,
    token       text COLLATE "C" NOT NULL,
    run_id      text COLLATE "C" NOT NULL,
    payload     bytea,
    created_at  bigint NOT NULL DEFAULT 0
);
CREATE INDEX payloads_run_token ON payloads (run_id, environment, token, seq);

-- OAuth 2.1 authorization server (SPEC §9). Secrets are stored as SHA-256 only.
CREATE TABLE oauth_clients (
    id            text COLLATE "C" PRIMARY KEY,
    name          text COLLATE "C" NOT NULL,
    redirect_uris text COLLATE "C" NOT NULL, -- JSON array
    grant_types   text COLLATE "C" NOT NULL, -- JSON array
    created_at    bigint NOT NULL
);
CREATE INDEX oauth_clients_created ON oauth_clients (created_at, id);

CREATE TABLE oauth_codes (
    hash           bytea PRIMARY KEY,
    client_id      text COLLATE "C" NOT NULL,
    client_name    text COLLATE "C" NOT NULL,
    redirect_uri   text COLLATE "C" NOT NULL,
    challenge      text COLLATE "C" NOT NULL,
    scope          text COLLATE "C" NOT NULL,
    principal_id   text COLLATE "C" NOT NULL,
    principal_name text COLLATE "C" NOT NULL,
    expires_at     bigint NOT NULL,
    grant_id       text COLLATE "C" NOT NULL DEFAULT ''
);
CREATE INDEX oauth_codes_expiry ON oauth_codes (expires_at);

CREATE TABLE oauth_grants (
    id                 text COLLATE "C" PRIMARY KEY,
    client_id          text COLLATE "C" NOT NULL,
    client_name        text COLLATE "C" NOT NULL,
    principal_id       text COLLATE "C" NOT NULL,
    principal_name     text COLLATE "C" NOT NULL,
    scope              text COLLATE "C" NOT NULL,
    created_at         bigint NOT NULL,
    refresh_hash       bytea NOT NULL,
    refresh_expires_at bigint NOT NULL
);
CREATE INDEX oauth_grants_principal ON oauth_grants (principal_id, created_at);

-- Every refresh token a grant ever had, so that a rotated-away one is known as reused.
CREATE TABLE oauth_refresh_tokens (
    hash     bytea PRIMARY KEY,
    grant_id text COLLATE "C" NOT NULL REFERENCES oauth_grants (id) ON DELETE CASCADE
);
CREATE INDEX oauth_refresh_tokens_grant ON oauth_refresh_tokens (grant_id);

CREATE TABLE oauth_grant_tokens (
    grant_id text COLLATE "C" NOT NULL REFERENCES oauth_grants (id) ON DELETE CASCADE,
    seq      integer NOT NULL,
    token_id text COLLATE "C" NOT NULL,
    PRIMARY KEY (grant_id, seq)
);
CREATE INDEX oauth_grant_tokens_token ON oauth_grant_tokens (token_id);

CREATE TABLE oauth_signin_codes (
    hash           bytea PRIMARY KEY,
    principal_id   text COLLATE "C" NOT NULL,
    principal_name text COLLATE "C" NOT NULL,
    scope          text COLLATE "C" NOT NULL,
    expires_at     bigint NOT NULL
);
CREATE INDEX oauth_signin_codes_expiry ON oauth_signin_codes (expires_at);

-- How many keys each scope stores, kept by a trigger in the transactions that add and
-- delete keys, so that a key's admission checks its scope's cap without counting the
-- scope's keys: only a scope whose stored keys reach the cap is counted (live keys only).
CREATE TABLE idempotency_scopes (
    scope text COLLATE "C" PRIMARY KEY,
    keys  bigint NOT NULL
);
CREATE FUNCTION idempotency_keys_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO idempotency_scopes (scope, keys) VALUES (NEW.scope, 1)
            ON CONFLICT (scope) DO UPDATE SET keys = idempotency_scopes.keys + 1;
        RETURN NEW;
    END IF;
    UPDATE idempotency_scopes SET keys = keys - 1 WHERE scope = OLD.scope;
    RETURN OLD;
END
$$;
CREATE TRIGGER idempotency_keys_counted AFTER INSERT OR DELETE ON idempotency_keys
    FOR EACH ROW EXECUTE FUNCTION idempotency_keys_count();
