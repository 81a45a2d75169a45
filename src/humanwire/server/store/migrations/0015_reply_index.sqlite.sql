-- Schema 15: a reply finds the open message it answers (channel, both addresses, the
-- latest first) in one index. interactions_match left the order to interactions_account,
-- so the planner walked an account's every interaction per reply; only open messages
-- are ever looked up this way, hence the partial index.
DROP INDEX IF EXISTS interactions_match;
CREATE INDEX IF NOT EXISTS interactions_reply ON interactions (channel, to_addr, from_addr, created_at)
    WHERE kind = 'message' AND status = 'pending';
