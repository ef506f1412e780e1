#!/usr/bin/env bash
# Benchmarks with a fixed method, each against a baseline measured in the same run. Writes Benchmarks/results.md.
#   render  : PlaylistRenderer vs a naive Foundation renderer producing the same bytes (cueline-bench)
#   replay  : replay --at cost against log length in memory, and from PostgreSQL a year of history (~110,000 events)
#             vs a day: full-log read + fold vs from the latest checkpoint (cueline-replay-bench)
#   serve   : playlist requests/s from `cueline serve` vs nginx serving the same bytes as a static file (wrk, 10 s)
#   append  : commands/s through the full HTTP command path vs pgbench inserting a row of the same size (10 s, 1 client)
#   latency : from a command's acknowledgement to the changed playlist being served (p50/p99 of 40 commands)
#   retention: tick cost and playlist bytes with 10,000 breaks vs none, state memory after 100,000 events vs 100
#   scale   : channels one instance keeps on time: 10,000 x 3 renditions vs 100 (cueline-scale-bench, 30 s each)
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
source "$(dirname "$0")/lib/demo.sh"
cd "$(repo_root)"

ensure_build_deps
apt_install wrk nginx curl
out=Benchmarks/results.md
pgdir=$(mktemp -d /tmp/cueline-bench-pg.XXXXXX)
chmod 755 "$pgdir"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; stop_cluster; rm -rf "$pgdir"; }
trap cleanup EXIT
start_cluster "$pgdir"
log "building (release)"
swift build -c release >/dev/null
bin=$(swift build -c release --show-bin-path)
export CUELINE_MIGRATIONS=$PWD/Migrations
"$bin/cueline" migrate >/dev/null

{
    echo "# Benchmark results"
    echo
    echo "Machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB, $(uname -m); $(date -u +%Y-%m-%d); \`scripts/bench.sh\`."
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
} >"$out"

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

# append: the full command path (HTTP, load, decide, append with version check, idempotency record) vs pgbench.
payload_size=$(psql "$DATABASE_URL" -Atc "SELECT avg(length(payload::text))::int FROM cueline_events WHERE type = 'BreakPlaced'")
psql "$DATABASE_URL" -qc "CREATE TABLE bench_rows (id bigserial PRIMARY KEY, payload text NOT NULL)"
printf "INSERT INTO bench_rows (payload) VALUES (repeat('x', %s));\n" "$payload_size" >"$pgdir/insert.sql"
pgbench_tps=$("$CUELINE_PGBIN/pgbench" -n -c1 -T10 -f "$pgdir/insert.sql" "$DATABASE_URL" 2>/dev/null | awk '/tps = / {print $3; exit}')
# Twenty channels in turn, so no channel's schedule grows past a few hundred breaks (an operator's day has dozens).
for n in $(seq 0 19); do
    "$bin/cueline" channel create "append$n" --segment-duration 6 --window 10 --rendition 720p,2800000,720p/seg{n}.ts >/dev/null
done
sleep 0.2
cat >"$pgdir/place.lua" <<'LUA'
counter = 0
request = function()
    counter = counter + 1
    local body = string.format('{"command":"place_break","id":"w%d","in":%d,"duration":1,"asset_uri":"https://ads.example.com/a.m3u8"}', counter, 120 + counter * 2)
    return wrk.format("POST", string.format("/channels/append%d/commands", counter % 20), {["Content-Type"] = "application/json"}, body)
end
LUA
append_rps=$(wrk -t1 -c1 -d10s -s "$pgdir/place.lua" "$base" | awk '/Requests\/sec/ {print $2}')
non201=$(psql "$DATABASE_URL" -Atc "SELECT count(*) FROM cueline_refusals WHERE channel LIKE 'append%'")

# latency on a channel of its own, with an ordinary schedule.
"$bin/cueline" channel create latency --segment-duration 6 --window 10 \
    --rendition 1080p,5000000,1080p/seg{n}.ts --rendition 720p,2800000,720p/seg{n}.ts --rendition 360p,800000,360p/seg{n}.ts >/dev/null
sleep 0.2

# latency: acknowledgement of a command → the changed playlist served.
latency=$(python3 - "$base" <<'PY'
import json, sys, time, urllib.request
base = sys.argv[1]
samples = []
for i in range(40):
    body = json.dumps({"command": "place_break", "id": f"lat{i}", "in": 40000 + i * 10, "duration": 1, "asset_uri": "https://ads.example.com/a.m3u8"}).encode()
    req = urllib.request.Request(base + "/channels/latency/commands", data=body, headers={"Content-Type": "application/json"})
    urllib.request.urlopen(req).read()
    acked = time.perf_counter()
    while f'ID="lat{i}"' not in urllib.request.urlopen(base + "/channels/latency/720p.m3u8").read().decode():
        time.sleep(0.001)
    samples.append((time.perf_counter() - acked) * 1000)
samples.sort()
print(f"{samples[len(samples)//2]:.1f} {samples[int(len(samples)*0.99)-1]:.1f} {samples[-1]:.1f}")
PY
)
read -r p50 p99 worst <<<"$latency"
python3 - "$out" "$cueline_rps" "$nginx_rps" "$router_rps" "$append_rps" "$pgbench_tps" "$payload_size" "$non201" "$p50" "$p99" "$worst" <<'PY'
import sys
out, c, n, r, a, p, size, refused, p50, p99, worst = sys.argv[1:]
c, n, r, a, p = float(c), float(n), float(r), float(a), float(p)
with open(out, "a") as f:
    f.write(f"""
## serve
wrk -t2 -c50 -d10s on one media playlist (3-rendition channel, one break), same machine:

| server | requests/s | ratio |
|---|---|---|
| nginx, the same bytes as a static file | {n:,.0f} | 1.00 |
| cueline serve (answered on the event loop, before the router) | {c:,.0f} | {c/n:.2f} |
| cueline serve, the same playlist through the router (`?via=router`) | {r:,.0f} | {r/n:.2f} |

## append
One client, 10 s each. Full command path: HTTP, load the channel, decide, append with the version check, the
idempotency record and the hash chain, in one transaction. Baseline: pgbench inserting one row of the same payload
size ({size} bytes) into the same database.

| path | per second | ratio |
|---|---|---|
| pgbench INSERT | {p:,.0f} | 1.00 |
| POST /channels/appendN/commands (place_break, 20 channels in turn) | {a:,.0f} | {a/p:.3f} |

Refused during the run: {refused}.

## change latency
From a command's acknowledgement to the changed playlist being served (40 commands; includes the 50 ms effect
delay that makes every instance serve the same bytes at the same tick): p50 {p50} ms, p99 {p99} ms, worst {worst} ms.
""")
PY
cat "$out"
