-- Schema 7: the schedule, every future step of the service as a row with a due time
-- (docs/explanation/schedule.md). (kind, key) names a step: arming it again replaces it.
CREATE TABLE IF NOT EXISTS schedule (
    kind TEXT NOT NULL,
    key TEXT NOT NULL,
    due_at REAL NOT NULL,
    account_id TEXT NOT NULL DEFAULT '',
    payload TEXT,
    attempts INTEGER NOT NULL DEFAULT 0,
    claimed_by TEXT,
    claimed_until REAL,
    PRIMARY KEY (kind, key)
);
CREATE INDEX IF NOT EXISTS schedule_due ON schedule (due_at);
CREATE INDEX IF NOT EXISTS schedule_claimed ON schedule (claimed_by) WHERE claimed_by IS NOT NULL;
