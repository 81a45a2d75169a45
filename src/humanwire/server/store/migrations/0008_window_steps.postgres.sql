-- Interactions' windows are steps of the schedule (issue 27): kind 'window', keyed by the
-- interaction's id, due when its last window closes. The open interactions of a database
-- written before have none: armed here. Window owners (interactions.owner) no longer
-- decide anything; the column stays, informative.
INSERT INTO schedule (kind, key, due_at, account_id)
SELECT 'window', id, COALESCE(follow_up_deadline, wait_deadline, 0), account_id
FROM interactions WHERE status = 'pending' AND kind <> 'call'
ON CONFLICT (kind, key) DO NOTHING;
