-- The first schema on SQLite: every table of the SQLite series before the one migration
-- series (its schema versions 1 to 5), as a new file gets it. IF NOT EXISTS throughout,
-- and each ALTER TABLE ... ADD COLUMN below runs only where its column is missing: a file
-- of schema 1 to 4 (no schema_migrations) runs it again, gains the tables and columns
-- added since and keeps its data.
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS accounts (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    key_hash TEXT NOT NULL UNIQUE,
    suspended INTEGER NOT NULL DEFAULT 0,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS interactions (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    channel TEXT NOT NULL,
    to_addr TEXT NOT NULL,
    from_addr TEXT NOT NULL,
    request TEXT NOT NULL,
    created_at REAL NOT NULL,
    status TEXT NOT NULL,
    wait_deadline REAL,
    follow_up_deadline REAL,
    result TEXT,
    outcome TEXT,
    form_token TEXT UNIQUE,
    reply_token TEXT UNIQUE,
    card_id TEXT,
    ended_at REAL,
    delivery_status TEXT,
    provider_ref TEXT
);
CREATE INDEX IF NOT EXISTS interactions_match
    ON interactions (account_id, channel, to_addr, status);
CREATE INDEX IF NOT EXISTS interactions_account ON interactions (account_id, created_at);
CREATE INDEX IF NOT EXISTS interactions_open ON interactions (status);
CREATE TABLE IF NOT EXISTS deliveries (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    account_id TEXT NOT NULL,
    interaction_id TEXT,
    channel TEXT NOT NULL,
    kind TEXT NOT NULL,
    from_addr TEXT,
    to_addr TEXT NOT NULL,
    text TEXT NOT NULL,
    form_url TEXT,
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS deliveries_account ON deliveries (account_id, seq);
CREATE TABLE IF NOT EXISTS inbound (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL,
    channel TEXT NOT NULL,
    from_addr TEXT NOT NULL,
    to_addr TEXT NOT NULL,
    body TEXT NOT NULL,
    media_urls TEXT NOT NULL,
    interaction_id TEXT,
    created_at REAL NOT NULL,
    ref TEXT
);
CREATE INDEX IF NOT EXISTS inbound_account ON inbound (account_id, created_at);
CREATE TABLE IF NOT EXISTS numbers (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL,
    phone_number TEXT NOT NULL UNIQUE,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS numbers_account ON numbers (account_id);
CREATE TABLE IF NOT EXISTS webhooks (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL,
    url TEXT NOT NULL,
    event_types TEXT NOT NULL,
    headers TEXT NOT NULL,
    secret TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS webhooks_account ON webhooks (account_id);
CREATE TABLE IF NOT EXISTS channels (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL,
    type TEXT NOT NULL,
    to_addr TEXT NOT NULL,
    wait_time TEXT,
    follow_up_time TEXT,
    message_template TEXT,
    response_template TEXT NOT NULL,
    no_response_template TEXT NOT NULL,
    reply_link INTEGER NOT NULL,
    created_at REAL NOT NULL,
    metadata TEXT
);
CREATE INDEX IF NOT EXISTS channels_account ON channels (account_id);
CREATE TABLE IF NOT EXISTS events (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL,
    event_type TEXT NOT NULL,
    interaction_id TEXT,
    body TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS events_account ON events (account_id, created_at);
CREATE TABLE IF NOT EXISTS outbox (
    id TEXT PRIMARY KEY,
    event_id TEXT NOT NULL,
    webhook_id TEXT NOT NULL,
    account_id TEXT NOT NULL,
    status TEXT NOT NULL,
    attempts INTEGER NOT NULL,
    next_attempt_at REAL NOT NULL,
    last_error TEXT,
    last_status_code INTEGER,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    delivered_at REAL
);
CREATE INDEX IF NOT EXISTS outbox_due ON outbox (status, next_attempt_at);
CREATE INDEX IF NOT EXISTS outbox_account ON outbox (account_id, created_at);
CREATE TABLE IF NOT EXISTS idempotency (
    account_id TEXT NOT NULL,
    key TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    status_code INTEGER NOT NULL,
    body BLOB NOT NULL,
    created_at REAL NOT NULL,
    PRIMARY KEY (account_id, key)
);
CREATE TABLE IF NOT EXISTS idempotency_links (
    account_id TEXT NOT NULL,
    key TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    interaction_id TEXT NOT NULL,
    created_at REAL NOT NULL,
    PRIMARY KEY (account_id, key)
);
-- Columns added after the first release (schema 3: a provider's delivery status and ref,
-- an inbound message's ref; schema 4: a channel card's metadata). New files have them
-- from the CREATE TABLEs above; SQLite has no ADD COLUMN IF NOT EXISTS, so each ALTER
-- TABLE runs only where its column is missing.
ALTER TABLE interactions ADD COLUMN delivery_status TEXT;
ALTER TABLE interactions ADD COLUMN provider_ref TEXT;
ALTER TABLE inbound ADD COLUMN ref TEXT;
ALTER TABLE channels ADD COLUMN metadata TEXT;
-- Schema 3: real providers (a provider's ref looked up, an inbound ref taken once, what
-- providers keep between callbacks); schema 5: the outcome stream (GET /events).
CREATE INDEX IF NOT EXISTS interactions_provider_ref ON interactions (provider_ref);
CREATE UNIQUE INDEX IF NOT EXISTS inbound_ref ON inbound (ref);
CREATE TABLE IF NOT EXISTS provider_state (
    scope TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    updated_at REAL NOT NULL,
    PRIMARY KEY (scope, key)
);
CREATE TABLE IF NOT EXISTS outcomes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id TEXT NOT NULL,
    interaction_id TEXT NOT NULL,
    body TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS outcomes_account ON outcomes (account_id, id);
CREATE INDEX IF NOT EXISTS outcomes_created ON outcomes (created_at);
