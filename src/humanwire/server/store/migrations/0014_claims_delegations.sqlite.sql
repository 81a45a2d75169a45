-- Schema 14: claims of approval requests (docs/guides/console.md "Claiming a request").
-- At most one claim per request: the person of the account's people directory who said
-- "I'm on it" in the console, and when. The other approvers' reminders stop while it
-- holds; releasing it deletes the row.
CREATE TABLE IF NOT EXISTS approval_claims (
    interaction_id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL,
    person_id TEXT NOT NULL,
    claimed_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS approval_claims_account ON approval_claims (account_id);
