-- The schedule (issue 27): every future step of the service as a row with a due time,
-- claimed when due by one replica (FOR UPDATE SKIP LOCKED) for a lease.
-- (kind, key) names a step: arming it again replaces it.
CREATE TABLE schedule (
    kind TEXT NOT NULL,
    key TEXT NOT NULL,
    due_at DOUBLE PRECISION NOT NULL,
    account_id TEXT NOT NULL DEFAULT '',
    payload TEXT,
    attempts INTEGER NOT NULL DEFAULT 0,
    claimed_by TEXT,
    claimed_until DOUBLE PRECISION,
    PRIMARY KEY (kind, key)
);
CREATE INDEX schedule_due ON schedule (due_at);
CREATE INDEX schedule_claimed ON schedule (claimed_by) WHERE claimed_by IS NOT NULL;
