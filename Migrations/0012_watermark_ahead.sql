-- The watermark reaches a boundary before it passes (issue 14: LL-HLS parts are answered at their boundary).
--
-- A tick T may be served once every event decided at or before T is in the log: until now, once cueline_watermark
-- had read the database clock at or after T (known_until_ms), so every part boundary waited for a round trip to the
-- database after it (about 2 ms of the 20 ms in which 1,000 blocked players must be answered).
--
-- Now an append refuses a decision time less than 20 ms after the database clock (it refused one at or before it), and
-- the watermark reports the clock plus those 20 ms: an append arriving after a watermark reads the clock after it did,
-- so it decides after the instant the watermark reported, as before. Read within 20 ms before a boundary, the
-- watermark already covers it. Commands decide 50 ms ahead of their arrival (EffectiveTime): the append must now reach
-- the database within 30 ms of the decision instead of 50 (a late one is refused before writing and decided again,
-- later, by the handler, counted in cueline_late_decisions_total).
--
-- Applied to a running installation, an append that began under the old definition and takes the head table's lock
-- after the first new watermark could carry a decision within 20 ms of the clock that watermark covers: it needs a
-- decision made less than 20 ms ahead of the database clock, which the 50 ms effect delay makes practically
-- impossible; stop the writers during the migration to rule it out.
--
-- cueline_append is otherwise unchanged: its definition (migration 0011) is rewritten here with the one comparison
-- and its message replaced, each exactly once, so that the function stays what the earlier migrations say it is.

CREATE FUNCTION cueline_decision_margin() RETURNS interval LANGUAGE sql IMMUTABLE AS $$ SELECT interval '20 milliseconds' $$;

DO $$
DECLARE
    definition text := pg_get_functiondef('cueline_append(text, bigint, text, text, text, text, text, bigint, json)'::regprocedure);
    old_check constant text := 'IF decided <= clock THEN';
    new_check constant text := 'IF decided <= clock + cueline_decision_margin() THEN';
    old_message constant text := '''decision time % is not after the database clock %''';
    new_message constant text := '''decision time % is not 20 ms after the database clock %''';
BEGIN
    IF (length(definition) - length(replace(definition, old_check, ''))) / length(old_check) <> 1
        OR (length(definition) - length(replace(definition, old_message, ''))) / length(old_message) <> 1 THEN
        RAISE EXCEPTION 'cueline_append is not the function of migration 0011: its decision check was not found once';
    END IF;
    EXECUTE replace(replace(definition, old_check, new_check), old_message, new_message);
END
$$;

CREATE OR REPLACE FUNCTION cueline_watermark(OUT head bigint, OUT known_until_ms bigint)
LANGUAGE plpgsql SECURITY DEFINER SET lock_timeout = '5s' AS $$
BEGIN
    LOCK TABLE cueline_log_head IN SHARE MODE;
    SELECT coalesce(max(e.position), 0) INTO head FROM cueline_events e;
    known_until_ms := floor(extract(epoch FROM clock_timestamp() + cueline_decision_margin()) * 1000)::bigint;
END;
$$;

DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION cueline_decision_margin() SET search_path = %I, pg_temp', current_schema());
    EXECUTE format('ALTER FUNCTION cueline_watermark() SET search_path = %I, pg_temp', current_schema());
END
$$;

REVOKE ALL ON FUNCTION cueline_decision_margin() FROM PUBLIC;
