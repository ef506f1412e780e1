-- Generated, do not edit: cueline_record_refusal as 0005_append_function.sql leaves it (scripts/ci/check-sql-functions.sh --write)
CREATE OR REPLACE FUNCTION public.cueline_record_refusal(p_channel text, p_command_id text, p_command text, p_request json, p_actor text, p_source text, p_reason text, p_decided_ms bigint)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
DECLARE
    decided timestamptz := clock_timestamp();
BEGIN
    IF p_decided_ms BETWEEN floor(extract(epoch FROM decided) * 1000) - 30000 AND floor(extract(epoch FROM decided) * 1000) + 30000 THEN
        decided := timestamptz '1970-01-01 00:00:00+00' + p_decided_ms * interval '1 millisecond';
    END IF;
    INSERT INTO cueline_refusals (channel, command_id, command, request, actor, source, reason, decided_at)
    VALUES (left(p_channel, 64), left(p_command_id, 256), left(p_command, 64), p_request, left(p_actor, 256),
        left(p_source, 256), left(p_reason, 4096), decided);
END;
$function$;
