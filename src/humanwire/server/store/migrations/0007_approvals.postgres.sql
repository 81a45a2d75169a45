-- Approval requests (issue 28) (docs/design.md, "Approval requests"): one row per request
-- (its outcome, and whether its action was consumed), one per approver (their page's
-- token, the short code of an sms reply, what they decided).
CREATE TABLE approvals (
    interaction_id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL,
    action_digest TEXT,
    outcome TEXT,
    timed_out INTEGER NOT NULL DEFAULT 0,
    settled_at DOUBLE PRECISION,
    consumed_at DOUBLE PRECISION
);
CREATE INDEX approvals_account ON approvals (account_id);
CREATE TABLE approval_approvers (
    interaction_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    account_id TEXT NOT NULL,
    tier INTEGER NOT NULL,
    channel TEXT NOT NULL,
    to_addr TEXT NOT NULL,
    token TEXT NOT NULL UNIQUE,
    code TEXT,
    asked_at DOUBLE PRECISION,
    reminders INTEGER NOT NULL DEFAULT 0,
    decision TEXT,
    comment TEXT,
    via TEXT,
    decided_at DOUBLE PRECISION,
    PRIMARY KEY (interaction_id, position)
);
CREATE INDEX approval_approvers_address ON approval_approvers (to_addr, channel);
CREATE INDEX approval_approvers_account ON approval_approvers (account_id);
