-- Schema 9: interactions' windows are steps of the schedule (kind 'window', keyed by the
-- interaction's id, due when its last window closes). Open interactions written before
-- have none: armed here (again harmlessly: one already armed is kept).
INSERT OR IGNORE INTO schedule (kind, key, due_at, account_id)
SELECT 'window', id, COALESCE(follow_up_deadline, wait_deadline, 0), account_id
FROM interactions WHERE status = 'pending' AND kind <> 'call';
