-- A refused command is answered within a second even while the log head is held (issue 33's review): 0016 made
-- cueline_record_refusal wait up to 5 s for the head, then fail, so the operator's 409 came 5 s late and the refusal
-- was not kept at all. Now it waits 1 s at most, and a refusal that could not take the head is kept for the audit
-- trail without a known instant (known_ms NULL): it is not notified (docs/notifications.md).
CREATE OR REPLACE FUNCTION cueline_record_refusal(
    p_channel text, p_command_id text, p_command text, p_request json, p_actor text, p_source text, p_reason text,
    p_decided_ms bigint)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER AS $$
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
$$;

DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION cueline_record_refusal(text, text, text, json, text, text, text, bigint) '
        'SET search_path = %I, pg_temp', current_schema());
END
$$;
