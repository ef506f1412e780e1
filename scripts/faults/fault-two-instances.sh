#!/usr/bin/env bash
# Fault/scale check: two `cueline serve` instances on one database, on different ports.
# At every tick both must serve byte-identical playlists, and a command sent to one must show on the other within
# 50 ms of the instant it takes effect (its decided_at), and within 100 ms of being sent for at least half of them
# (the rest of the way is the client, HTTP and the 50 ms effect delay, which a loaded machine stretches). Prints what it
# measured; exits non-zero on any difference.
set -euo pipefail
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/demo.sh"
cd "$(repo_root)"

throwaway_service
a=$(free_port 18400); serve_open "$a" "$SCRATCH/a.log"
b=$(free_port $((a + 1))); serve_open "$b" "$SCRATCH/b.log"
"$CUELINE" channel create twin --segment-duration 1 --window 6 --rendition 720p,1000000,720p/seg{n}.ts --rendition 360p,500000,360p/seg{n}.ts >/dev/null
sleep 0.3

python3 - "$a" "$b" <<'PY'
import json, sys, time, urllib.request
a, b = (f"http://127.0.0.1:{p}" for p in sys.argv[1:3])
from datetime import datetime
def iso(text):
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
def get(base, path):
    with urllib.request.urlopen(base + path, timeout=5) as r:
        return r.read().decode(), r.headers.get("X-Cueline-Tick")
def post(base, body):
    req = urllib.request.Request(base + "/channels/twin/commands", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=5) as r:
        return r.status, json.loads(r.read())
compared = differing = live_compared = live_differing = 0
latencies = []
after_effect = []
decide_delays = []
last_command = 0.0
commands = [{"command": "place_break", "id": f"t{i}", "in": 2, "duration": 3, "asset_uri": "https://ads.example.com/a.m3u8"} for i in range(6)]
deadline = time.time() + 40
next_command = time.time() + 1
while time.time() < deadline:
    if commands and time.time() >= next_command:
        sent = time.time()
        target, other = (a, b) if len(commands) % 2 else (b, a)
        cmd = commands.pop(0)
        status, answer = post(target, cmd)
        assert status == 201
        last_command = time.time()
        decided = iso(answer["events"][0]["decided_at"])
        while time.time() - sent < 2:
            if f'ID="{cmd["id"]}"' in get(other, "/channels/twin/720p.m3u8")[0]:
                shown = time.time()
                latencies.append((shown - sent) * 1000)
                # The other instance cannot show a command before the instant it takes effect (its decided_at, 50 ms
                # after the deciding instance read its clock): what the instances control is how soon after it.
                after_effect.append((shown - decided) * 1000)
                decide_delays.append((decided - sent) * 1000)
                break
            time.sleep(0.002)
        else:
            raise SystemExit(f"command sent to one instance never showed on the other: {cmd}")
        next_command = time.time() + 5.5
    # Both instances at the same tick: ask each, then replay the other's tick on the first via /replay.
    for rendition in ("720p", "360p"):
        body_a, tick_a = get(a, f"/channels/twin/{rendition}.m3u8")
        replay_b, _ = get(b, f"/channels/twin/replay?at={tick_a}&rendition={rendition}")
        compared += 1
        if body_a != replay_b:
            differing += 1
        # Live against live: both fetched within one segment, no command taking effect in between.
        body_b, tick_b = get(b, f"/channels/twin/{rendition}.m3u8")
        if tick_a[:19] == tick_b[:19] and time.time() - last_command > 0.3:
            live_compared += 1
            if body_a != body_b:
                live_differing += 1
    time.sleep(0.1)
latencies.sort()
after_effect.sort()
print(f"two instances: {compared} playlists of one compared with the other's replay at the same tick, {differing} differ")
print(f"two instances live: {live_compared} pairs fetched within one segment compared, {live_differing} differ")
print(f"a command sent to one instance showed on the other after {latencies[len(latencies)//2]:.0f} ms median, {latencies[-1]:.0f} ms worst ({len(latencies)} commands)")
print(f"  of which sent -> taking effect (client, HTTP, the 50 ms effect delay): {', '.join(f'{d:.0f}' for d in decide_delays)} ms")
print(f"  taking effect -> shown on the other instance: {after_effect[len(after_effect)//2]:.0f} ms median, {after_effect[-1]:.0f} ms worst")
assert differing == 0 and live_differing == 0, "instances served different bytes at the same tick"
# Served time never runs ahead of the wall clock (the follower serves min(clock, watermark)): a change shown before
# its decided_at would be served early on one instance and not on the other (1 ms: decided_at is in whole ms).
assert after_effect[0] >= -1, f"a change showed {-after_effect[0]:.1f} ms before the instant it takes effect"
assert after_effect[-1] < 50, "a change took 50 ms or more after taking effect to show on the other instance"
assert latencies[(len(latencies) - 1)//2] < 100, "more than half the changes took 100 ms or more to show on the other instance"
print("PASS")
PY
