-- The accounts' audit logs, hash-chained (issue 28): each entry's wire form without prev
-- and hash as canonical JSON; the head of each log kept apart, so a log cut short shows.
CREATE TABLE audit (
    account_id TEXT NOT NULL,
    sequence BIGINT NOT NULL,
    interaction_id TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    entry TEXT NOT NULL,
    prev TEXT NOT NULL,
    hash TEXT NOT NULL,
    PRIMARY KEY (account_id, sequence)
);
CREATE INDEX audit_interaction ON audit (interaction_id);
CREATE TABLE audit_heads (
    account_id TEXT PRIMARY KEY,
    sequence BIGINT NOT NULL,
    hash TEXT NOT NULL
);
