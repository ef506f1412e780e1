-- Generated, do not edit: cueline_hash_quote as 0005_append_function.sql leaves it (scripts/ci/check-sql-functions.sh --write)
CREATE OR REPLACE FUNCTION public.cueline_hash_quote(value text)
 RETURNS text
 LANGUAGE plpgsql
 IMMUTABLE STRICT
 SET search_path TO 'public', 'pg_temp'
AS $function$
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
$function$;
