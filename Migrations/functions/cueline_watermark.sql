-- Generated, do not edit: cueline_watermark as 0012_watermark_ahead.sql leaves it (scripts/ci/check-sql-functions.sh --write)
CREATE OR REPLACE FUNCTION public.cueline_watermark(OUT head bigint, OUT known_until_ms bigint)
 RETURNS record
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET lock_timeout TO '5s'
 SET search_path TO 'public', 'pg_temp'
AS $function$
BEGIN
    LOCK TABLE cueline_log_head IN SHARE MODE;
    SELECT coalesce(max(e.position), 0) INTO head FROM cueline_events e;
    known_until_ms := floor(extract(epoch FROM clock_timestamp() + cueline_decision_margin()) * 1000)::bigint;
END;
$function$;
