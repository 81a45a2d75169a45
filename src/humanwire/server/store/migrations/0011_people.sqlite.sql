-- Schema 11: the people directory (docs/people.md). One row per person (seq: the page
-- cursor of GET /people, in the order people were added), one per address in the order
-- the person is tried on, with when it was confirmed and the confirmation code pending on
-- it (its hash, when it expires, the wrong answers given to it so far).
CREATE TABLE IF NOT EXISTS people (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    name TEXT NOT NULL,
    metadata TEXT,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS people_listed ON people (account_id, seq);
CREATE TABLE IF NOT EXISTS person_addresses (
    person_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    account_id TEXT NOT NULL,
    channel TEXT NOT NULL,
    to_addr TEXT NOT NULL,
    confirmed_at REAL,
    code_hash TEXT,
    code_expires_at REAL,
    code_misses INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (person_id, position)
);
CREATE INDEX IF NOT EXISTS person_addresses_at ON person_addresses (account_id, channel, to_addr);
