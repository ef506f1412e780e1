#!/usr/bin/env bash
# Checks that Migrations/functions/ shows every SQL function as the migrations leave it: applies Migrations/*.sql to a
# throwaway PostgreSQL, one migration after the other, prints each function (trigger functions and procedures too) of
# the database's user schemas with pg_get_functiondef, and compares the result with Migrations/functions/<name>.sql
# (overloads share their name's file, sorted by argument types; a schema other than the migrations' prefixes the name).
# Each file's header names the last migration that changed the function as printed. Extension-owned functions are left
# out; an aggregate is refused (pg_get_functiondef cannot print one).
# Migrations are applied by "$CUELINE_BIN" migrate when CUELINE_BIN is set (scripts/test.sh), else by psql exactly as
# the migrator does: the cueline_migrations table first, then each file as one PQexec in its own transaction, with its
# record, in a session set up as the migrator's.
# Exit 1 with a unified diff on a difference, including a function present on one side only.
# Usage: scripts/ci/check-sql-functions.sh [--write]   (--write rewrites Migrations/functions/ instead of comparing)
set -euo pipefail
source "$(dirname "$0")/../lib/common.sh"
cd "$(repo_root)"

write=0
while [ $# -gt 0 ]; do
    case $1 in
        --write) write=1; shift ;;
        -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown argument $1 (see --help)" ;;
    esac
done

fix_command="scripts/ci/check-sql-functions.sh --write"
target=Migrations/functions

# The migrations, as the migrator loads them: every *.sql directly in Migrations/ (not in subfolders), each named
# NNNN_words.sql, in order, no number used twice.
migrations=()
while IFS= read -r name; do
    [[ $name =~ ^[0-9]{4}_[a-z0-9_]+\.sql$ && ${name:0:4} != 0000 ]] \
        || die "Migrations/$name is not named NNNN_description.sql (the migrator refuses it)"
    migrations+=("$name")
done < <(cd Migrations && find . -mindepth 1 -maxdepth 1 -name '*.sql' -printf '%f\n' | LC_ALL=C sort)
[ ${#migrations[@]} -gt 0 ] || die "no migrations in Migrations/"
duplicate=$(printf '%s\n' "${migrations[@]}" | cut -c1-4 | uniq -d | head -n 1)
[ -z "$duplicate" ] || die "migration number $duplicate is used by several files"

scratch=$(mktemp -d /tmp/cueline-sql-functions.XXXXXX)
chmod 755 "$scratch"
unset CUELINE_PGDATA   # inherited from a caller's cluster (scripts/test.sh): stop_cluster stops only this script's own
trap 'stop_cluster; rm -rf "$scratch"' EXIT
start_cluster "$scratch/pg"

psql_run() { "$CUELINE_PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -d "$DATABASE_URL" "$@"; }

if [ -n "${CUELINE_BIN:-}" ]; then
    [ -x "$CUELINE_BIN" ] || die "CUELINE_BIN=$CUELINE_BIN is not an executable"
    log "applying ${#migrations[@]} migrations one by one with $CUELINE_BIN migrate"
    mkdir "$scratch/migrations"
    apply() {
        ln -s "$PWD/Migrations/$1" "$scratch/migrations/$1"
        "$CUELINE_BIN" migrate --database-url "$DATABASE_URL" --migrations "$scratch/migrations" >"$scratch/migrate.log" 2>&1 \
            || { cat "$scratch/migrate.log" >&2; die "cueline migrate failed at $1"; }
    }
else
    log "applying ${#migrations[@]} migrations one by one with psql, as the migrator does (set CUELINE_BIN to use cueline migrate)"
    # Sources/Postgres/PostgresConnection.swift (setUpSession) and Sources/EventStore/Migrator.swift (migrate).
    session="SET TIME ZONE 'UTC'; SET DateStyle = 'ISO'; SET client_encoding = 'UTF8'; SET client_min_messages = 'warning'"
    psql_run -c "$session" -c "CREATE TABLE IF NOT EXISTS cueline_migrations (
        version integer PRIMARY KEY, name text NOT NULL, checksum text NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT now())" >/dev/null
    apply() {
        local sql checksum
        sql=$(cat "Migrations/$1"; printf x); sql=${sql%x}   # the file's bytes, trailing newlines kept
        checksum=$(sha256sum "Migrations/$1" | cut -d' ' -f1)
        # psql -c sends each string as is, in one PQexec: no psql variables or backslash commands, as the migrator.
        psql_run -c "$session" -c "BEGIN ISOLATION LEVEL READ COMMITTED" -c "$sql" \
            -c "INSERT INTO cueline_migrations (version, name, checksum) VALUES ($((10#${1:0:4})), '$1', '$checksum')" \
            -c "COMMIT" >/dev/null 2>"$scratch/migrate.log" \
            || { cat "$scratch/migrate.log" >&2; die "migration $1 failed"; }
    }
fi

# One row per file: its name, tab, the md5 of its definitions, tab, the definitions in base64 (on one line).
# Files are named after the function; overloads share a file, in the order of their argument types.
functions_query="
WITH f AS (
    SELECT CASE WHEN n.nspname = current_schema() THEN '' ELSE n.nspname || '.' END || p.proname || '.sql' AS file,
           pg_get_function_identity_arguments(p.oid) AS arguments,
           CASE WHEN p.prokind = 'a' THEN NULL ELSE pg_get_functiondef(p.oid) END AS definition
    FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
    WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname !~ '^pg_(toast|temp_)'
      AND NOT EXISTS (SELECT 1 FROM pg_depend d
                      WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e')
), files AS (
    SELECT file, bool_or(definition IS NULL) AS aggregate,
           string_agg(rtrim(definition, E'\n') || E';\n', E'\n' ORDER BY arguments COLLATE \"C\") AS content
    FROM f GROUP BY file
)
SELECT file || E'\t' || CASE WHEN aggregate THEN 'aggregate' ELSE md5(content) END || E'\t'
       || coalesce(translate(encode(convert_to(content, 'UTF8'), 'base64'), E'\n', ''), '')
FROM files ORDER BY file COLLATE \"C\""

declare -A last_change=() fingerprint=()
for name in "${migrations[@]}"; do
    apply "$name"
    while IFS=$'\t' read -r file sum _; do
        [ "$sum" != aggregate ] || die "${file%.sql} is an aggregate (after $name): pg_get_functiondef cannot print it"
        [[ $file =~ ^[A-Za-z0-9_.$-]+$ ]] || die "function file name $file is not a plain name"
        if [ "${fingerprint[$file]:-}" != "$sum" ]; then
            fingerprint[$file]=$sum
            last_change[$file]=$name
        fi
    done < <(psql_run -A -t -c "$functions_query")
done

mkdir "$scratch/functions"
count=0
while IFS=$'\t' read -r file _ content; do
    {
        printf -- '-- Generated, do not edit: %s as %s leaves it (%s)\n' "${file%.sql}" "${last_change[$file]}" "$fix_command"
        printf '%s' "$content" | base64 -d
    } >"$scratch/functions/$file"
    count=$((count + 1))
done < <(psql_run -A -t -c "$functions_query")

# Every file on either side, sorted; a side without a file compares as /dev/null.
mapfile -t files < <({ ls "$scratch/functions"; [ -d "$target" ] && find "$target" -maxdepth 1 -type f -name '*.sql' -printf '%f\n'; } \
    | LC_ALL=C sort -u)

if [ "$write" = 1 ]; then
    mkdir -p "$target"
    changed=0
    for file in "${files[@]}"; do
        if [ ! -e "$scratch/functions/$file" ]; then
            rm "$target/$file"; log "removed $target/$file"; changed=$((changed + 1))
        elif ! cmp -s "$scratch/functions/$file" "$target/$file"; then
            cp "$scratch/functions/$file" "$target/$file"; log "wrote $target/$file"; changed=$((changed + 1))
        fi
    done
    log "$target: $count functions from ${#migrations[@]} migrations, $changed files changed"
    exit 0
fi

status=0
for file in "${files[@]}"; do
    old="$target/$file" old_label="$target/$file (in the tree)"
    new="$scratch/functions/$file" new_label="$target/$file (as the migrations leave it)"
    [ -e "$old" ] || { old=/dev/null; old_label="$target/$file (not in the tree)"; }
    [ -e "$new" ] || { new=/dev/null; new_label="$target/$file (no such function after the migrations)"; }
    diff -u --label "$old_label" --label "$new_label" "$old" "$new" || status=1
done
if [ "$status" != 0 ]; then
    printf '\nerror: %s does not show the functions as the migrations leave them (diff above).\n' "$target" >&2
    printf 'Change a function in a new migration, never in these files; then run: %s\n' "$fix_command" >&2
    exit 1
fi
log "$target: the $count functions match the ${#migrations[@]} migrations"
