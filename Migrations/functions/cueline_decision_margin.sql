-- Generated, do not edit: cueline_decision_margin as 0012_watermark_ahead.sql leaves it (scripts/ci/check-sql-functions.sh --write)
CREATE OR REPLACE FUNCTION public.cueline_decision_margin()
 RETURNS interval
 LANGUAGE sql
 IMMUTABLE
 SET search_path TO 'public', 'pg_temp'
AS $function$ SELECT interval '20 milliseconds' $function$;
