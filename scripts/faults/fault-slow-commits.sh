#!/usr/bin/env bash
# Fault check (issue 11, defect 12): both cores saturated by CPU burners while two clients place and cancel breaks
# on one channel, and every event insert delayed by up to 200 ms inside its transaction (a test-only trigger), so
# most commits land after their events' effect instant. Every playlist served (by its X-Cueline-Tick) must replay to the
# same bytes, `cueline verify` must pass, and no event may reach the server after it served the event's instant.
# Usage: scripts/faults/fault-slow-commits.sh [--seconds N]   (default 20)
set -euo pipefail
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/demo.sh"
cd "$(repo_root)"

seconds=20
[ "${1:-}" = --seconds ] && seconds=$2

throwaway_service
port=$(free_port 18700)
base="http://127.0.0.1:$port"
serve_open "$port" "$SCRATCH/serve.log"
server=$SERVER_PID
"$CUELINE" channel create busy --segment-duration 1 --window 8 --rendition 720p,1000000,720p/seg{n}.ts \
    --rendition 360p,400000,360p/seg{n}.ts >/dev/null
wait_http "$base/channels/busy/720p.m3u8" 30 || die "the channel did not start"
# The artificial commit delay: after the append function has checked its decision time against the clock.
psql "$DATABASE_URL" -q <<'SQL'
CREATE FUNCTION test_slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM pg_sleep(0.2 * random()); RETURN NEW; END $$;
CREATE TRIGGER test_slow_commit AFTER INSERT ON cueline_events FOR EACH ROW EXECUTE FUNCTION test_slow_commit();
SQL

# Both cores (and then some) busy for the whole run, at the same priority as the server and the database.
for _ in 1 2 3; do
    (end=$((SECONDS + seconds + 5)); while [ $SECONDS -lt $end ]; do :; done) &
    BACKGROUND_PIDS+=($!)
done
log "3 CPU burners for ${seconds}s; two clients placing and cancelling breaks; polling both renditions"

python3 - "$base" "$seconds" "$SCRATCH/samples" <<'PY'
import json, os, random, sys, threading, time, urllib.request, urllib.error
base, seconds, out = sys.argv[1], float(sys.argv[2]), sys.argv[3]
os.makedirs(out, exist_ok=True)
stop = time.time() + seconds
counts = {}
lock = threading.Lock()

def post(body):
    request = urllib.request.Request(base + "/channels/busy/commands", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code

def client(name):
    rng = random.Random(name)
    n = 0
    while time.time() < stop:
        n += 1
        ident = f"{name}-{n}"
        status = post({"command": "place_break", "id": ident, "in": rng.uniform(3, 40), "duration": rng.choice([2, 3, 5]),
                       "asset_uri": "https://ads.example.com/a.m3u8"})
        with lock: counts[status] = counts.get(status, 0) + 1
        if status == 201 and rng.random() < 0.4:
            status = post({"command": "cancel_break", "id": ident})
            with lock: counts[status] = counts.get(status, 0) + 1
        time.sleep(rng.uniform(0.05, 0.3))

samples = 0
def poller(rendition):
    global samples
    seen = set()
    while time.time() < stop:
        try:
            with urllib.request.urlopen(f"{base}/channels/busy/{rendition}.m3u8", timeout=30) as response:
                tick, body = response.headers["X-Cueline-Tick"], response.read()
        except Exception as error:
            print(f"poll failed: {error}", file=sys.stderr); time.sleep(0.1); continue
        if (tick, body) not in seen:
            seen.add((tick, body))
            with lock:
                samples += 1
                with open(f"{out}/{samples:05d}-{rendition}", "wb") as f: f.write(tick.encode() + b"\n" + body)
        time.sleep(0.05)

threads = [threading.Thread(target=client, args=(n,)) for n in ("a", "b")]
threads += [threading.Thread(target=poller, args=(r,)) for r in ("720p", "360p")]
for t in threads: t.start()
for t in threads: t.join()
print(f"commands by status: {dict(sorted(counts.items()))}; distinct playlists sampled: {samples}")
if counts.get(201, 0) < 5: sys.exit("too few commands were applied to exercise anything")
PY

failures=0
checked=0
differ=0
for file in "$SCRATCH"/samples/*; do
    rendition=${file##*-}
    tick=$(head -n 1 "$file")
    tail -n +2 "$file" >"$SCRATCH/served.m3u8"
    "$CUELINE" replay busy --at "$tick" --rendition "$rendition" >"$SCRATCH/replayed.m3u8"
    checked=$((checked + 1))
    if ! cmp -s "$SCRATCH/served.m3u8" "$SCRATCH/replayed.m3u8"; then
        differ=$((differ + 1))
        [ "$differ" -le 3 ] && { echo "served ≠ replay at $tick ($rendition):" >&2; diff "$SCRATCH/served.m3u8" "$SCRATCH/replayed.m3u8" >&2 || true; }
    fi
done
echo "replayed $checked served playlists: $differ differ"
[ "$differ" -eq 0 ] || failures=$((failures + 1))
"$CUELINE" verify busy >"$SCRATCH/verify.txt" || { cat "$SCRATCH/verify.txt" >&2; failures=$((failures + 1)); }
metrics=$(curl -fs "$base/metrics")
late_events=$(awk '/^cueline_late_events_total/ {s += $2} END {print s + 0}' <<<"$metrics")
late_decisions=$(awk '/^cueline_late_decisions_total/ {s += $2} END {print s + 0}' <<<"$metrics")
echo "decisions refused by the database clock and decided again: $late_decisions; events served late: $late_events"
[ "$late_events" = 0 ] || failures=$((failures + 1))
kill -0 "$server" 2>/dev/null || { echo "the server died" >&2; failures=$((failures + 1)); }
[ "$failures" -eq 0 ] && echo PASS || { echo "FAIL ($failures)"; exit 1; }
