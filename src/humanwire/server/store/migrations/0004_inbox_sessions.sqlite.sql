-- Schema 6: the inbox's logins (only the SHA-256 of a session's token is stored).
CREATE TABLE IF NOT EXISTS inbox_sessions (
    id_hash TEXT PRIMARY KEY,
    account_id TEXT NOT NULL,
    key_hash TEXT NOT NULL,
    created_at REAL NOT NULL,
    expires_at REAL NOT NULL,
    seen_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS inbox_sessions_account ON inbox_sessions (account_id);
