#!/usr/bin/env bash
# Fault check: the database goes silent rather than stopping: nothing closes the sockets, and a read sent to it is
# neither answered nor refused. cueline serve reaches PostgreSQL through a proxy that stops forwarding for 25 s and
# keeps its sockets open (scripts/lib/freeze_proxy.py): its kernel still acknowledges, so the connections' keepalives
# (which find a host that is gone in ~6 s) do not see it, as with a database process that hangs. Playlists must go on
# by the wall clock once the log has been silent for 11 s (not stay at the last known instant for as long as it
# lasts); the schedule known before stays; everything resumes when it answers again; no event is lost or duplicated.
set -euo pipefail
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/demo.sh"
cd "$(repo_root)"

throwaway_service
proxy_port=$(free_port 18650)
python3 scripts/lib/freeze_proxy.py "$proxy_port" "$CUELINE_PGPORT" >"$SCRATCH/proxy.log" 2>&1 &
proxy=$!
BACKGROUND_PIDS+=("$proxy")
for _ in $(seq 50); do grep -q ready "$SCRATCH/proxy.log" && break; sleep 0.1; done
direct_url=$DATABASE_URL
export DATABASE_URL="postgresql://postgres@127.0.0.1:$proxy_port/cueline"
port=$(free_port 18660)
base="http://127.0.0.1:$port"
serve_open "$port" "$SCRATCH/serve.log"
"$CUELINE" channel create silent --segment-duration 1 --window 6 --rendition 720p,1000000,720p/seg{n}.ts >/dev/null
sleep 0.3
post() { curl -s -o "$SCRATCH/post.out" -w '%{http_code}' -H 'Content-Type: application/json' -d "$1" "$base/channels/silent/commands"; }
code=$(post '{"command":"place_break","id":"before","in":30,"duration":10,"asset_uri":"https://ads.example.com/a.m3u8"}')
[ "$code" = 201 ] || die "place before the silence failed: $code"
sleep 0.5

kill -USR1 "$proxy"
log "the database is silent for 25 s (nothing forwarded, no socket closed)"
python3 - "$base" <<'PY'
import re, sys, time, urllib.request
base = sys.argv[1]
def msn():
    with urllib.request.urlopen(base + "/channels/silent/720p.m3u8", timeout=5) as r:
        body = r.read().decode()
    assert 'ID="before"' in body, "the schedule known before the silence was lost"
    return int(re.search(r"#EXT-X-MEDIA-SEQUENCE:(\d+)", body).group(1))
start = time.time()
first = last = msn()
moved_at = None
while time.time() - start < 25:
    current = msn()
    assert current >= last, "media sequence went backwards during the silence"
    if current > first + 2 and moved_at is None:
        moved_at = time.time() - start
    last = current
    time.sleep(0.2)
print(f"during the silence: media sequence {first} -> {last}; moving by the wall clock again {moved_at:.1f} s in" if moved_at else f"media sequence stayed at {first}")
assert moved_at is not None and moved_at < 15, "playlists must follow the wall clock once the log is silent for 11 s"
assert last >= first + 8, f"25 s of 1 s segments, 11 s of them held, should add at least 8 to the media sequence, not {last - first}"
PY
grep -q "has not answered for 11 s; serving by the wall clock" "$SCRATCH/serve.log" || die "the server did not say it serves by the wall clock"
kill -USR2 "$proxy"
log "the database answers again"
resumed "$base" silent "$direct_url"
grep -q "reading the event log again" "$SCRATCH/serve.log" || die "the server did not say it reads the log again"
echo PASS
