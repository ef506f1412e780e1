-- Generated, do not edit: cueline_record_samples as 0005_append_function.sql leaves it (scripts/ci/check-sql-functions.sh --write)
CREATE OR REPLACE FUNCTION public.cueline_record_samples(p_samples json)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
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
$function$;
