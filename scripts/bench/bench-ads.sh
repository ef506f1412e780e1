#!/usr/bin/env bash
# Ad decisioning (issue 35), against baselines measured in the same run, appended to Benchmarks/results.md:
#   rps  : asset-list requests/s of a break filled by the test ad server, through `cueline serve` (ad server in the
#          loop: template filled, VAST fetched and parsed, fitted, JSON written) vs the ad server's own VAST alone
#          (wrk, 10 s, 50 connections each)
#   join : 1,000 viewers joining within one second (a connection each) with the ad server holding every answer
#          200 ms and the channel's --ad-concurrency 32, --ad-timeout 1.5 s: every viewer answered within the
#          deadline, as many decided as the concurrency allows, the rest the fallback; what the ad server saw at most
# Usage: scripts/bench/bench-ads.sh [debug|release]   (release by default; debug uses CUELINE_BIN when set)
set -euo pipefail
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/demo.sh"
cd "$(repo_root)"

config=${1:-release}
apt_install wrk
out=Benchmarks/results.md
throwaway_service "$config"
pgdir=$SCRATCH
pids=()
trap 'for p in "${pids[@]}" "${BACKGROUND_PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done; stop_cluster; rm -rf "$SCRATCH"' EXIT
bin=$(dirname "$CUELINE")

adlog=$pgdir/adserver.out
python3 scripts/lib/test_adserver.py --port 0 --media-base "http://127.0.0.1:9/media" >"$adlog" 2>/dev/null & pids+=($!)
for _ in $(seq 50); do grep -q '^listening ' "$adlog" && break; sleep 0.1; done
adport=$(awk '/^listening/ {print $2}' "$adlog")
[ -n "$adport" ] || die "the test ad server did not start"
ads="http://127.0.0.1:$adport"

port=$(free_port 18800)
base="http://127.0.0.1:$port"
CUELINE_LOG_LEVEL=warning "$CUELINE" serve --port "$port" --unauthenticated-commands >"$pgdir/serve.log" 2>&1 & pids+=($!)
wait_http "$base/readyz" 30 || die "the server did not start"
create() {  # create CHANNEL CONCURRENCY
    "$CUELINE" channel create "$1" --segment-duration 6 --window 10 --public-url "$base" \
        --rendition 720p,2800000,720p/seg{n}.ts --ad-concurrency "$2" --ad-timeout 1.5s >/dev/null
}
place() {  # place CHANNEL TEMPLATE
    curl -fs -X POST -H 'Content-Type: application/json' -o /dev/null \
        -d "{\"command\":\"place_break\",\"id\":\"b1\",\"in\":60,\"duration\":30,\"ad_server\":\"$2\",\"asset_uri\":\"https://cdn.example.com/house.m3u8\"}" \
        "$base/channels/$1/commands" || die "could not place the break on $1"
}
create rps 1024
place rps "$ads/vast/inline?ads=3&dur=6&b={break_id}&pid={primary_id}"
create join 32
place join "$ads/vast/inline?ads=3&dur=6&hold_ms=200&pid={primary_id}"
sleep 0.5
list=$base/channels/rps/breaks/b1/assets.json
curl -fs "$list" | grep -q X-AD-CREATIVE-SIGNALING || die "the asset list was not decided: $(curl -s "$list")"

rps() { wrk -t2 -c50 -d10s "$1" | awk '/Requests\/sec/ {print $2}'; }
alone=$(rps "$ads/vast/inline?ads=3&dur=6&b=b1&pid=x")
through=$(rps "$list?_HLS_primary_id=x")
curl -fs "$ads/reset" >/dev/null
join=$(python3 scripts/bench/ads_join.py "$base/channels/join/breaks/b1/assets.json" --viewers 1000 --spread 1 \
    --fallback-uri https://cdn.example.com/house.m3u8)
seen=$(curl -fs "$ads/stats" | python3 -c 'import json,sys; print(json.load(sys.stdin)["max_in_flight"])')
load=$(cut -d' ' -f1-3 /proc/loadavg)
{
    echo
    echo "# Ads run of $(date -u +%Y-%m-%dT%H:%MZ)"
    echo
    echo "Machine: $(nproc) cores, load $load at the end; $config build; the test ad server is Python (ThreadingHTTPServer) on the same cores. \`scripts/bench/bench-ads.sh $config\`."
    echo
    echo "| measure | value |"
    echo "|---|---|"
    echo "| VAST from the ad server alone (req/s) | $alone |"
    echo "| asset lists through cueline, ad server in the loop (req/s) | $through |"
    echo "| ratio | $(awk -v a="$through" -v b="$alone" 'BEGIN { printf "%.2f", a / b }') |"
    echo "| 1,000 viewers in 1 s, concurrency 32, answers held 200 ms, deadline 1.5 s | $join |"
    echo "| most requests the ad server had in flight | $seen |"
} | tee -a "$out"
python3 - "$join" "$seen" <<'PY'
import json, sys
join, seen = json.loads(sys.argv[1]), int(sys.argv[2])
problems = []
if join["answered"] != join["viewers"]: problems.append(f"{join['viewers'] - join['answered']} viewers got no answer: {join['errors']}")
if join["max_ms"] > 1500: problems.append(f"the slowest answer took {join['max_ms']} ms, past the 1.5 s deadline")
if seen > 32: problems.append(f"the ad server had {seen} requests in flight, over the concurrency of 32")
if join["decided"] == 0: problems.append("no viewer's list was decided")
if problems:
    print("FAIL: " + "; ".join(problems)); sys.exit(1)
print("PASS: every viewer answered within the deadline, the ad server never over its concurrency")
PY
