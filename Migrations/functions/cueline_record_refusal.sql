-- Generated, do not edit: cueline_record_refusal as 0017_refusal_lock_fallback.sql leaves it (scripts/ci/check-sql-functions.sh --write)
CREATE OR REPLACE FUNCTION public.cueline_record_refusal(p_channel text, p_command_id text, p_command text, p_request json, p_actor text, p_source text, p_reason text, p_decided_ms bigint)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
DECLARE
    clock timestamptz;
    decided timestamptz;
    known bigint;
    held boolean := true;
BEGIN
    -- As cueline_append: the caller's transaction may not sit idle holding the head. The operator is waiting for the
    -- refusal's answer, so the head is waited for 1 s at most; a refusal that could not take it is still kept for the
    -- audit trail, without a known instant, and is not notified (docs/notifications.md).
    PERFORM set_config('idle_in_transaction_session_timeout', '1000', true);
    PERFORM set_config('lock_timeout', '1s', true);
    BEGIN
        LOCK TABLE cueline_log_head IN ROW EXCLUSIVE MODE;
    EXCEPTION WHEN lock_not_available THEN
        held := false;
    END;
    clock := clock_timestamp();
    decided := clock;
    IF p_decided_ms BETWEEN floor(extract(epoch FROM clock) * 1000) - 30000 AND floor(extract(epoch FROM clock) * 1000) + 30000 THEN
        decided := timestamptz '1970-01-01 00:00:00+00' + p_decided_ms * interval '1 millisecond';
    END IF;
    IF held THEN
        known := floor(extract(epoch FROM greatest(decided, clock + cueline_decision_margin() + interval '1 millisecond')) * 1000)::bigint;
    END IF;
    INSERT INTO cueline_refusals (channel, command_id, command, request, actor, source, reason, decided_at, known_ms)
    VALUES (left(p_channel, 64), left(p_command_id, 256), left(p_command, 64), p_request, left(p_actor, 256),
        left(p_source, 256), left(p_reason, 4096), decided, known);
END;
$function$;
