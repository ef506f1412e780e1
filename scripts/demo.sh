#!/usr/bin/env bash
# The main job: installs what is missing (PostgreSQL, ffmpeg…), starts a throwaway database, builds, serves a
# demo channel with 3 renditions over HTTP, places a 30 s break 16 s ahead and ends it early 8 s into it, showing
# the playlists at each step. Then keeps serving (Ctrl-C to stop) when run in a terminal.
# Options: --once         stop after the scenario even in a terminal.
#          --low-latency  the channel is LL-HLS: 1 s segments of 0.25 s fMP4 parts (made with ffmpeg), 2 renditions; a
#                         30 s break 8 s ahead, ended early 5 s into it; shows a blocking reload and a delta update.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
source "$(dirname "$0")/lib/demo.sh"
cd "$(repo_root)"

once=false
low_latency=false
for arg in "$@"; do
    case $arg in
        --once) once=true ;;
        --low-latency) low_latency=true ;;
        *) die "unknown option $arg (--once, --low-latency)" ;;
    esac
done
trap demo_down EXIT

show() {
    printf '\n--- %s\n' "$1"
    curl -fs "$2" | sed 's/^/    /'
}
# show_tail TITLE URL : the end of a long (LL) playlist.
show_tail() {
    printf '\n--- %s (last lines)\n' "$1"
    curl -fs "$2" | tail -n "${3:-14}" | sed 's/^/    /'
}

if [ "$low_latency" = true ]; then
    demo_server_up
    demo_ll_channel demo 12
    renditions="720p 360p"
    lead=8 duration=30 into=5
else
    demo_up
    renditions="720p 480p 360p"
    lead=16 duration=30 into=8
fi
media() { local r; for r in $renditions; do printf '%s ' "$DEMO_URL/channels/demo/$r.m3u8"; done; }

show "multivariant playlist" "$DEMO_URL/channels/demo/master.m3u8"
log "placing a $duration s break $lead s from now"
"$CUELINE" break place demo --id ad-1 --in "${lead}s" --duration "${duration}s" --asset-uri "$DEMO_URL/media/ad/ad.m3u8" \
    --restrict skip,jump --snap out,in --actor demo --reason "demo break"
sleep 0.2  # commands take effect 50 ms after they arrive, on every instance alike
start=$("$CUELINE" schedule demo --json | sed -n 's/.*"start_date" : "\(.*\)".*/\1/p' | head -n 1)
if [ "$low_latency" = true ]; then
    show_tail "720p before the break: parts near the live edge, the preload hint, the rendition report, the break announced" \
        "$DEMO_URL/channels/demo/720p.m3u8" 16
else
    show "720p before the break: the break is announced ahead of the live edge (PLANNED-DURATION only)" "$DEMO_URL/channels/demo/720p.m3u8"
fi

wait_for=$(( $(seconds_until "$start") + into ))
log "waiting ${wait_for}s until the break has been on air for $into s"
sleep "$wait_for"
[ "$low_latency" = true ] || show "720p during the break" "$DEMO_URL/channels/demo/720p.m3u8"
log "ending the break early (cancel current event)"
"$CUELINE" event cancel-current demo --actor demo --reason "back to the match"
if [ "$low_latency" = true ]; then
    # A player blocked on the next part gets the augmenting tag in its first answer after the command's effect.
    next=$(curl -fs "$DEMO_URL/channels/demo/720p.m3u8" | sed -n 's/.*LAST-MSN=\([0-9]*\),LAST-PART=\([0-9]*\).*/\1 \2/p' | head -n 1)
    read -r msn part <<<"$next"
    part=$((part + 1)); [ "$part" -eq 4 ] && { msn=$((msn + 1)); part=0; }
    printf '\n--- a blocking reload: GET 720p.m3u8?_HLS_msn=%s&_HLS_part=%s (held until that part exists)\n' "$msn" "$part"
    curl -fs "$DEMO_URL/channels/demo/720p.m3u8?_HLS_msn=$msn&_HLS_part=$part" | grep -E 'DATERANGE|PRELOAD-HINT' | sed 's/^/    /'
    show_tail "a delta update (_HLS_skip=v2): older segments and ended breaks skipped" "$DEMO_URL/channels/demo/720p.m3u8?_HLS_skip=v2" 40 \
        | grep -vE '^    #EXT-X-(PART|PROGRAM-DATE-TIME):' | head -n 14
else
    sleep 0.2
    show "720p after the early return: the original tag is unchanged, an augmenting tag adds X-PLAYOUT-LIMIT and DURATION" \
        "$DEMO_URL/channels/demo/720p.m3u8"
fi
printf '\n'
"$CUELINE" schedule demo
printf '\n'
# shellcheck disable=SC2046
"$CUELINE" lint $(media)
if [ "$low_latency" = true ]; then
    # The delta update and the full playlist of one instant (one blocking answer pins the instant for both).
    tmp=$(mktemp -d)
    curl -fs "$DEMO_URL/channels/demo/720p.m3u8" -o "$tmp/full.m3u8" -D "$tmp/h"
    tick=$(sed -n 's/^[Xx]-[Cc]ueline-[Tt]ick: *\([^[:space:]]*\).*/\1/p' "$tmp/h")
    "$CUELINE" replay demo --at "$tick" --skip v2 >"$tmp/delta.m3u8"
    "$CUELINE" lint "$tmp/delta.m3u8" --full "$tmp/full.m3u8"
    rm -rf "$tmp"
fi

if [ -t 0 ] && [ "$once" = false ]; then
    log "serving; play $DEMO_URL/channels/demo/master.m3u8 in a player (scripts/browser/probe.sh runs hls.js). Ctrl-C to stop."
    wait "$SERVER_PID"
fi
