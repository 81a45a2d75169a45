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
