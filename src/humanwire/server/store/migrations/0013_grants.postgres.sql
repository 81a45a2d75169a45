-- Schema 13: standing approvals (docs/guides/approvals.md "Standing approvals"). A grant
-- of one account approves the requests about one action whose arguments its match covers
-- (match_json: the JSON of the match), until expires_at or until revoked (revoked_at set).
-- Requests read an account's live grants of one action name, hence the index.
CREATE TABLE approval_grants (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL,
    action_name TEXT NOT NULL,
    match_json TEXT NOT NULL,
    granted_by TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    expires_at DOUBLE PRECISION NOT NULL,
    revoked_at DOUBLE PRECISION
);
CREATE INDEX approval_grants_action ON approval_grants (account_id, action_name);
