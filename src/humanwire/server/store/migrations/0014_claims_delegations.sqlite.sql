-- Schema 14: claims of approval requests and out-of-office delegations (docs/guides/console.md).
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
-- Out-of-office delegations: while one holds (starts_at <= now < ends_at, not revoked),
-- requests asking person_id ask delegate_id in their place; the approver's row keeps
-- whom it was asked for (on_behalf_of), and so does their decision.
CREATE TABLE IF NOT EXISTS approval_delegations (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL,
    person_id TEXT NOT NULL,
    delegate_id TEXT NOT NULL,
    starts_at REAL NOT NULL,
    ends_at REAL NOT NULL,
    created_at REAL NOT NULL,
    revoked_at REAL
);
CREATE INDEX IF NOT EXISTS approval_delegations_account ON approval_delegations (account_id, ends_at);
ALTER TABLE approval_approvers ADD COLUMN on_behalf_of TEXT;
