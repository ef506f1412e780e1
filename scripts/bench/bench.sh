#!/usr/bin/env bash
# Benchmarks with a fixed method, each against a baseline measured in the same run. Appends a dated run to
# Benchmarks/results.md (earlier runs stay: the record of what was measured when).
#   render  : PlaylistRenderer vs a naive Foundation renderer producing the same bytes (cueline-bench)
#   replay  : replay --at cost against log length in memory, and from PostgreSQL a year of history (~110,000 events)
#             vs a day: full-log read + fold vs from the latest checkpoint (cueline-replay-bench)
#   serve   : playlist requests/s from `cueline serve` vs nginx serving the same bytes as a static file (wrk, 10 s)
#   append  : commands/s through the full HTTP command path vs pgbench inserting a row of the same size (10 s, 1 client),
#             and the stack's floor (cueline-append-floor: Hummingbird + libpq, one INSERT per POST)
#   latency : from a command's acknowledgement to the changed playlist being served (p50/p99 of 40 commands)
#   retention: tick cost and playlist bytes with 10,000 breaks vs none, state memory after 100,000 events vs 100
#   scale   : channels one instance keeps on time: 10,000 x 3 renditions vs 100 (cueline-scale-bench, 30 s each)
#   ads     : asset lists with the ad server in the loop vs the ad server alone; 1,000 viewers joining in one second
#             at the ad server's concurrency limit (scripts/bench/bench-ads.sh)
set -euo pipefail
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/demo.sh"
cd "$(repo_root)"

ensure_build_deps
apt_install wrk nginx curl
out=Benchmarks/results.md
bench_setup bench

# BENCH_ONLY=http: only serve, append and change latency, appended to the results already there.
[ "${BENCH_ONLY:-}" = http ] || {
    echo
    echo "# Run of $(date -u +%Y-%m-%dT%H:%MZ)"
    echo
    echo "Machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB, $(uname -m); $(date -u +%Y-%m-%d); \`scripts/bench/bench.sh\`."
    echo
    echo '## render'
    echo '```'
    "$bin/cueline-bench" --seconds 3
    echo '```'
    echo
    echo '## replay'
    echo '```'
    DATABASE_URL="$DATABASE_URL" "$bin/cueline-replay-bench"
    echo '```'
    echo
    echo '## retention'
    echo
    "$bin/cueline-retention-bench"
    echo
    echo '## scale'
    echo
    "$bin/cueline-scale-bench" 10000 30 2>/dev/null
    echo
    # The acceptance of issue 12: every boundary aligned (and epochs on 6 phases) while 200 clients poll.
    "$bin/cueline-scale-bench" 10000 30 1 2>/dev/null
    echo
    "$bin/cueline-scale-bench" 10000 30 6 2>/dev/null
} >>"$out"
[ "${BENCH_ONLY:-}" = http ] && printf '\n(serve, append and change latency below: a later run, %s)\n' "$(date -u +%Y-%m-%dT%H:%MZ)" >>"$out"

port=$(free_port 18700)
base="http://127.0.0.1:$port"
CUELINE_LOG_LEVEL=warning "$bin/cueline" serve --port "$port" --unauthenticated-commands >"$pgdir/serve.log" 2>&1 & pids+=($!)
wait_http "$base/readyz" 30 || die "the server did not start"
"$bin/cueline" channel create bench --segment-duration 6 --window 10 \
    --rendition 1080p,5000000,1080p/seg{n}.ts --rendition 720p,2800000,720p/seg{n}.ts --rendition 360p,800000,360p/seg{n}.ts >/dev/null
sleep 0.3
curl -fs -X POST -H 'Content-Type: application/json' -o /dev/null \
    -d '{"command":"place_break","id":"warm","in":60,"duration":30,"asset_uri":"https://ads.example.com/a.m3u8"}' "$base/channels/bench/commands"
sleep 0.3

# serve: the same bytes from nginx as a static file.
mkdir -p "$pgdir/www/channels/bench"
curl -fs "$base/channels/bench/720p.m3u8" >"$pgdir/www/channels/bench/720p.m3u8"
nport=$(free_port $((port + 1)))
cat >"$pgdir/nginx.conf" <<NGINX
worker_processes 2;
pid $pgdir/nginx.pid;
error_log $pgdir/nginx-error.log;
events { worker_connections 1024; }
http {
    access_log off;
    types { application/vnd.apple.mpegurl m3u8; }
    server { listen 127.0.0.1:$nport; root $pgdir/www; }
}
NGINX
chmod -R a+rX "$pgdir/www"
nginx -c "$pgdir/nginx.conf" -g 'daemon off; user root;' & pids+=($!)
wait_http "http://127.0.0.1:$nport/channels/bench/720p.m3u8" 10 || die "nginx did not start"
rps() { wrk -t2 -c50 -d10s "$1" | awk '/Requests\/sec/ {print $2}'; }
nginx_rps=$(rps "http://127.0.0.1:$nport/channels/bench/720p.m3u8")
cueline_rps=$(rps "$base/channels/bench/720p.m3u8")
# The same playlist through the router (a query string takes it past the event loop's fast path): what the fast path saves.
router_rps=$(rps "$base/channels/bench/720p.m3u8?via=router")

# append: the full command path (HTTP, decide, append with version check, hash chain, idempotency record; the hint;
# the follower fed the appended events) vs pgbench inserting a row of the same size, both on the durable cluster,
# with 1 client and with 16 clients (16 channels, one per client: their schedules do not conflict).
# The asset is on the nginx above: placements read it once, then from the cache, as in production.
mkdir -p "$pgdir/www/ads"
printf '#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:1\n#EXT-X-PLAYLIST-TYPE:VOD\n#EXTINF:1.0,\na0.ts\n#EXT-X-ENDLIST\n' >"$pgdir/www/ads/a.m3u8"
chmod -R a+rX "$pgdir/www"
asset="http://127.0.0.1:$nport/ads/a.m3u8"
payload_size=$(psql "$DATABASE_URL" -Atc "SELECT avg(length(payload::text))::int FROM cueline_events WHERE type = 'BreakPlaced'")
psql "$DATABASE_URL" -qc "CREATE TABLE bench_rows (id bigserial PRIMARY KEY, payload text NOT NULL)"
printf "INSERT INTO bench_rows (payload) VALUES (repeat('x', %s));\n" "$payload_size" >"$pgdir/insert.sql"
pgbench_tps() { "$CUELINE_PGBIN/pgbench" -n -c"$1" -j"$1" -T10 -f "$pgdir/insert.sql" "$DATABASE_URL" 2>/dev/null | awk '/tps = / {print $3; exit}'; }
pgbench_1=$(pgbench_tps 1)
pgbench_16=$(pgbench_tps 16)
# cueline_append alone (no HTTP, no server): the database side of a command, 1 and 16 clients on a channel each, in
# a database of its own on the same cluster (its events are of a type no channel reads).
psql "$DATABASE_URL" -qc "CREATE DATABASE bench_fn"
fn_url="${DATABASE_URL%/*}/bench_fn"
DATABASE_URL="$fn_url" "$bin/cueline" migrate >/dev/null
cat >"$pgdir/append.sql" <<'SQL'
SELECT result_version FROM cueline_append('pgb' || :client_id, -1, md5(random()::text), 'h', 'bench', 'bench', NULL, floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint + 100, '[{"type":"Noted","schema_version":1,"payload":"{\"n\":1}"}]');
SQL
append_fn_tps() { "$CUELINE_PGBIN/pgbench" -n -c"$1" -j"$1" -T10 -f "$pgdir/$2.sql" "$fn_url" 2>/dev/null | awk '/tps = / {print $3; exit}'; }
function_1=$(append_fn_tps 1 append)
function_16=$(append_fn_tps 16 append)
# The writes a command cannot do without, and nothing else: cueline_append's lock, stream row, idempotency probe,
# position, event row with a hash link, stream update and idempotency record, in a SECURITY DEFINER function with its
# search_path pinned, without any of its checks (names, lengths, payloads, decision time) and with a plain hash. What
# the database alone allows a command on this machine, whatever the server in front of it does.
psql "$fn_url" -q <<'SQL'
CREATE FUNCTION bench_command_writes(p_channel text, p_command_id text, p_request_hash text, p_actor text, p_events json,
    OUT result_version bigint, OUT positions bigint[])
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    current_version bigint;
    previous_hash text;
    previous record;
    event record;
    event_position bigint;
BEGIN
    LOCK TABLE cueline_log_head IN ROW EXCLUSIVE MODE;
    INSERT INTO cueline_streams (channel, version) VALUES (p_channel, 0) ON CONFLICT (channel) DO NOTHING;
    SELECT s.version, coalesce(s.last_hash, '') INTO current_version, previous_hash
        FROM cueline_streams s WHERE s.channel = p_channel FOR UPDATE;
    SELECT c.request_hash INTO previous
        FROM cueline_commands c WHERE c.channel = p_channel AND c.actor = p_actor AND c.command_id = p_command_id;
    result_version := current_version;
    positions := '{}';
    FOR event IN SELECT value ->> 'type' AS type, (value ->> 'schema_version')::integer AS schema_version,
            value ->> 'payload' AS payload FROM json_array_elements(p_events)
    LOOP
        result_version := result_version + 1;
        event_position := nextval('cueline_positions');
        previous_hash := encode(sha256(convert_to(previous_hash || p_channel || result_version || event.payload, 'UTF8')), 'hex');
        INSERT INTO cueline_events (position, channel, version, type, schema_version, payload, decided_at, actor,
            source, command_id, reason, hash)
        VALUES (event_position, p_channel, result_version, event.type, event.schema_version, event.payload::json,
            clock_timestamp() + interval '100 milliseconds', p_actor, 'bench', p_command_id, NULL, previous_hash);
        positions := positions || event_position;
    END LOOP;
    UPDATE cueline_streams SET version = result_version, last_hash = previous_hash WHERE channel = p_channel;
    INSERT INTO cueline_commands (command_id, channel, actor, request_hash, result_version, first_position, last_position)
    VALUES (p_command_id, p_channel, p_actor, p_request_hash, result_version, positions[1], event_position);
END;
$$;
SQL
cat >"$pgdir/writes.sql" <<'SQL'
SELECT result_version FROM bench_command_writes('pgw' || :client_id, md5(random()::text), 'h', 'bench', '[{"type":"Noted","schema_version":1,"payload":"{\"n\":1}"}]');
SQL
writes_1=$(append_fn_tps 1 writes)
writes_16=$(append_fn_tps 16 writes)
for n in $(seq 0 33); do
    "$bin/cueline" channel create "append$n" --segment-duration 6 --window 10 --rendition 720p,2800000,720p/seg{n}.ts >/dev/null
done
sleep 0.2
# Each wrk connection has its own channel and its own break ids (a thread's connections share the script's state).
cat >"$pgdir/place.lua" <<'LUA'
local connections = 0
setup = function(thread)
    thread:set("first", connections)
    connections = connections + 1
end
init = function(args)
    counter = 0
    asset = args[1]
    channel = first + tonumber(args[2])
end
request = function()
    counter = counter + 1
    local body = string.format('{"command":"place_break","id":"w%d","in":%d,"duration":1,"%s":"%s"}', counter, 120 + counter * 6, kind, asset)
    return wrk.format("POST", string.format("/channels/append%d/commands", channel), {["Content-Type"] = "application/json"}, body)
end
LUA
# $1 clients on channels from $2 on; $3: asset_uri (read and measured at each placement, fresh) or asset_list (the
# append path alone: an asset list is the ad server's, nothing is read).
append_rps() {
    sed "s/, kind, asset)/, \"$3\", asset)/" "$pgdir/place.lua" >"$pgdir/place-$3.lua"
    wrk -t"$1" -c"$1" -d10s -s "$pgdir/place-$3.lua" "$base" -- "$asset" "$2" | awk '/Requests\/sec/ {print $2}'
}
# The stack's floor: Hummingbird and the Postgres module (libpq on each connection's thread), one durable prepared
# INSERT of the same payload per POST and nothing else (cueline-append-floor), driven by wrk the same way.
floor_port=$(free_port $((port + 2)))
"$bin/cueline-append-floor" "$floor_port" >"$pgdir/floor.log" 2>&1 & pids+=($!)
wait_http_post() { for _ in $(seq 100); do curl -fs -X POST -d x -o /dev/null "$1" && return 0; sleep 0.1; done; return 1; }
wait_http_post "http://127.0.0.1:$floor_port/rows" || die "cueline-append-floor did not start"
printf 'wrk.method = "POST"\nwrk.body = string.rep("x", %s)\nwrk.headers["Content-Type"] = "text/plain"\n' "$payload_size" >"$pgdir/floor.lua"
floor_rps() { wrk -t"$1" -c"$1" -d10s -s "$pgdir/floor.lua" "http://127.0.0.1:$floor_port/rows" | awk '/Requests\/sec/ {print $2}'; }
floor_1=$(floor_rps 1)
floor_16=$(floor_rps 16)
append_1=$(append_rps 1 0 asset_list)
append_16=$(append_rps 16 1 asset_list)
measured_1=$(append_rps 1 17 asset_uri)
measured_16=$(append_rps 16 18 asset_uri)
non201=$(psql "$DATABASE_URL" -Atc "SELECT count(*) FROM cueline_refusals WHERE channel LIKE 'append%'")
append_load=$(cut -d' ' -f1-3 /proc/loadavg)

# latency on a channel of its own, with an ordinary schedule.
"$bin/cueline" channel create latency --segment-duration 6 --window 10 \
    --rendition 1080p,5000000,1080p/seg{n}.ts --rendition 720p,2800000,720p/seg{n}.ts --rendition 360p,800000,360p/seg{n}.ts >/dev/null
sleep 0.2

# latency: acknowledgement of a command → the changed playlist served.
latency=$(python3 - "$base" <<'PY'
import json, sys, time, urllib.request
base = sys.argv[1]
def post(body):
    req = urllib.request.Request(base + "/channels/latency/commands", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    urllib.request.urlopen(req).read()
def served():
    return urllib.request.urlopen(base + "/channels/latency/720p.m3u8").read().decode()
samples = []
for i in range(40):
    # A minute ahead: within the channel's look-ahead horizon (2 minutes), so the placement is published at once.
    post({"command": "place_break", "id": f"lat{i}", "in": 60, "duration": 1, "asset_uri": "https://ads.example.com/a.m3u8"})
    acked = time.perf_counter()
    while f'ID="lat{i}"' not in served():
        if time.perf_counter() - acked > 5:
            sys.exit(f"lat{i} was not served within 5 s")
        time.sleep(0.001)
    samples.append((time.perf_counter() - acked) * 1000)
    # Cancelled before the next, so the next placement takes the same slot.
    post({"command": "cancel_break", "id": f"lat{i}"})
    time.sleep(0.1)
samples.sort()
print(f"{samples[len(samples)//2]:.1f} {samples[int(len(samples)*0.99)-1]:.1f} {samples[-1]:.1f}")
PY
)
read -r p50 p99 worst <<<"$latency"
python3 - "$out" "$cueline_rps" "$nginx_rps" "$router_rps" "$append_1" "$append_16" "$measured_1" "$measured_16" "$pgbench_1" "$pgbench_16" "$payload_size" "$non201" "$p50" "$p99" "$worst" "$append_load" "$function_1" "$function_16" "$floor_1" "$floor_16" "$writes_1" "$writes_16" <<'PY'
import sys
out, c, n, r, a1, a16, m1, m16, p1, p16, size, refused, p50, p99, worst, load, f1, f16, h1, h16, w1, w16 = sys.argv[1:]
c, n, r, a1, a16, m1, m16, p1, p16, f1, f16, h1, h16, w1, w16 = (float(v) for v in (c, n, r, a1, a16, m1, m16, p1, p16, f1, f16, h1, h16, w1, w16))
with open(out, "a") as f:
    f.write(f"""
## serve
wrk -t2 -c50 -d10s on one media playlist (3-rendition channel, one break), same machine:

| server | requests/s | ratio |
|---|---|---|
| nginx, the same bytes as a static file | {n:,.0f} | 1.00 |
| cueline serve (read on raw bytes, answered before the HTTP codec) | {c:,.0f} | {c/n:.2f} |
| cueline serve, the same playlist through the router (`?via=router`) | {r:,.0f} | {r/n:.2f} |

## append
10 s each, on the same durable cluster (fsync on: an acknowledged command is committed). Full command path: HTTP,
decide on the instance's state, one `cueline_append` call (version check, positions, hash chain, idempotency record),
the NOTIFY hint after the commit, the follower fed the appended events. Baseline: pgbench inserting one row of the
same payload size ({size} bytes). 16 clients: 16 channels, one per client. Load average at the end: {load}.

| path | 1 client | ratio | 16 clients | ratio | 16 vs 1 client |
|---|---|---|---|---|---|
| pgbench INSERT | {p1:,.0f}/s | 1.00 | {p16:,.0f}/s | 1.00 | {p16/p1:.2f}x |
| a command's writes alone, without `cueline_append`'s checks (`bench_command_writes`, from pgbench) | {w1:,.0f}/s | {w1/p1:.2f} | {w16:,.0f}/s | {w16/p16:.2f} | {w16/w1:.2f}x |
| `cueline_append` alone, from pgbench (no HTTP; a database of its own) | {f1:,.0f}/s | {f1/p1:.2f} | {f16:,.0f}/s | {f16/p16:.2f} | {f16/f1:.2f}x |
| the stack's floor: Hummingbird + libpq, one prepared INSERT per POST, nothing else (`cueline-append-floor`) | {h1:,.0f}/s | {h1/p1:.2f} | {h16:,.0f}/s | {h16/p16:.2f} | {h16/h1:.2f}x |
| POST /channels/appendN/commands (place_break with an asset list: the append path) | {a1:,.0f}/s | {a1/p1:.2f} | {a16:,.0f}/s | {a16/p16:.2f} | {a16/a1:.2f}x |
| the same with an asset URI, read and measured at each placement (an HTTP GET of the asset) | {m1:,.0f}/s | {m1/p1:.2f} | {m16:,.0f}/s | {m16/p16:.2f} | {m16/m1:.2f}x |

Refused during the run: {refused}.

## change latency
From a command's acknowledgement to the changed playlist being served (40 commands; includes the 50 ms effect
delay that makes every instance serve the same bytes at the same tick): p50 {p50} ms, p99 {p99} ms, worst {worst} ms.
""")
PY
# ads: the ad server in the loop, and viewers joining at once (issue 35), in a process of its own (its own cluster).
[ "${BENCH_ONLY:-}" = http ] || "$(dirname "$0")/bench-ads.sh" release
cat "$out"
