-- Schema 12: the approvers' console (docs/guides/console.md). A sign-in code per address
-- (only its hash; how many were sent in the current window, the rate limit; the wrong
-- answers so far) and the console's sessions (only the SHA-256 of a session's token), each
-- for one person of one account. Addresses are found by channel and address, whatever
-- the account, hence the index on person_addresses.
CREATE TABLE console_codes (
    address_key TEXT PRIMARY KEY,
    account_id TEXT,
    person_id TEXT,
    code_hash TEXT,
    expires_at DOUBLE PRECISION,
    misses INTEGER NOT NULL DEFAULT 0,
    window_start DOUBLE PRECISION NOT NULL,
    sent INTEGER NOT NULL
);
CREATE TABLE console_sessions (
    id_hash TEXT PRIMARY KEY,
    account_id TEXT NOT NULL,
    person_id TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    expires_at DOUBLE PRECISION NOT NULL,
    seen_at DOUBLE PRECISION NOT NULL
);
CREATE INDEX console_sessions_person ON console_sessions (account_id, person_id);
CREATE INDEX person_addresses_anywhere ON person_addresses (channel, lower(to_addr));
