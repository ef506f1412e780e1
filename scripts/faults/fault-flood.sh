#!/usr/bin/env bash
# Flood check (issue 11, defects 7 and 8): 200 Server-Sent Events subscribers from the start of a 7,000-event log,
# 2,000 slowloris connections, and 6,000 idle connections beyond the connection cap, one after the other, while
# another channel's playlist is fetched every 50 ms; its p99 and maximum latency (request start to full body) must
# stay within the bounds in scripts/faults/flood.py, the slowloris connections must be closed by the header timeout, and
# the server's descriptors must stay under its cap; then 100 connections that send 120 requests each and read no
# answer: the server's memory must stay bounded. About 60 s.
set -euo pipefail
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/demo.sh"
cd "$(repo_root)"

ulimit -n "$(ulimit -Hn)"
throwaway_service
port=$(free_port 18600)
"$CUELINE" serve --port "$port" --unauthenticated-commands --header-timeout 5 --max-connections 3000 \
    --max-streams-per-token 200 --max-streams 400 >>"$SCRATCH/serve.log" 2>&1 &
server=$!
BACKGROUND_PIDS+=("$server")
wait_http "http://127.0.0.1:$port/readyz" 30 || { tail -20 "$SCRATCH/serve.log" >&2; die "cueline serve did not start"; }
for channel in busy quiet; do
    "$CUELINE" channel create "$channel" --segment-duration 1 --window 6 --rendition 720p,1000000,720p/seg{n}.ts >/dev/null
done

# 7,000 events on "busy" through the append function itself (HTTP would take a minute on a debug build), 500 per
# transaction. BreakCancelled of breaks that never existed: the follower folds them as no-ops.
python3 - >"$SCRATCH/fill.sql" <<'PY'
for batch in range(14):
    print(f"""DO $$ BEGIN FOR i IN {batch * 500 + 1}..{batch * 500 + 500} LOOP
  PERFORM cueline_append('busy', -1, 'flood-' || i, 'flood', 'flood', 'flood', NULL,
    (extract(epoch FROM clock_timestamp()) * 1000)::bigint + 500,
    json_build_array(json_build_object('type', 'BreakCancelled', 'schema_version', 1,
      'payload', json_build_object('id', 'none-' || i)::text)));
END LOOP; END $$;""")
PY
"$CUELINE_PGBIN/psql" "$DATABASE_URL" -q -v ON_ERROR_STOP=1 -f "$SCRATCH/fill.sql" || die "filling the busy channel failed"
events=$("$CUELINE_PGBIN/psql" "$DATABASE_URL" -Atc "SELECT version FROM cueline_streams WHERE channel = 'busy'")
sleep 1.5
log "flooding: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
python3 scripts/faults/flood.py ${FLOOD_PHASES:+--phases $FLOOD_PHASES} --url "http://127.0.0.1:$port" --pid "$server" --busy busy --events "$events" --quiet quiet \
    --header-timeout 5 --max-connections 3000 || { tail -20 "$SCRATCH/serve.log" >&2; die "the server did not hold under the floods"; }
