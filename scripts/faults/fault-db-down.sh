#!/usr/bin/env bash
# Fault check: PostgreSQL stopped for 32 s while playlists are served. Playlists keep advancing from the last known
# schedule; commands fail fast with 503 and a clear message; everything resumes when the database is back; no event
# is lost or duplicated; the log says the outage once (then every 10 s) and its end, not every failed read (issue 36:
# ~110 errors logged in 2 s before); the render samples of the ticks served
# meanwhile (one tick in 30 of the 1 s segments is sampled: 32 s holds at least one) are recorded once it is back, so
# `cueline verify` can check them.
set -euo pipefail
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/demo.sh"
cd "$(repo_root)"

throwaway_service
port=$(free_port 18600)
base="http://127.0.0.1:$port"
serve_open "$port" "$SCRATCH/serve.log"
"$CUELINE" channel create outage --segment-duration 1 --window 6 --rendition 720p,1000000,720p/seg{n}.ts >/dev/null
sleep 0.3
post() { curl -s -o "$SCRATCH/post.out" -w '%{http_code} %{time_total}' -H 'Content-Type: application/json' -d "$1" "$base/channels/outage/commands"; }
read -r code _ <<<"$(post '{"command":"place_break","id":"before","in":30,"duration":10,"asset_uri":"https://ads.example.com/a.m3u8"}')"
[ "$code" = 201 ] || die "place before the outage failed: $code"
sleep 0.2

outage_from=$(wc -l <"$SCRATCH/serve.log")
outage_start=$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)
as_pg_owner "$CUELINE_PGBIN/pg_ctl" -D "$CUELINE_PGDATA" -m fast stop >/dev/null
log "PostgreSQL stopped for 32 s"
python3 - "$base" "$SCRATCH" <<'PY'
import json, re, sys, time, urllib.request, urllib.error
base, d = sys.argv[1], sys.argv[2]
last = -1; polls = 0; refused = []; worst = 0.0
end = time.time() + 32
while time.time() < end:
    with urllib.request.urlopen(base + "/channels/outage/720p.m3u8", timeout=5) as r:
        body = r.read().decode()
    msn = int(re.search(r"#EXT-X-MEDIA-SEQUENCE:(\d+)", body).group(1))
    assert msn >= last, "media sequence went backwards during the outage"
    assert 'ID="before"' in body, "the schedule known before the outage was lost"
    last = msn; polls += 1
    if polls % 10 == 1:
        req = urllib.request.Request(base + "/channels/outage/commands", data=json.dumps({"command": "place_break", "id": f"during{polls}", "in": 40, "duration": 5, "asset_uri": "https://ads.example.com/a.m3u8"}).encode(), headers={"Content-Type": "application/json"})
        t = time.time()
        try:
            urllib.request.urlopen(req, timeout=10); refused.append("accepted?!")
        except urllib.error.HTTPError as e:
            worst = max(worst, time.time() - t)
            refused.append((e.code, json.loads(e.read())["error"]))
    time.sleep(0.25)
first_msn = None
print(f"during the outage: {polls} playlist polls all answered, media sequence advanced to {last}")
print(f"commands during the outage: {len(refused)}, all {sorted(set(c for c, _ in refused))}, slowest answer {worst*1000:.0f} ms: {refused[0][1]}")
assert all(c == 503 for c, _ in refused), "commands must fail with 503 while the database is down"
assert worst < 2.0, "commands must fail fast"
PY
outage_end=$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)
as_pg_owner "$CUELINE_PGBIN/pg_ctl" -D "$CUELINE_PGDATA" -l "$CUELINE_PGDATA/../server.log" -w -o "-p $CUELINE_PGPORT -k $(dirname "$CUELINE_PGDATA") -c listen_addresses=127.0.0.1" start >/dev/null
log "PostgreSQL is back"
resumed "$base" outage "$DATABASE_URL"
# What the log said: the outage once, then once every 10 s (not every failed read: ~64 lines a second before), and
# its end.
said=$(tail -n +"$((outage_from + 1))" "$SCRATCH/serve.log")
unavailable=$(grep -c 'database unavailable\|database still unavailable' <<<"$said" || true)
# (The commands sent meanwhile name an asset host that does not resolve: those warnings are theirs, not the outage's.)
errors=$(grep ' warning \| error ' <<<"$said" | grep -vc 'could not read an asset' || true)
back=$(grep -o 'database reachable again after [^(]*([0-9]* calls failed meanwhile)' <<<"$said" | head -1)
grep " warning \| error " <<<"$said" | grep -v "could not read an asset" | sed -E "s/^[^ ]+ //; s/error=[^[]*//" | cut -c1-150 | sort | uniq -c >&2
log "the log during the outage: $errors warnings and errors, $unavailable of them 'database unavailable'; then: ${back:-nothing}"
[ "$unavailable" -ge 1 ] && [ "$unavailable" -le 5 ] || die "'database unavailable' said $unavailable times in a 32 s outage (once, then every 10 s)"
[ "$errors" -le 15 ] || { grep ' warning \| error ' <<<"$said" | grep -v 'could not read an asset' | cut -c1-200 >&2; die "$errors warnings and errors in a 32 s outage (bound 15)"; }
[ -n "$back" ] || die "the log never said the database was reachable again"
# The samples of what was served while the database was away, recorded once it was back (at the next tick's write).
sleep 2
sampled=$("$CUELINE_PGBIN/psql" -X -q -At "$DATABASE_URL" -c "SELECT count(*) FROM cueline_render_samples WHERE channel = 'outage' AND tick > '$outage_start'::timestamptz + interval '1 second' AND tick < '$outage_end'")
log "render samples of ticks served during the outage, recorded after it: $sampled"
[ "$sampled" -ge 1 ] || die "no render sample of the ticks served during the outage was recorded (they were dropped)"
"$CUELINE" verify outage >/dev/null || die "cueline verify outage failed after the outage"
echo PASS
