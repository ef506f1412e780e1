-- Generated, do not edit: cueline_append as 0013_lock_order.sql leaves it (scripts/ci/check-sql-functions.sh --write)
CREATE OR REPLACE FUNCTION public.cueline_append(p_channel text, p_expected bigint, p_command_id text, p_request_hash text, p_actor text, p_source text, p_reason text, p_decided_ms bigint, p_events json, OUT result_version bigint, OUT replayed boolean, OUT first_position bigint, OUT last_position bigint, OUT hashes text[], OUT positions bigint[])
 RETURNS record
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET lock_timeout TO '5s'
 SET search_path TO 'public', 'pg_temp'
AS $function$
DECLARE
    current_version bigint;
    previous_hash text;
    previous record;
    event_count integer;
    decided timestamptz;
    decided_text text;
    clock timestamptz;
    event record;
    event_hash text;
    event_position bigint;
BEGIN
    IF p_channel IS NULL OR p_channel !~ '^[a-z0-9][a-z0-9_-]{0,63}$' THEN
        RAISE EXCEPTION 'channel must be 1-64 characters of a-z, 0-9, ''-'' or ''_'', starting with a letter or digit'
            USING ERRCODE = '22023';
    END IF;
    IF p_command_id IS NULL OR length(p_command_id) NOT BETWEEN 1 AND 256 OR p_command_id ~ '[\x01-\x1f\x7f]' THEN
        RAISE EXCEPTION 'command_id must be 1-256 characters without control characters' USING ERRCODE = '22023';
    END IF;
    IF p_actor IS NULL OR length(p_actor) NOT BETWEEN 1 AND 256 OR p_actor ~ '[\x01-\x1f\x7f]' THEN
        RAISE EXCEPTION 'actor must be 1-256 characters without control characters' USING ERRCODE = '22023';
    END IF;
    IF p_source IS NULL OR length(p_source) NOT BETWEEN 1 AND 256 OR p_source ~ '[\x01-\x1f\x7f]' THEN
        RAISE EXCEPTION 'source must be 1-256 characters without control characters' USING ERRCODE = '22023';
    END IF;
    IF p_reason IS NOT NULL AND (length(p_reason) > 4096 OR p_reason ~ '[\x01-\x1f\x7f]') THEN
        RAISE EXCEPTION 'reason must be at most 4096 characters without control characters' USING ERRCODE = '22023';
    END IF;
    IF p_decided_ms IS NULL OR p_request_hash IS NULL OR p_expected IS NULL OR json_typeof(p_events) IS DISTINCT FROM 'array' THEN
        RAISE EXCEPTION 'decided_ms, request_hash, expected and events are required' USING ERRCODE = '22023';
    END IF;
    decided := timestamptz '1970-01-01 00:00:00+00' + p_decided_ms * interval '1 millisecond';
    decided_text := to_char(decided AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"');
    event_count := json_array_length(p_events);

    -- The rest of a caller's transaction may not sit idle holding what this takes: its session ends after 1 s idle
    -- (the server's own calls are single statements; a client calling this inside BEGIN and stopping there would
    -- otherwise hold the log head, and with it every watermark and so every channel's appends, until it commits).
    PERFORM set_config('idle_in_transaction_session_timeout', '1000', true);
    -- The channel's own row first, waiting at most 2 s for it: a transaction holding it (another instance's append,
    -- an operator's SELECT ... FOR UPDATE) holds up this channel's commands only, which are refused 503 with nothing
    -- written, never another channel's. Nothing shared across channels is held while it waits.
    PERFORM set_config('lock_timeout', '2s', true);
    INSERT INTO cueline_streams (channel, version) VALUES (p_channel, 0) ON CONFLICT (channel) DO NOTHING;
    SELECT s.version, s.last_hash INTO current_version, previous_hash
        FROM cueline_streams s WHERE s.channel = p_channel FOR UPDATE;
    PERFORM set_config('lock_timeout', '5s', true);
    -- Then the log head, held to the commit: appends share this mode, so they run side by side; cueline_watermark's
    -- SHARE mode waits for every append that holds it, and an append arriving after the watermark waits for it (then
    -- reads a later clock). Always after the stream row, never before: an append waiting on a row holds nothing the
    -- watermark waits for, and one holding the head waits on nothing but its own work, so there is no cycle.
    LOCK TABLE cueline_log_head IN ROW EXCLUSIVE MODE;
    previous_hash := coalesce(previous_hash, encode(sha256(convert_to('cueline-chain-v1:' || p_channel, 'UTF8')), 'hex'));

    SELECT c.request_hash, c.result_version, c.first_position, c.last_position INTO previous
        FROM cueline_commands c WHERE c.channel = p_channel AND c.actor = p_actor AND c.command_id = p_command_id;
    IF FOUND THEN
        IF previous.request_hash <> p_request_hash THEN
            RAISE EXCEPTION 'command id % was already used for a different request', p_command_id USING ERRCODE = 'CL002';
        END IF;
        result_version := previous.result_version;
        replayed := true;
        first_position := previous.first_position;
        last_position := previous.last_position;
        RETURN;
    END IF;

    IF p_expected >= 0 AND p_expected <> current_version THEN
        RAISE EXCEPTION 'channel % is at version %, not %', p_channel, current_version, p_expected
            USING ERRCODE = 'CL001', DETAIL = current_version::text;
    END IF;

    replayed := false;
    result_version := current_version + event_count;
    hashes := '{}';
    positions := '{}';
    IF event_count > 0 THEN
        clock := clock_timestamp();
        IF decided <= clock + cueline_decision_margin() THEN
            RAISE EXCEPTION 'decision time % is not 20 ms after the database clock %', decided_text,
                to_char(clock AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
                USING ERRCODE = 'CL003', DETAIL = floor(extract(epoch FROM clock) * 1000)::bigint::text;
        END IF;
        IF decided > clock + interval '30 seconds' THEN
            RAISE EXCEPTION 'decision time % is more than 30 s ahead of the database clock %', decided_text,
                to_char(clock AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
                USING ERRCODE = 'CL004', DETAIL = floor(extract(epoch FROM clock) * 1000)::bigint::text;
        END IF;
        FOR event IN
            SELECT value ->> 'type' AS type, (value ->> 'schema_version')::integer AS schema_version,
                   value ->> 'payload' AS payload, ordinality - 1 AS idx
            FROM json_array_elements(p_events) WITH ORDINALITY
        LOOP
            IF event.type IS NULL OR event.schema_version IS NULL OR event.schema_version NOT BETWEEN 1 AND 1000
               OR event.payload IS NULL THEN
                RAISE EXCEPTION 'event % needs a type, a schema_version and a payload', event.idx + 1
                    USING ERRCODE = '22023';
            END IF;
            PERFORM cueline_check_event(p_channel, current_version + event.idx + 1, event.type, event.payload::json, decided);
            -- Taken under the stream's lock: a channel's positions grow with its versions.
            event_position := nextval('cueline_positions');
            event_hash := encode(sha256(convert_to(previous_hash || E'\n[' || concat_ws(',',
                cueline_hash_quote(p_channel), (current_version + event.idx + 1)::text, cueline_hash_quote(event.type),
                event.schema_version::text, cueline_hash_quote(event.payload), cueline_hash_quote(decided_text),
                cueline_hash_quote(p_actor), cueline_hash_quote(p_source), cueline_hash_quote(p_command_id),
                coalesce(cueline_hash_quote(p_reason), 'null')) || ']', 'UTF8')), 'hex');
            INSERT INTO cueline_events (position, channel, version, type, schema_version, payload, decided_at, actor,
                source, command_id, reason, hash)
            VALUES (event_position, p_channel, current_version + event.idx + 1, event.type,
                event.schema_version, event.payload::json, decided, p_actor, p_source, p_command_id, p_reason,
                event_hash);
            hashes := hashes || event_hash;
            positions := positions || event_position;
            previous_hash := event_hash;
        END LOOP;
        first_position := positions[1];
        last_position := positions[event_count];
        UPDATE cueline_streams SET version = result_version, last_hash = previous_hash WHERE channel = p_channel;
    END IF;
    INSERT INTO cueline_commands (command_id, channel, actor, request_hash, result_version, first_position, last_position)
    VALUES (p_command_id, p_channel, p_actor, p_request_hash, result_version, first_position, last_position);
END;
$function$;
