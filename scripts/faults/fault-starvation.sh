#!/usr/bin/env bash
# Starvation check (issue 34): no client class starves another. Five attacks, one after the other, each while an
# unrelated channel's playlist is fetched from a new connection every 50 ms (>= 99 % 200, p99 < 100 ms) and, where
# the attack has one, another tenant's reads or commands are measured (scripts/faults/starvation.py states the bounds):
#   held      1,100 connections from one address holding LL-HLS blocking reloads on a server capped at 1,000,
#             asking again when refused (the report's 4,200 over 4,096: STARVATION_HELD=4200 STARVATION_HELD_CAP=4096)
#   bodies    320 connections sending request bodies at one byte a second, on a server capped at 300 connections
#   schedule  8 loops of a viewer reading the schedule of a channel holding $STARVATION_BREAKS future breaks
#   audit     6 loops of one token's as-run reads of that channel; another tenant's as-run reads must be answered
#   lock      a transaction holds one channel's row in the log for 15 s; commands on other channels p99 < 200 ms
# Usage: scripts/faults/fault-starvation.sh [attack ...]   (default all five; about 3 minutes)
set -euo pipefail
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/demo.sh"
cd "$(repo_root)"

attacks=("$@")
[ ${#attacks[@]} -gt 0 ] || attacks=(held bodies schedule audit lock)
breaks=${STARVATION_BREAKS:-20000}
ulimit -n "$(ulimit -Hn)"
throwaway_service
port=$(free_port 18800)
"$CUELINE" serve --port "$port" ${STARVATION_SERVE_ARGS:-} >>"$SCRATCH/serve.log" 2>&1 &
server=$!
BACKGROUND_PIDS+=("$server")
wait_http "http://127.0.0.1:$port/readyz" 30 || { tail -20 "$SCRATCH/serve.log" >&2; die "cueline serve did not start"; }
for channel in quiet big locked; do
    "$CUELINE" channel create "$channel" --segment-duration 1 --window 6 --rendition 720p,1000000,720p/seg{n}.ts >/dev/null
done
"$CUELINE" channel create ll --segment-duration 1 --part-duration 0.25 --window 8 \
    --rendition 720p,1000000,720p/seg{n}.m4s --part 720p=720p/seg{n}.{p}.m4s >/dev/null
ops=$("$CUELINE" token create ops --role operator)
tenant_a=$("$CUELINE" token create tenant-a --role viewer --channel big)
tenant_b=$("$CUELINE" token create tenant-b --role viewer --channel quiet)

# The big channel: one break placed through the CLI gives the payload; the rest are copies of it through the append
# function (HTTP would take minutes on a debug build), 500 to a transaction, from an hour ahead.
"$CUELINE" break place big --id template --in 3600s --duration 4s --asset-list http://127.0.0.1:1/list.json >/dev/null
python3 - "$breaks" >"$SCRATCH/fill.sql" <<'PY'
import sys
total = int(sys.argv[1])
# Within the 7 days ahead a break may start: 20 s apart, closer for more (5 s at least: the breaks last 4 s).
spacing = max(5, min(20, 500_000 // max(1, total)))
for batch in range(0, total, 500):
    print(f"""DO $$ DECLARE template jsonb := (SELECT payload::jsonb FROM cueline_events WHERE channel = 'big' AND type = 'BreakPlaced' LIMIT 1);
BEGIN FOR i IN {batch + 1}..{min(total, batch + 500)} LOOP
  PERFORM cueline_append('big', -1, 'fill-' || i, 'fill', 'fill', 'fill', NULL,
    (extract(epoch FROM clock_timestamp()) * 1000)::bigint + 500,
    json_build_array(json_build_object('type', 'BreakPlaced', 'schema_version', 1,
      'payload', jsonb_set(jsonb_set(template, '{{id}}', to_jsonb('fill-' || i)), '{{start}}',
        to_jsonb(to_char((now() + interval '3700 seconds' + i * interval '{spacing} seconds') AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')))::text)));
END LOOP; END $$;""")
PY
started=$(date +%s)
"$CUELINE_PGBIN/psql" "$DATABASE_URL" -q -v ON_ERROR_STOP=1 -f "$SCRATCH/fill.sql" || die "filling the big channel failed"
log "the big channel holds $("$CUELINE_PGBIN/psql" "$DATABASE_URL" -Atc "SELECT version FROM cueline_streams WHERE channel = 'big'") events ($(( $(date +%s) - started )) s to write)"
wait_http "http://127.0.0.1:$port/channels/ll/720p.m3u8" 30 || die "the LL channel did not start"

failed=0
for attack in "${attacks[@]}"; do
    log "attack: $attack ($(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg))"
    case $attack in
        held)
            # A server of its own whose cap the attack exceeds, as 4,200 exceeded the default 4,096 in the report;
            # at the default scale the attack's own answers take the debug build's two cores (STARVATION_HELD_CAP=4096
            # STARVATION_HELD=4200 runs it).
            held_port=$(free_port $((port + 2)))
            "$CUELINE" serve --port "$held_port" --max-connections "${STARVATION_HELD_CAP:-1000}" >>"$SCRATCH/serve-held.log" 2>&1 &
            BACKGROUND_PIDS+=("$!")
            wait_http "http://127.0.0.1:$held_port/channels/ll/720p.m3u8" 30 || die "the held-reload server did not start"
            args=(--target ll --connections "${STARVATION_HELD:-1100}") ;;
        bodies)
            # A server of its own, capped at 300 connections, as in the report.
            bodies_port=$(free_port $((port + 1)))
            "$CUELINE" serve --port "$bodies_port" --max-connections 300 --unauthenticated-commands >>"$SCRATCH/serve-bodies.log" 2>&1 &
            BACKGROUND_PIDS+=("$!")
            wait_http "http://127.0.0.1:$bodies_port/readyz" 30 || die "the capped server did not start"
            args=(--connections 320) ;;
        schedule) args=(--target big --attacker-token "$tenant_a" --tenant-token "$tenant_b" --tenant-path /channels/quiet/schedule) ;;
        audit) args=(--target big --attacker-token "$tenant_a" --tenant-token "$tenant_b" --tenant-path /channels/quiet/as-run) ;;
        lock) args=(--target locked --database-url "$DATABASE_URL" --psql "$CUELINE_PGBIN/psql" --tenant-token "$ops") ;;
        *) die "unknown attack $attack" ;;
    esac
    target_port=$port
    [ "$attack" = bodies ] && target_port=$bodies_port
    [ "$attack" = held ] && target_port=$held_port
    if ! python3 scripts/faults/starvation.py --attack "$attack" --port "$target_port" "${args[@]}"; then
        log "FAIL: $attack"
        failed=1
    fi
    kill -0 "$server" 2>/dev/null || { tail -20 "$SCRATCH/serve.log" >&2; die "the server died under $attack"; }
done
[ "$failed" -eq 0 ] || { tail -20 "$SCRATCH/serve.log" >&2; die "a class of clients starved another (the lines above)"; }
log "PASS: under each attack the unrelated playlist and the other tenant were served"
