-- Refused commands notified to subscriptions (issue 33, docs/notifications.md "Refused commands").
--
-- A notification feed releases facts up to a watermark's known_until, the instant up to which the log is complete.
-- Refusals were kept apart from that order (ids from a sequence, committed in any order, a decision time up to 30 s
-- old accepted), so no instance could say when all of a channel's refusals up to an instant were visible. Each refusal
-- now gets the instant it is known at (`known_ms`), taken as an append takes its decision time: under the log head,
-- shared with appends (ROW EXCLUSIVE), later than the database clock plus the decision margin. cueline_watermark takes
-- the head in SHARE mode, so it waits for every refusal being recorded, and one recorded after it reads a later clock:
-- every refusal with known_ms <= a watermark's known_until is committed before that watermark is answered. Refusals
-- recorded before this migration have no known_ms and are never notified.
ALTER TABLE cueline_refusals ADD COLUMN known_ms bigint;
CREATE INDEX cueline_refusals_known ON cueline_refusals (known_ms, id) WHERE known_ms IS NOT NULL;

ALTER TABLE cueline_subscriptions DROP CONSTRAINT cueline_subscriptions_events_check;
ALTER TABLE cueline_subscriptions ADD CONSTRAINT cueline_subscriptions_events_check CHECK (events <@ ARRAY['placed',
    'limited', 'cancelled', 'refused', 'on-air', 'ended-early', 'aired', 'removed']::text[]);

-- A refused command, dated by the database clock (the caller's time is kept only if within 30 s of it), and known
-- from an instant later than every watermark answered before it.
CREATE OR REPLACE FUNCTION cueline_record_refusal(
    p_channel text, p_command_id text, p_command text, p_request json, p_actor text, p_source text, p_reason text,
    p_decided_ms bigint)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER AS $$
DECLARE
    clock timestamptz;
    decided timestamptz;
BEGIN
    -- As cueline_append: the caller's transaction may not sit idle holding the head, nor wait long for it.
    PERFORM set_config('idle_in_transaction_session_timeout', '1000', true);
    PERFORM set_config('lock_timeout', '5s', true);
    LOCK TABLE cueline_log_head IN ROW EXCLUSIVE MODE;
    clock := clock_timestamp();
    decided := clock;
    IF p_decided_ms BETWEEN floor(extract(epoch FROM clock) * 1000) - 30000 AND floor(extract(epoch FROM clock) * 1000) + 30000 THEN
        decided := timestamptz '1970-01-01 00:00:00+00' + p_decided_ms * interval '1 millisecond';
    END IF;
    INSERT INTO cueline_refusals (channel, command_id, command, request, actor, source, reason, decided_at, known_ms)
    VALUES (left(p_channel, 64), left(p_command_id, 256), left(p_command, 64), p_request, left(p_actor, 256),
        left(p_source, 256), left(p_reason, 4096), decided,
        floor(extract(epoch FROM greatest(decided, clock + cueline_decision_margin() + interval '1 millisecond')) * 1000)::bigint);
END;
$$;

DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION cueline_record_refusal(text, text, text, json, text, text, text, bigint) '
        'SET search_path = %I, pg_temp', current_schema());
END
$$;
