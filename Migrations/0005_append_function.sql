-- The write path as one database function, and a service role that can only call it and read.
--
-- Before this migration the service role could INSERT events with any decision time and a hash it computed itself,
-- and UPDATE the streams table: a forged, backdated event passed `cueline verify`. Now:
--   * cueline_append() is the only way to write an event. It locks the stream, checks the expected version,
--     answers a retry from its idempotency record, takes positions from the log head, checks the decision time
--     against the database clock (after taking the log head's lock, so a watermark reader cannot miss it),
--     computes the hash link itself, records the command and sends the NOTIFY hint: one round trip.
--   * cueline_watermark() returns the log head and an instant W such that every event decided at or before W
--     is at or below that head. Instances serve the playlist of tick T only once they know the log up to T,
--     so replay gives back exactly what was served even when commits are slow.
--   * the service role (cueline_app) keeps SELECT and EXECUTE; INSERT/UPDATE on the log tables are revoked.
--   * idempotency keys are scoped to the channel and the actor (the token's name): one channel's token can no
--     longer make another channel's command answer 409.
--
-- What the service role writes is checked by the database, not only by the service (issue 11, red team):
--   * cueline_append refuses events of the schedule's types that this build could not read back or that contradict
--     their own decision time: a payload that is not an object of that type's shape, a second ChannelCreated (it
--     would change a running channel's clock), a break starting more than a minute before it was decided or more
--     than 7 days after (a "ghost" break that aired before anyone placed it would otherwise be reported by
--     as-run). Other types pass: a newer build may write them, and readers skip what they cannot read;
--   * cueline_watermark waits at most 5 s for the log head: a transaction holding it longer (a bug, or a stolen
--     service credential) cannot freeze every channel's playlists; the follower then serves by the wall clock;
--   * refused commands and render samples go through functions that stamp or bound their times by the database
--     clock; the service role can no longer insert them directly (a backdated refusal, or a sample dated
--     'infinity' that made `cueline verify` abort for every channel).

ALTER TABLE cueline_commands ADD COLUMN actor text NOT NULL DEFAULT '';
ALTER TABLE cueline_commands DROP CONSTRAINT cueline_commands_pkey;
ALTER TABLE cueline_commands ADD CONSTRAINT cueline_commands_scope UNIQUE (channel, actor, command_id);

-- The quoting HashChain.swift uses: a JSON string with `"` and `\` escaped and C0 controls as \u00xx.
CREATE FUNCTION cueline_hash_quote(value text) RETURNS text LANGUAGE plpgsql IMMUTABLE STRICT AS $$
DECLARE
    quoted text := replace(replace(value, '\', '\\'), '"', '\"');
BEGIN
    IF quoted ~ '[\x01-\x1f]' THEN
        FOR code IN 1..31 LOOP
            quoted := replace(quoted, chr(code), '\u' || lpad(to_hex(code), 4, '0'));
        END LOOP;
    END IF;
    RETURN '"' || quoted || '"';
END;
$$;

CREATE FUNCTION cueline_check_event(p_channel text, p_version bigint, p_type text, p_payload json, p_decided timestamptz)
RETURNS void LANGUAGE plpgsql STABLE AS $$
DECLARE
    identifier constant text := '^[a-z0-9][a-z0-9_-]{0,63}$';
    start_at timestamptz;
BEGIN
    IF json_typeof(p_payload) IS DISTINCT FROM 'object' THEN
        RAISE EXCEPTION 'event % payload must be a JSON object', p_type USING ERRCODE = '22023';
    END IF;
    IF p_type = 'ChannelCreated' AND p_version <> 1 THEN
        RAISE EXCEPTION 'a channel is created once: ChannelCreated at version %', p_version USING ERRCODE = '22023';
    END IF;
    CASE p_type
    WHEN 'ChannelCreated' THEN
        IF p_payload ->> 'id' IS DISTINCT FROM p_channel THEN
            RAISE EXCEPTION 'ChannelCreated is for channel %, not %', p_payload ->> 'id', p_channel USING ERRCODE = '22023';
        END IF;
    WHEN 'RenditionsUpdated' THEN
        IF json_typeof(p_payload -> 'renditions') IS DISTINCT FROM 'array' OR json_array_length(p_payload -> 'renditions') = 0 THEN
            RAISE EXCEPTION 'RenditionsUpdated needs a non-empty renditions array' USING ERRCODE = '22023';
        END IF;
    WHEN 'BreakPlaced' THEN
        IF coalesce(p_payload ->> 'id', '') !~ identifier
           OR json_typeof(p_payload -> 'plannedDurationMilliseconds') IS DISTINCT FROM 'number'
           OR (p_payload ->> 'plannedDurationMilliseconds')::numeric NOT BETWEEN 1 AND 3600000
           OR json_typeof(p_payload -> 'start') IS DISTINCT FROM 'string'
           OR json_typeof(p_payload -> 'asset') IS DISTINCT FROM 'object' THEN
            RAISE EXCEPTION 'BreakPlaced needs an id, a start, an asset and a planned duration of 1 ms to 1 h' USING ERRCODE = '22023';
        END IF;
        start_at := (p_payload ->> 'start')::timestamptz;
        IF start_at < p_decided - interval '1 minute' OR start_at > p_decided + interval '7 days 1 minute' THEN
            RAISE EXCEPTION 'a break decided at % cannot start at %', p_decided, start_at USING ERRCODE = '22023';
        END IF;
    WHEN 'PlayoutLimitSet' THEN
        IF coalesce(p_payload ->> 'id', '') !~ identifier
           OR json_typeof(p_payload -> 'limitMilliseconds') IS DISTINCT FROM 'number'
           OR (p_payload ->> 'limitMilliseconds')::numeric NOT BETWEEN 0 AND 3600000
           OR json_typeof(p_payload -> 'kind') IS DISTINCT FROM 'string' THEN
            RAISE EXCEPTION 'PlayoutLimitSet needs an id, a kind and a limit of 0 to 1 h' USING ERRCODE = '22023';
        END IF;
    WHEN 'BreakCancelled' THEN
        IF coalesce(p_payload ->> 'id', '') !~ identifier THEN
            RAISE EXCEPTION 'BreakCancelled needs an id' USING ERRCODE = '22023';
        END IF;
    ELSE
        IF p_type !~ '^[A-Z][A-Za-z0-9]{0,63}$' THEN
            RAISE EXCEPTION 'event type % is not a name', p_type USING ERRCODE = '22023';
        END IF;
    END CASE;
END;
$$;

-- SQLSTATEs raised (the store maps them to typed errors):
--   CL001 version conflict (DETAIL: the stream's version)    CL002 command id reused for another request
--   CL003 decision time not after the database clock (DETAIL: the database clock in ms): decide again
--   CL004 decision time too far ahead of the database clock   22023 a value the log cannot hold (message names it)
CREATE FUNCTION cueline_append(
    p_channel text, p_expected bigint, p_command_id text, p_request_hash text, p_actor text, p_source text,
    p_reason text, p_decided_ms bigint, p_events json,
    OUT result_version bigint, OUT replayed boolean, OUT first_position bigint, OUT last_position bigint,
    OUT hashes text[])
LANGUAGE plpgsql SECURITY DEFINER AS $$
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

    INSERT INTO cueline_streams (channel, version) VALUES (p_channel, 0) ON CONFLICT (channel) DO NOTHING;
    SELECT s.version, s.last_hash INTO current_version, previous_hash
        FROM cueline_streams s WHERE s.channel = p_channel FOR UPDATE;
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
    IF event_count > 0 THEN
        UPDATE cueline_log_head SET position = position + event_count RETURNING position INTO last_position;
        first_position := last_position - event_count + 1;
        clock := clock_timestamp();
        IF decided <= clock THEN
            RAISE EXCEPTION 'decision time % is not after the database clock %', decided_text,
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
            event_hash := encode(sha256(convert_to(previous_hash || E'\n[' || concat_ws(',',
                cueline_hash_quote(p_channel), (current_version + event.idx + 1)::text, cueline_hash_quote(event.type),
                event.schema_version::text, cueline_hash_quote(event.payload), cueline_hash_quote(decided_text),
                cueline_hash_quote(p_actor), cueline_hash_quote(p_source), cueline_hash_quote(p_command_id),
                coalesce(cueline_hash_quote(p_reason), 'null')) || ']', 'UTF8')), 'hex');
            INSERT INTO cueline_events (position, channel, version, type, schema_version, payload, decided_at, actor,
                source, command_id, reason, hash)
            VALUES (first_position + event.idx, p_channel, current_version + event.idx + 1, event.type,
                event.schema_version, event.payload::json, decided, p_actor, p_source, p_command_id, p_reason,
                event_hash);
            hashes := hashes || event_hash;
            previous_hash := event_hash;
        END LOOP;
        UPDATE cueline_streams SET version = result_version, last_hash = previous_hash WHERE channel = p_channel;
        PERFORM pg_notify('cueline_events', p_channel || ' ' || last_position);
    END IF;
    INSERT INTO cueline_commands (command_id, channel, actor, request_hash, result_version, first_position, last_position)
    VALUES (p_command_id, p_channel, p_actor, p_request_hash, result_version, first_position, last_position);
END;
$$;

-- The log head and an instant up to which the log is known: FOR SHARE waits for every append that holds the head
-- (they commit first, and this statement then sees their positions); an append that takes the head afterwards
-- reads the clock after this function did, and its decision time must be later than that reading.
CREATE FUNCTION cueline_watermark(OUT head bigint, OUT known_until_ms bigint)
LANGUAGE plpgsql SECURITY DEFINER SET lock_timeout = '5s' AS $$
BEGIN
    SELECT h.position INTO head FROM cueline_log_head h FOR SHARE;
    known_until_ms := floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint;
END;
$$;

-- A refused command, dated by the database clock (the caller's time is kept only if within 30 s of it).
CREATE FUNCTION cueline_record_refusal(
    p_channel text, p_command_id text, p_command text, p_request json, p_actor text, p_source text, p_reason text,
    p_decided_ms bigint)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER AS $$
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
$$;

-- Digests of served playlists: [{"channel", "tick_ms", "rendition", "renderer_version", "sha256"}], each for a tick
-- within 10 minutes of the database clock; a sample already recorded is kept.
CREATE FUNCTION cueline_record_samples(p_samples json) RETURNS void LANGUAGE plpgsql SECURITY DEFINER AS $$
BEGIN
    INSERT INTO cueline_render_samples (channel, tick, rendition, renderer_version, sha256)
    SELECT channel, timestamptz '1970-01-01 00:00:00+00' + tick_ms * interval '1 millisecond', rendition, renderer_version, sha256
    FROM (
        SELECT s ->> 'channel' AS channel, (s ->> 'tick_ms')::numeric AS tick_ms, s ->> 'rendition' AS rendition,
               (s ->> 'renderer_version')::numeric AS renderer_version, s ->> 'sha256' AS sha256,
               floor(extract(epoch FROM clock_timestamp()) * 1000) AS now_ms
        FROM json_array_elements(p_samples) AS s
    ) AS sample
    WHERE sha256 ~ '^[0-9a-f]{64}$' AND channel ~ '^[a-z0-9][a-z0-9_-]{0,63}$' AND rendition ~ '^[a-z0-9][a-z0-9_-]{0,63}$'
      AND renderer_version BETWEEN 1 AND 1000 AND tick_ms BETWEEN now_ms - 600000 AND now_ms + 600000
    ON CONFLICT (channel, tick, rendition) DO NOTHING;
END;
$$;

DO $$
BEGIN
    -- SECURITY DEFINER functions resolve names in the schema they were created in, never the caller's path.
    EXECUTE format('ALTER FUNCTION cueline_append(text, bigint, text, text, text, text, text, bigint, json) '
        'SET search_path = %I, pg_temp', current_schema());
    EXECUTE format('ALTER FUNCTION cueline_watermark() SET search_path = %I, pg_temp', current_schema());
    EXECUTE format('ALTER FUNCTION cueline_hash_quote(text) SET search_path = %I, pg_temp', current_schema());
    EXECUTE format('ALTER FUNCTION cueline_check_event(text, bigint, text, json, timestamptz) SET search_path = %I, pg_temp', current_schema());
    EXECUTE format('ALTER FUNCTION cueline_record_refusal(text, text, text, json, text, text, text, bigint) SET search_path = %I, pg_temp', current_schema());
    EXECUTE format('ALTER FUNCTION cueline_record_samples(json) SET search_path = %I, pg_temp', current_schema());
    REVOKE ALL ON FUNCTION cueline_append(text, bigint, text, text, text, text, text, bigint, json) FROM PUBLIC;
    REVOKE ALL ON FUNCTION cueline_watermark() FROM PUBLIC;
    REVOKE ALL ON FUNCTION cueline_record_refusal(text, text, text, json, text, text, text, bigint) FROM PUBLIC;
    REVOKE ALL ON FUNCTION cueline_record_samples(json) FROM PUBLIC;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'cueline_app') THEN
        REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON cueline_events, cueline_commands, cueline_streams, cueline_log_head,
            cueline_refusals, cueline_render_samples FROM cueline_app;
        GRANT SELECT ON cueline_events, cueline_commands, cueline_streams, cueline_log_head, cueline_refusals,
            cueline_render_samples TO cueline_app;
        GRANT EXECUTE ON FUNCTION cueline_append(text, bigint, text, text, text, text, text, bigint, json),
            cueline_watermark(), cueline_record_refusal(text, text, text, json, text, text, text, bigint),
            cueline_record_samples(json) TO cueline_app;
    END IF;
END
$$;
