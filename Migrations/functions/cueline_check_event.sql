-- Generated, do not edit: cueline_check_event as 0005_append_function.sql leaves it (scripts/ci/check-sql-functions.sh --write)
CREATE OR REPLACE FUNCTION public.cueline_check_event(p_channel text, p_version bigint, p_type text, p_payload json, p_decided timestamp with time zone)
 RETURNS void
 LANGUAGE plpgsql
 STABLE
 SET search_path TO 'public', 'pg_temp'
AS $function$
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
$function$;
