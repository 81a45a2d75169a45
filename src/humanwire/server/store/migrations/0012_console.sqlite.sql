-- Schema 12: the approvers' console (docs/guides/console.md). A sign-in code per address
-- (only its hash; how many were sent in the current window, the rate limit; the wrong
-- answers so far) and the console's sessions (only the SHA-256 of a session's token), each
-- for one person of one account. Addresses are found by channel and address, whatever
-- the account, hence the index on person_addresses.
CREATE TABLE IF NOT EXISTS console_codes (
    address_key TEXT PRIMARY KEY,
    account_id TEXT,
    person_id TEXT,
    code_hash TEXT,
    expires_at REAL,
    misses INTEGER NOT NULL DEFAULT 0,
    window_start REAL NOT NULL,
    sent INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS console_sessions (
    id_hash TEXT PRIMARY KEY,
    account_id TEXT NOT NULL,
    person_id TEXT NOT NULL,
    created_at REAL NOT NULL,
    expires_at REAL NOT NULL,
    seen_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS console_sessions_person ON console_sessions (account_id, person_id);
CREATE INDEX IF NOT EXISTS person_addresses_anywhere ON person_addresses (channel, lower(to_addr));
