#!/usr/bin/env bash
# The main job: installs what is missing (PostgreSQL, ffmpeg…), starts a throwaway database, builds, serves a
# demo channel with 3 renditions over HTTP, places a 30 s break 16 s ahead and ends it early 8 s into it, showing
# the playlists at each step. Then keeps serving (Ctrl-C to stop) when run in a terminal.
# Options: --once  stop after the scenario even in a terminal.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
source "$(dirname "$0")/lib/demo.sh"
cd "$(repo_root)"

once=false
[ "${1:-}" = "--once" ] && once=true
trap demo_down EXIT
demo_up

show() {
    printf '\n--- %s\n' "$1"
    curl -fs "$2" | sed 's/^/    /'
}

show "multivariant playlist" "$DEMO_URL/channels/demo/master.m3u8"
log "placing a 30 s break 16 s from now"
"$CUELINE" break place demo --id ad-1 --in 16s --duration 30s --asset-uri "$DEMO_URL/media/ad/ad.m3u8" \
    --restrict skip,jump --snap out,in --actor demo --reason "demo break"
sleep 0.2  # commands take effect 50 ms after they arrive, on every instance alike
start=$("$CUELINE" schedule demo --json | sed -n 's/.*"start_date" : "\(.*\)".*/\1/p' | head -n 1)
show "720p before the break: the break is announced ahead of the live edge (PLANNED-DURATION only)" "$DEMO_URL/channels/demo/720p.m3u8"

wait_for=$(( $(seconds_until "$start") + 8 ))
log "waiting ${wait_for}s until the break has been on air for 8 s"
sleep "$wait_for"
show "720p during the break" "$DEMO_URL/channels/demo/720p.m3u8"
log "ending the break early (cancel current event)"
"$CUELINE" event cancel-current demo --actor demo --reason "back to the match"
sleep 0.2
show "720p after the early return: the original tag is unchanged, an augmenting tag adds X-PLAYOUT-LIMIT and DURATION" \
    "$DEMO_URL/channels/demo/720p.m3u8"
printf '\n'
"$CUELINE" schedule demo
printf '\n'
"$CUELINE" lint "$DEMO_URL/channels/demo/720p.m3u8" "$DEMO_URL/channels/demo/480p.m3u8" "$DEMO_URL/channels/demo/360p.m3u8"

if [ -t 0 ] && [ "$once" = false ]; then
    log "serving; play $DEMO_URL/channels/demo/master.m3u8 in a player (scripts/probe.sh runs hls.js). Ctrl-C to stop."
    wait "$SERVER_PID"
fi
