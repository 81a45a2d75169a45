-- Replicas (issue 13): who owns each open window and who holds each send, the replicas'
-- heartbeats, and the rate limit's and spam guard's counts shared by every replica.
ALTER TABLE interactions ADD COLUMN owner TEXT;
ALTER TABLE interactions ADD COLUMN held_by TEXT;
CREATE INDEX interactions_held ON interactions (held_by) WHERE held_by IS NOT NULL;
CREATE TABLE replicas (
    id TEXT PRIMARY KEY,
    started_at DOUBLE PRECISION NOT NULL,
    seen_at DOUBLE PRECISION NOT NULL
);
CREATE TABLE rate_hits (
    account_id TEXT NOT NULL,
    at DOUBLE PRECISION NOT NULL
);
CREATE INDEX rate_hits_account ON rate_hits (account_id, at);
CREATE TABLE spam_marks (
    account_id TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    recipient TEXT NOT NULL,
    at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (account_id, fingerprint, recipient)
);
CREATE UNIQUE INDEX numbers_one_per_account ON numbers (account_id);
CREATE FUNCTION humanwire_rate_hit(
    p_account TEXT, p_now DOUBLE PRECISION, p_window DOUBLE PRECISION, p_limit INTEGER
) RETURNS DOUBLE PRECISION LANGUAGE plpgsql AS $$
DECLARE
    hits INTEGER;
    oldest DOUBLE PRECISION;
BEGIN
    PERFORM pg_advisory_xact_lock(
        hashtextextended('humanwire.rate:' || current_schema() || ':' || p_account, 0));
    DELETE FROM rate_hits WHERE account_id = p_account AND at <= p_now - p_window;
    SELECT COUNT(*), MIN(at) INTO hits, oldest FROM rate_hits WHERE account_id = p_account;
    IF hits >= p_limit THEN
        RETURN GREATEST(oldest + p_window - p_now, 0.001);
    END IF;
    INSERT INTO rate_hits (account_id, at) VALUES (p_account, p_now);
    RETURN NULL;
END $$;
CREATE FUNCTION humanwire_spam_hit(
    p_account TEXT, p_fingerprint TEXT, p_to TEXT, p_now DOUBLE PRECISION,
    p_window DOUBLE PRECISION
) RETURNS INTEGER LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended(
        'humanwire.spam:' || current_schema() || ':' || p_account || ':' || p_fingerprint, 0));
    DELETE FROM spam_marks
        WHERE account_id = p_account AND fingerprint = p_fingerprint AND at <= p_now - p_window;
    INSERT INTO spam_marks (account_id, fingerprint, recipient, at)
        VALUES (p_account, p_fingerprint, p_to, p_now)
        ON CONFLICT (account_id, fingerprint, recipient) DO UPDATE SET at = excluded.at;
    RETURN (SELECT COUNT(*) FROM spam_marks
        WHERE account_id = p_account AND fingerprint = p_fingerprint);
END $$;
