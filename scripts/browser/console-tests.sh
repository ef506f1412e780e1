#!/usr/bin/env bash
# Acceptance tests of the operator console (/console, issue 15) in headless Chromium, driven over the DevTools protocol
# (scripts/browser/console_tests.py; Python's standard library only): sign in, place a break, watch it go on air, end it
# early from a second console, the limit on the timeline, the as-run row, two consoles seeing each other's commands
# within 1 s, a stale If-Match showing the conflict, a refused cancel in the break's trail, a lost and a silent (stale)
# event stream recovering, actors and reasons holding bidi and invisible characters shown escaped, a pod's assets with
# their seconds, a viewer token without controls, tablet size.
# One server (port 18555 or the next free one), one throwaway PostgreSQL, the demo media; about a minute once built.
# The player pane gets hls.js 1.6.15 as the player scenarios do (hlsjs_probe_setup) when it can be had; the console
# is tested without it otherwise.
#
# Usage: scripts/browser/console-tests.sh [--out DIR] (default .demo/console-screenshots: a PNG per step, summary.json)
# CUELINE_BIN=path: the cueline binary to run (no build); CUELINE_CONSOLE_DIR=dir: the console's files to serve.
# Exit status: 0 passed (or SKIPPED: Chromium cannot be installed here), 1 failed.
set -euo pipefail
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/demo.sh"
cd "$(repo_root)"

out=$(repo_root)/.demo/console-screenshots
while [ $# -gt 0 ]; do
    case $1 in
        --out) out=${2:?--out needs a directory}; shift 2 ;;
        -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0" | grep -v '^set '; exit 0 ;;
        *) die "unknown argument $1 (see --help)" ;;
    esac
done

skip() { printf 'SKIPPED: %s\n' "$*" >&2; exit 0; }
trap demo_down EXIT
( apt_install chromium ) || skip "chromium cannot be installed here"
[ -x /usr/bin/chromium ] || skip "chromium is not at /usr/bin/chromium"
if hlsjs_probe_setup; then
    export CUELINE_HLSJS=$PROBE_DIR/hlsjs/hls-1.6.15-gradio.mjs
else
    log "the player pane runs without hls.js: $PROBE_SKIP"
fi
# The console's files from this checkout (the server runs from a copy of the binary, away from its resource bundle),
# or from CUELINE_CONSOLE_DIR when it is set (another copy of the console, an earlier one to see a test fail on it).
export CUELINE_CONSOLE_DIR=${CUELINE_CONSOLE_DIR:-$(repo_root)/Sources/API/Console}
CUELINE_DEMO_PORT=${CUELINE_CONSOLE_PORT:-18555} demo_server_up
demo_channel console 8 >/dev/null
token() { "$CUELINE" token create "$1" --role "$2" | head -1; }
export OPERATOR_A=$(token console-desk-a operator) OPERATOR_B=$(token console-desk-b operator) VIEWER=$(token console-viewer viewer)
rm -rf "$out" && mkdir -p "$out"
log "running the console tests against $DEMO_URL/console; screenshots in $out"
status=0
# CUELINE (with DATABASE_URL): the CLI, for what the tests place as another door would (an actor and a reason).
CONSOLE_URL=$DEMO_URL CHANNEL=console AD_URI=$DEMO_URL/media/ad/ad.m3u8 CUELINE=$CUELINE \
    timeout 300 python3 "$(repo_root)/scripts/browser/console_tests.py" --out "$out" || status=$?
cp "$DEMO_PGDIR/serve.log" "$out/serve.log" 2>/dev/null || true
exit "$status"
