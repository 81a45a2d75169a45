-- Schema 8: the accounts' audit logs, hash-chained (docs/design.md, "Approval requests"):
-- each entry's wire form without prev and hash as canonical JSON; the head of each log
-- kept apart, so a log cut short shows.
CREATE TABLE IF NOT EXISTS audit (
    account_id TEXT NOT NULL,
    sequence INTEGER NOT NULL,
    interaction_id TEXT NOT NULL,
    created_at REAL NOT NULL,
    entry TEXT NOT NULL,
    prev TEXT NOT NULL,
    hash TEXT NOT NULL,
    PRIMARY KEY (account_id, sequence)
);
CREATE INDEX IF NOT EXISTS audit_interaction ON audit (interaction_id);
CREATE TABLE IF NOT EXISTS audit_heads (
    account_id TEXT PRIMARY KEY,
    sequence INTEGER NOT NULL,
    hash TEXT NOT NULL
);
