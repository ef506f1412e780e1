#!/usr/bin/env bash
# Load: 50 concurrent clients polling playlists plus 20 commands per second for 5 minutes (or MINUTES) against one
# `cueline serve` (release build) on a throwaway database. Passes when no request fails, no lint finding appears
# (every rendition, every 5 s, against its previous version and across renditions), media sequences never go
# backwards, and memory is flat (the last minute's resident size within 20% + 16 MiB of the second minute's).
#   scripts/bench/load-test.sh [MINUTES]
set -euo pipefail
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/demo.sh"
cd "$(repo_root)"
minutes=${1:-5}

throwaway_service release
cueline=$CUELINE
scratch=$SCRATCH
port=$(free_port 18800)
base="http://127.0.0.1:$port"
export CUELINE_LOG_LEVEL=warning
serve_open "$port" "$scratch/serve.log"
server=$SERVER_PID
for n in $(seq 0 9); do
    "$cueline" channel create "load$n" --segment-duration 2 --window 8 \
        --rendition 1080p,5000000,1080p/seg{n}.ts --rendition 720p,2800000,720p/seg{n}.ts --rendition 360p,800000,360p/seg{n}.ts >/dev/null
done
sleep 2.2  # every channel has a first segment

log "load for $minutes min: 50 clients polling, 20 commands/s on 10 channels"
python3 - "$base" "$server" "$minutes" "$cueline" "$scratch" <<'PY'
import json, os, random, re, subprocess, sys, threading, time, urllib.request, urllib.error
base, server, minutes, cueline, scratch = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4], sys.argv[5]
end = time.time() + minutes * 60
lock = threading.Lock()
stats = {"polls": 0, "poll_errors": [], "backwards": [], "commands": 0, "command_errors": [], "lint_runs": 0, "lint_findings": []}
poll_ms, command_ms, rss = [], [], []
renditions = ["1080p", "720p", "360p"]

def get(path):
    with urllib.request.urlopen(base + path, timeout=5) as r:
        return r.status, r.read().decode(), r.headers.get("X-Cueline-Tick")

def client(number):
    rng = random.Random(number)
    last = {}
    while time.time() < end:
        channel, rendition = f"load{rng.randrange(10)}", rng.choice(renditions)
        t = time.perf_counter()
        try:
            status, body, _ = get(f"/channels/{channel}/{rendition}.m3u8")
            msn = int(re.search(r"#EXT-X-MEDIA-SEQUENCE:(\d+)", body).group(1))
            with lock:
                stats["polls"] += 1
                poll_ms.append((time.perf_counter() - t) * 1000)
                if msn < last.get((channel, rendition), -1):
                    stats["backwards"].append((channel, rendition, last[(channel, rendition)], msn))
            last[(channel, rendition)] = msn
        except Exception as e:
            with lock: stats["poll_errors"].append(repr(e))
        time.sleep(rng.uniform(0.3, 0.7))  # players poll about every half target duration

def post(channel, body, expected=(201,)):
    t = time.perf_counter()
    req = urllib.request.Request(f"{base}/channels/{channel}/commands", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=5) as r: status = r.status
    except urllib.error.HTTPError as e:
        status = e.code
    except Exception as e:
        status = repr(e)
    with lock:
        stats["commands"] += 1
        command_ms.append((time.perf_counter() - t) * 1000)
        if status not in expected: stats["command_errors"].append((channel, body["command"], status))

def commands():
    # Per channel: place a break a minute ahead, then cancel it (always valid). Channel load0 also airs a real
    # break every 30 s and ends it early 6 s in, so playlists under load carry interstitials and early returns.
    n, next_air, onair_end = 0, time.time(), None
    start = time.time()
    while time.time() < end:
        channel = f"load{(n // 2) % 10}"  # a place and its cancel go to the same channel
        if n % 2 == 0:
            post(channel, {"command": "place_break", "id": f"b{n}", "in": 60 + (n % 200) * 0.1, "duration": 0.05, "asset_uri": "https://ads.example.com/a.m3u8"})
        else:
            post(channel, {"command": "cancel_break", "id": f"b{n - 1}"})
        if channel == "load0" and time.time() >= next_air:
            post("load0", {"command": "place_break", "in": 4, "duration": 20, "asset_uri": "https://ads.example.com/live.m3u8"})
            onair_end, next_air = time.time() + 10, time.time() + 30
        if onair_end and time.time() >= onair_end:
            post("load0", {"command": "cancel_current_event"}, expected=(201, 409))
            onair_end = None
        n += 1
        time.sleep(max(0, start + n / 20 - time.time()))

def lint():
    previous = {}
    while time.time() < end:
        time.sleep(5)
        for channel in ("load0", "load1"):
            for attempt in range(3):
                fetched = [get(f"/channels/{channel}/{r}.m3u8") for r in renditions]
                if len({tick for _, _, tick in fetched}) == 1: break  # one instant for all renditions
            files = []
            for r, (_, body, _) in zip(renditions, fetched):
                path = f"{scratch}/{channel}-{r}-{int(time.time() * 1000)}.m3u8"
                open(path, "w").write(body); files.append(path)
            args = [cueline, "lint"] + files
            for p in previous.get(channel, []): args += ["--previous", p]
            result = subprocess.run(args, capture_output=True, text=True)
            with lock:
                stats["lint_runs"] += 1
                if result.returncode != 0: stats["lint_findings"].append(result.stdout[-2000:])
            for p in previous.get(channel, []): os.remove(p)
            previous[channel] = files

def memory():
    while time.time() < end:
        with open(f"/proc/{server}/status") as f:
            kb = int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))
        rss.append((time.time(), kb / 1024))
        time.sleep(10)

threads = [threading.Thread(target=client, args=(i,)) for i in range(50)]
threads += [threading.Thread(target=commands), threading.Thread(target=lint), threading.Thread(target=memory)]
for t in threads: t.start()
for t in threads: t.join()

def pct(values, p):
    values = sorted(values); return values[min(len(values) - 1, int(len(values) * p))]
second = [m for t, m in rss if rss[0][0] + 60 <= t < rss[0][0] + 120] or [rss[0][1]]
last = [m for t, m in rss if t >= rss[-1][0] - 60]
print(f"playlist polls: {stats['polls']} ({stats['polls'] / (minutes * 60):.0f}/s), errors {len(stats['poll_errors'])}, "
      f"p50 {pct(poll_ms, .5):.1f} ms, p99 {pct(poll_ms, .99):.1f} ms, media sequence backwards {len(stats['backwards'])}")
print(f"commands: {stats['commands']} ({stats['commands'] / (minutes * 60):.1f}/s), unexpected answers {len(stats['command_errors'])}, "
      f"p50 {pct(command_ms, .5):.1f} ms, p99 {pct(command_ms, .99):.1f} ms")
print(f"lint: {stats['lint_runs']} runs (3 renditions against their previous versions), findings in {len(stats['lint_findings'])}")
print(f"resident memory: second minute {max(second):.0f} MiB, last minute {max(last):.0f} MiB, peak {max(m for _, m in rss):.0f} MiB")
for e in (stats["poll_errors"][:5] + stats["command_errors"][:5] + stats["backwards"][:5] + stats["lint_findings"][:2]): print("  ", e)
ok = not stats["poll_errors"] and not stats["command_errors"] and not stats["backwards"] and not stats["lint_findings"] \
    and max(last) <= max(second) * 1.2 + 16
print("PASS" if ok else "FAIL")
sys.exit(0 if ok else 1)
PY
