#!/usr/bin/env bash
# Fault check: `kill -9` of the server during a break, right after an acknowledged early return, then a restart.
# No acknowledged command may be lost; media sequence and program date-time continue; the break's tags are unchanged;
# the early return still shows; every playlist across the restart passes `cueline lint --previous`.
set -euo pipefail
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/demo.sh"
cd "$(repo_root)"

throwaway_service
server=""
port=$(free_port 18500)
base="http://127.0.0.1:$port"
start_server() { serve_open "$port" "$SCRATCH/serve.log"; server=$SERVER_PID; }
start_server
"$CUELINE" channel create crash --segment-duration 1 --window 8 --rendition 720p,1000000,720p/seg{n}.ts >/dev/null
sleep 0.3
post() { curl -fs -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' -d "$1" "$base/channels/crash/commands"; }
[ "$(post '{"command":"place_break","id":"brk-1","in":2,"duration":20,"asset_uri":"https://ads.example.com/a.m3u8"}')" = 201 ] || die "place failed"
sleep 4.5
curl -fs "$base/channels/crash/720p.m3u8" >"$SCRATCH/1-before.m3u8"
[ "$(post '{"command":"cancel_current_event"}')" = 201 ] || die "the early return was not acknowledged"
kill -9 "$server"; wait "$server" 2>/dev/null || true; server=""
log "killed the server with SIGKILL right after the acknowledged early return"
start_server
curl -fs "$base/channels/crash/720p.m3u8" >"$SCRATCH/2-after-restart.m3u8"
sleep 2.2
curl -fs "$base/channels/crash/720p.m3u8" >"$SCRATCH/3-later.m3u8"

failures=0
check() { if "$@"; then :; else failures=$((failures + 1)); fi; }
check "$CUELINE" lint "$SCRATCH/2-after-restart.m3u8" --previous "$SCRATCH/1-before.m3u8" >/dev/null
check "$CUELINE" lint "$SCRATCH/3-later.m3u8" --previous "$SCRATCH/2-after-restart.m3u8" >/dev/null
python3 - "$SCRATCH" <<'PY' || failures=$((failures + 1))
import sys, re
d = sys.argv[1]
before, after, later = (open(f"{d}/{n}").read() for n in ("1-before.m3u8", "2-after-restart.m3u8", "3-later.m3u8"))
msn = lambda t: int(re.search(r"#EXT-X-MEDIA-SEQUENCE:(\d+)", t).group(1))
tags = lambda t: [l for l in t.splitlines() if 'ID="brk-1"' in l]
def dates(t):
    lines, out, n = t.splitlines(), {}, msn(t)
    for i, l in enumerate(lines):
        if l.startswith("#EXT-X-PROGRAM-DATE-TIME:"):
            out[n] = l; n += 1
    return out
assert msn(before) <= msn(after) <= msn(later), "media sequence went backwards"
for x, y in ((before, after), (after, later)):
    common = set(dates(x)) & set(dates(y))
    assert all(dates(x)[k] == dates(y)[k] for k in common), "program date-time changed across the restart"
assert tags(before)[0] == tags(after)[0] == tags(later)[0], "the break's original tag changed"
assert any("X-PLAYOUT-LIMIT" in l for l in tags(after)), "the acknowledged early return is missing after the restart"
print(f"media sequence {msn(before)} -> {msn(after)} -> {msn(later)}; break tag unchanged; early return present after restart")
PY
events=$(psql "$DATABASE_URL" -Atc "SELECT count(*) FROM cueline_events WHERE channel = 'crash'")
[ "$events" = 3 ] || { echo "expected 3 events (create, place, early return), found $events" >&2; failures=$((failures + 1)); }
echo "acknowledged commands in the log after SIGKILL: $events of 3"
[ "$failures" -eq 0 ] && echo PASS || { echo "FAIL ($failures)"; exit 1; }
