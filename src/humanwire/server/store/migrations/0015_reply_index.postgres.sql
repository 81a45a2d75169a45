-- Schema 15: a reply finds the open message it answers (channel, both addresses, the
-- latest first) in one index. interactions_match left the order to a sort; only open
-- messages are ever looked up this way, hence the partial index.
DROP INDEX IF EXISTS interactions_match;
CREATE INDEX interactions_reply ON interactions (channel, to_addr, from_addr, created_at, ord)
    WHERE kind = 'message' AND status = 'pending';
