-- cueline_watermark without a write: it waited for in-flight appends with `SELECT … FOR SHARE` on the log head, and a
-- row lock is written to the row and the WAL: each call took a transaction id and a durable commit (an fsync on a
-- durable cluster), 528 bytes of WAL, and every instance calls it 50 times a second plus once per command's NOTIFY,
-- so polling the log competed with the appends for the disk (278 calls/s at most on the 2-core machine's disk).
--
-- Now it takes the log head table's SHARE lock, which is kept in memory: it waits for every transaction that has
-- updated the head (cueline_append's UPDATE holds ROW EXCLUSIVE on the table until its commit), and an append that
-- updates the head afterwards waits for this transaction to end, then reads the clock (later than the one read
-- here) and must decide after it. The guarantee is the one before: every event decided at or before known_until_ms
-- is at or below head.
CREATE OR REPLACE FUNCTION cueline_watermark(OUT head bigint, OUT known_until_ms bigint)
LANGUAGE plpgsql SECURITY DEFINER SET lock_timeout = '5s' AS $$
BEGIN
    LOCK TABLE cueline_log_head IN SHARE MODE;
    SELECT h.position INTO head FROM cueline_log_head h;
    known_until_ms := floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint;
END;
$$;

DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION cueline_watermark() SET search_path = %I, pg_temp', current_schema());
END
$$;
