-- The whole schema of SQLite's version 5, in PostgreSQL's types (DOUBLE PRECISION
-- times, BOOLEAN flags, BYTEA bodies, BIGSERIAL keys); an ord BIGSERIAL column breaks
-- ties as SQLite's rowid does.
CREATE TABLE accounts (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    key_hash TEXT NOT NULL UNIQUE,
    suspended BOOLEAN NOT NULL DEFAULT FALSE,
    created_at DOUBLE PRECISION NOT NULL
);
CREATE TABLE interactions (
    id TEXT PRIMARY KEY,
    ord BIGSERIAL NOT NULL,
    account_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    channel TEXT NOT NULL,
    to_addr TEXT NOT NULL,
    from_addr TEXT NOT NULL,
    request TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    status TEXT NOT NULL,
    wait_deadline DOUBLE PRECISION,
    follow_up_deadline DOUBLE PRECISION,
    result TEXT,
    outcome TEXT,
    form_token TEXT UNIQUE,
    reply_token TEXT UNIQUE,
    card_id TEXT,
    ended_at DOUBLE PRECISION,
    delivery_status TEXT,
    provider_ref TEXT
);
CREATE INDEX interactions_match ON interactions (account_id, channel, to_addr, status);
CREATE INDEX interactions_account ON interactions (account_id, created_at);
CREATE INDEX interactions_open ON interactions (status);
CREATE INDEX interactions_provider_ref ON interactions (provider_ref);
CREATE TABLE deliveries (
    seq BIGSERIAL PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    account_id TEXT NOT NULL,
    interaction_id TEXT,
    channel TEXT NOT NULL,
    kind TEXT NOT NULL,
    from_addr TEXT,
    to_addr TEXT NOT NULL,
    text TEXT NOT NULL,
    form_url TEXT,
    created_at DOUBLE PRECISION NOT NULL
);
CREATE INDEX deliveries_account ON deliveries (account_id, seq);
CREATE TABLE inbound (
    id TEXT PRIMARY KEY,
    ord BIGSERIAL NOT NULL,
    account_id TEXT NOT NULL,
    channel TEXT NOT NULL,
    from_addr TEXT NOT NULL,
    to_addr TEXT NOT NULL,
    body TEXT NOT NULL,
    media_urls TEXT NOT NULL,
    interaction_id TEXT,
    created_at DOUBLE PRECISION NOT NULL,
    ref TEXT
);
CREATE INDEX inbound_account ON inbound (account_id, created_at);
CREATE UNIQUE INDEX inbound_ref ON inbound (ref);
CREATE TABLE numbers (
    id TEXT PRIMARY KEY,
    ord BIGSERIAL NOT NULL,
    account_id TEXT NOT NULL,
    phone_number TEXT NOT NULL UNIQUE,
    created_at DOUBLE PRECISION NOT NULL,
    updated_at DOUBLE PRECISION NOT NULL
);
CREATE INDEX numbers_account ON numbers (account_id);
CREATE TABLE webhooks (
    id TEXT PRIMARY KEY,
    ord BIGSERIAL NOT NULL,
    account_id TEXT NOT NULL,
    url TEXT NOT NULL,
    event_types TEXT NOT NULL,
    headers TEXT NOT NULL,
    secret TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL
);
CREATE INDEX webhooks_account ON webhooks (account_id);
CREATE TABLE channels (
    id TEXT PRIMARY KEY,
    ord BIGSERIAL NOT NULL,
    account_id TEXT NOT NULL,
    type TEXT NOT NULL,
    to_addr TEXT NOT NULL,
    wait_time TEXT,
    follow_up_time TEXT,
    message_template TEXT,
    response_template TEXT NOT NULL,
    no_response_template TEXT NOT NULL,
    reply_link BOOLEAN NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    metadata TEXT
);
CREATE INDEX channels_account ON channels (account_id);
CREATE TABLE events (
    id TEXT PRIMARY KEY,
    ord BIGSERIAL NOT NULL,
    account_id TEXT NOT NULL,
    event_type TEXT NOT NULL,
    interaction_id TEXT,
    body TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL
);
CREATE INDEX events_account ON events (account_id, created_at);
CREATE TABLE outbox (
    id TEXT PRIMARY KEY,
    ord BIGSERIAL NOT NULL,
    event_id TEXT NOT NULL,
    webhook_id TEXT NOT NULL,
    account_id TEXT NOT NULL,
    status TEXT NOT NULL,
    attempts INTEGER NOT NULL,
    next_attempt_at DOUBLE PRECISION NOT NULL,
    last_error TEXT,
    last_status_code INTEGER,
    created_at DOUBLE PRECISION NOT NULL,
    updated_at DOUBLE PRECISION NOT NULL,
    delivered_at DOUBLE PRECISION
);
CREATE INDEX outbox_due ON outbox (status, next_attempt_at);
CREATE INDEX outbox_account ON outbox (account_id, created_at);
CREATE INDEX outbox_webhook ON outbox (webhook_id, status);
CREATE TABLE idempotency (
    account_id TEXT NOT NULL,
    key TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    status_code INTEGER NOT NULL,
    body BYTEA NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (account_id, key)
);
CREATE INDEX idempotency_created ON idempotency (created_at);
CREATE TABLE idempotency_links (
    account_id TEXT NOT NULL,
    key TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    interaction_id TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (account_id, key)
);
CREATE INDEX idempotency_links_created ON idempotency_links (created_at);
CREATE TABLE provider_state (
    scope TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    updated_at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (scope, key)
);
CREATE TABLE outcomes (
    id BIGSERIAL PRIMARY KEY,
    account_id TEXT NOT NULL,
    interaction_id TEXT NOT NULL,
    body TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL
);
CREATE INDEX outcomes_account ON outcomes (account_id, id);
CREATE INDEX outcomes_created ON outcomes (created_at);
