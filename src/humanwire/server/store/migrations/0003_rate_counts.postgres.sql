-- The rate limit in constant time per request (issue 13: at 30,000 waits every request
-- counted, under the account's lock, every hit of the last window plus the rows its
-- predecessors had deleted and no vacuum had cleared yet). rate_counts keeps, per
-- account, how many hits are inside the window as of counted_to (the last cutoff); a
-- hit subtracts only the rows that left the window since then (a range of the index just
-- past counted_to, never the deleted rows before it). Rows are deleted in bulk by
-- prune_limits, only once counted out. Same answers as migration 2's function (a
-- sliding log); a hit from a clock behind the counted cutoff is let through uncounted.
CREATE TABLE rate_counts (
    account_id TEXT PRIMARY KEY,
    hits INTEGER NOT NULL,
    counted_to DOUBLE PRECISION NOT NULL
);
CREATE OR REPLACE FUNCTION humanwire_rate_hit(
    p_account TEXT, p_now DOUBLE PRECISION, p_window DOUBLE PRECISION, p_limit INTEGER
) RETURNS DOUBLE PRECISION LANGUAGE plpgsql AS $$
DECLARE
    cutoff DOUBLE PRECISION := p_now - p_window;
    counted INTEGER;
    since DOUBLE PRECISION;
    oldest DOUBLE PRECISION;
BEGIN
    PERFORM pg_advisory_xact_lock(
        hashtextextended('humanwire.rate:' || current_schema() || ':' || p_account, 0));
    SELECT hits, counted_to INTO counted, since FROM rate_counts WHERE account_id = p_account;
    IF NOT FOUND THEN
        SELECT COUNT(*) INTO counted FROM rate_hits
            WHERE account_id = p_account AND at > cutoff;
        since := cutoff;
        INSERT INTO rate_counts (account_id, hits, counted_to)
            VALUES (p_account, counted, since);
    ELSIF since < cutoff THEN
        counted := counted - (SELECT COUNT(*) FROM rate_hits
            WHERE account_id = p_account AND at > since AND at <= cutoff);
        since := cutoff;
    END IF;
    IF counted >= p_limit THEN
        SELECT MIN(at) INTO oldest FROM rate_hits WHERE account_id = p_account AND at > since;
        UPDATE rate_counts SET hits = counted, counted_to = since WHERE account_id = p_account;
        RETURN GREATEST(oldest + p_window - p_now, 0.001);
    END IF;
    INSERT INTO rate_hits (account_id, at) VALUES (p_account, p_now);
    IF p_now > since THEN
        counted := counted + 1;
    END IF;
    UPDATE rate_counts SET hits = counted, counted_to = since WHERE account_id = p_account;
    RETURN NULL;
END $$;
