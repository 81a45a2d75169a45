-- Schema 11: the people directory (docs/people.md). One row per person (seq: the page
-- cursor of GET /people, from a sequence, so replicas never hand out one twice), one per
-- address in the order the person is tried on, with when it was confirmed and the
-- confirmation code pending on it (its hash, when it expires, the wrong answers so far).
CREATE TABLE people (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL,
    seq BIGSERIAL,
    name TEXT NOT NULL,
    metadata TEXT,
    created_at DOUBLE PRECISION NOT NULL,
    updated_at DOUBLE PRECISION NOT NULL
);
CREATE UNIQUE INDEX people_listed ON people (account_id, seq);
CREATE TABLE person_addresses (
    person_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    account_id TEXT NOT NULL,
    channel TEXT NOT NULL,
    to_addr TEXT NOT NULL,
    confirmed_at DOUBLE PRECISION,
    code_hash TEXT,
    code_expires_at DOUBLE PRECISION,
    code_misses INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (person_id, position)
);
CREATE INDEX person_addresses_at ON person_addresses (account_id, channel, to_addr);
