#!/usr/bin/env bash
# Player scenario suite: plays Cueline channels in a real hls.js 1.6.15 (headless Chromium, shared/tools/hlsjs-probe)
# and asserts what the viewer gets, per scenario (issue 16): early return known before the viewer reaches the break;
# early return arriving while a single 30 s asset plays; the same with a 5 x 6 s pod; mid-break join via an asset list
# and via a single asset URI; a future break cancelled after hls.js preloaded its asset list; back-to-back breaks
# with a natural end; a break filled by an ad server (the test ad server's VAST, issue 35), an early return inside a
# decided pod, a decided break cancelled after its preload range was published, and a preroll on join. One server, one throwaway PostgreSQL, the demo media; every scenario has its own channel
# (s1…s7) with a 60 s window (dropping a finished range from the window cannot be what ends an ad) and is played
# through master.m3u8, one probe at a time (each costs a core). About 6 minutes once built.
#
# Usage: scripts/browser/player-scenarios.sh [--only N] [--keep] [--out DIR] [--align segment|exact] [--no-retry]
#   --only N   run only scenario N (1-11), or a list: --only 2,7
#   --no-retry a failed scenario fails the suite at once (by default it runs once more on its own channel s<N>r and
#              the suite passes only if that run passes; the first run's failures are printed and kept in summary.json)
#   --align A  place every break with --align A (diagnostics: segment-snapped against arrival-time starts)
#   --keep     keep the server (and its database) running afterwards, until Ctrl-C
#   --out DIR  where the probe event files, playlist polls, command logs and summary.json go
#              (default .demo/player-scenarios)
# Exit status: 0 all scenarios passed (or SKIPPED: Chromium or hls.js cannot be installed here), 1 one failed.
# Measurement and tolerances: scripts/browser/player_scenarios.py.
set -euo pipefail
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/demo.sh"
cd "$(repo_root)"

only="" keep=false align="" retry=--retry out=$(repo_root)/.demo/player-scenarios
while [ $# -gt 0 ]; do
    case $1 in
        --only) only=${2:?--only needs a scenario number}; shift 2 ;;
        --keep) keep=true; shift ;;
        --out) out=${2:?--out needs a directory}; shift 2 ;;
        --align) align=${2:?--align needs segment or exact}; shift 2 ;;
        --no-retry) retry=""; shift ;;
        -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0" | grep -v '^set '; exit 0 ;;
        *) die "unknown argument $1 (see --help)" ;;
    esac
done
[[ $only =~ ^(([1-9]|1[01])(,([1-9]|1[01]))*)?$ ]] || die "--only takes scenario numbers 1-11 (e.g. 2 or 2,7)"

skip() { printf 'SKIPPED: %s\n' "$*" >&2; exit 0; }
trap demo_down EXIT
hlsjs_probe_setup || skip "$PROBE_SKIP"

demo_server_up
# What the server was built from: the commit, and the tracked files that differed from it at build time.
SERVER_COMMIT=$(git describe --always --dirty 2>/dev/null || echo unknown)
dirty=$(git status --short --untracked-files=no 2>/dev/null | awk '{print $2}' | paste -sd, -)
[ -n "$dirty" ] && SERVER_COMMIT="$SERVER_COMMIT (uncommitted: $dirty)"
[ -n "${CUELINE_BIN:-}" ] && SERVER_COMMIT="$SERVER_COMMIT (CUELINE_BIN=$CUELINE_BIN)"
# The test ad server for scenarios 8-10: its creatives are the demo's ads.
adlog=$DEMO_PGDIR/adserver.out
python3 "$(repo_root)/scripts/lib/test_adserver.py" --port 0 --media-base "$DEMO_URL/media" >"$adlog" 2>/dev/null &
ADS_PID=$!
trap 'kill $ADS_PID 2>/dev/null || true; demo_down' EXIT
for _ in $(seq 50); do grep -q '^listening ' "$adlog" && break; sleep 0.1; done
ADS_URL="http://127.0.0.1:$(awk '/^listening/ {print $2}' "$adlog")"
for n in 1 2 3 4 5 6 7 8 9 10 11; do
    [ -z "$only" ] || [[ ,$only, == *,$n,* ]] || continue
    demo_channel "s$n" 30 >/dev/null   # 30 x 2 s = a 60 s window
    [ -z "$retry" ] || demo_channel "s${n}r" 30 >/dev/null   # a failed scenario's second run (player_scenarios.py --retry)
done
rm -rf "$out" && mkdir -p "$out"
log "running the player scenarios against $DEMO_URL (server $SERVER_COMMIT); results in $out"
status=0
CUELINE=$CUELINE DEMO_URL=$DEMO_URL PROBE_DIR=$PROBE_DIR SERVER_COMMIT=$SERVER_COMMIT ADS_URL=$ADS_URL \
    python3 "$(repo_root)/scripts/browser/player_scenarios.py" --out "$out" $retry ${only:+--only "$only"} ${align:+--align "$align"} || status=$?
cp "$DEMO_PGDIR/serve.log" "$out/serve.log" 2>/dev/null || true
if [ "$keep" = true ]; then
    log "keeping $DEMO_URL running (channels s1-s7; DATABASE_URL=$DATABASE_URL); Ctrl-C to stop"
    wait "$SERVER_PID" || true
fi
exit "$status"
