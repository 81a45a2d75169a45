-- The inbox's sessions (issue 34): an opaque token in the browser's cookie, its hash
-- here, instead of the API key in the cookie.
CREATE TABLE inbox_sessions (
    id_hash TEXT PRIMARY KEY,
    account_id TEXT NOT NULL,
    key_hash TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    expires_at DOUBLE PRECISION NOT NULL,
    seen_at DOUBLE PRECISION NOT NULL
);
CREATE INDEX inbox_sessions_account ON inbox_sessions (account_id);
