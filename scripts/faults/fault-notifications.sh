#!/usr/bin/env bash
# Fault check for signed notifications out (issue 33, docs/notifications.md): two `cueline serve` instances on one
# database, running as the service's least-privileged role, two subscriptions (one made with the CLI, one through the
# admin API) on two receivers
# (scripts/faults/notify_receiver.py). While breaks are placed, limited and cancelled on two channels through either
# instance, the "fault" receiver answers 500, then slowly (3 s), then is stopped and started again, and the instance
# that holds the delivery lease is killed with SIGKILL. Then:
#   - every fact the commands made (placed, limited, cancelled, on-air, ended-early, aired, removed, and refused for
#     a break cancelled twice) reached both
#     receivers at least once, every signature valid;
#   - in order per channel (by first receipt): log positions of commanded facts increasing, and per break placed <
#     on-air < aired/ended-early, limited < ended-early, cancelled < removed, cancelled < refused;
#   - the other instance took the lease over within 10 s of the kill;
#   - the "steady" receiver was not held up by the failing one (its commanded facts within 3 s while the other
#     failed and was slow);
#   - the fault subscription's lag on /metrics grew while its receiver was down, and both subscriptions' lag is back
#     to 0 at the end.
# Prints what it measured; exits non-zero on any failure.
set -euo pipefail
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/demo.sh"
cd "$(repo_root)"

throwaway_service
psql=("$CUELINE_PGBIN/psql" -X -q -v ON_ERROR_STOP=1 "$DATABASE_URL")
"${psql[@]}" -c "ALTER ROLE cueline_app LOGIN"
app_url="postgresql://cueline_app@127.0.0.1:$CUELINE_PGPORT/cueline"

"$CUELINE" channel create north --segment-duration 1 --window 6 --rendition 720p,1000000,720p/seg{n}.ts >/dev/null
"$CUELINE" channel create south --segment-duration 1 --window 6 --rendition 720p,1000000,720p/seg{n}.ts >/dev/null
r1=$(free_port 18600)
r2=$(free_port $((r1 + 1)))
fault_secret=$("$CUELINE" subscription create fault --url "http://127.0.0.1:$r1/hook" 2>/dev/null)

serve_app() {
    DATABASE_URL=$app_url "$CUELINE" serve --port "$1" --unauthenticated-commands >>"$2" 2>&1 &
    SERVER_PID=$!
    BACKGROUND_PIDS+=("$SERVER_PID")
    wait_http "http://127.0.0.1:$1/readyz" 30 || { tail -20 "$2" >&2; die "cueline serve on port $1 did not start"; }
}
a=$(free_port 18620); serve_app "$a" "$SCRATCH/a.log"; pid_a=$SERVER_PID
b=$(free_port $((a + 1))); serve_app "$b" "$SCRATCH/b.log"; pid_b=$SERVER_PID
# The second subscription through the admin API (open mode), written by the service's role.
steady_secret=$(curl -fsS -H 'Content-Type: application/json' \
    -d "{\"name\":\"steady\",\"url\":\"http://127.0.0.1:$r2/hook\",\"channels\":[\"north\",\"south\"]}" \
    "http://127.0.0.1:$a/subscriptions" | python3 -c 'import json, sys; print(json.load(sys.stdin)["secret"])')
"$CUELINE" subscription list >&2

status=0
(python3 - "$a" "$b" "$pid_a" "$pid_b" "$r1" "$r2" "$fault_secret" "$steady_secret" "$SCRATCH" <<'PY'
import json, os, re, signal, subprocess, sys, time, urllib.request
from datetime import datetime

a, b, pid_a, pid_b, r1, r2, fault_secret, steady_secret, scratch = sys.argv[1:10]
servers = {f"http://127.0.0.1:{a}": int(pid_a), f"http://127.0.0.1:{b}": int(pid_b)}
receiver = os.path.join(os.getcwd(), "scripts/faults/notify_receiver.py")
mode_file = os.path.join(scratch, "fault.mode")
logs = {"fault": os.path.join(scratch, "fault.jsonl"), "steady": os.path.join(scratch, "steady.jsonl")}
procs = {}
failures = []

def set_mode(mode):
    with open(mode_file, "w") as f:
        f.write(mode)

def start_receiver(name):
    port, secret = (r1, fault_secret) if name == "fault" else (r2, steady_secret)
    args = [sys.executable, receiver, port, secret, logs[name]] + ([mode_file] if name == "fault" else [])
    procs[name] = subprocess.Popen(args)

def stop_receiver(name):
    procs[name].kill()
    procs[name].wait()

def iso(text):
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()

def post(base, channel, body):
    req = urllib.request.Request(f"{base}/channels/{channel}/commands", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")

def metric(base, name, labels=""):
    with urllib.request.urlopen(base + "/metrics", timeout=5) as r:
        text = r.read().decode()
    for line in text.splitlines():
        match = re.match(rf'^{name}(\{{[^}}]*\}})? ([0-9.e+-]+)$', line)
        if match and labels in (match.group(1) or ""):
            return float(match.group(2))
    return None

set_mode("ok")
start_receiver("fault")
start_receiver("steady")
alive = list(servers)
t0 = time.time()
# Each break: (at, channel, id, what): every 1.6 s, on the two channels in turn, 2 s ahead for 3 s (one segment's
# rounding later at most, so a channel's breaks never overlap); "cancel" ones are withdrawn 0.5 s after they are
# placed, "limit" ones get a playout limit of 2.5 s 4.05 s after they are placed (on air by then, ending after the
# live edge).
plan = []
for i in range(24):
    at = 1 + i * 1.6
    plan.append((at, "place", ("north", "south")[i % 2], f"b{i}", ("plain", "cancel", "limit")[i % 3]))
events = sorted(plan)
queue = [(at, kind, channel, brk, what) for at, kind, channel, brk, what in events]
faults = [(6, "fail"), (12, "slow"), (18, "ok"), (20, "stop"), (26, "start"), (30, "kill")]
expected = {}   # (channel, break) -> set of kinds
killed_at = None
takeover = None
last_check = 0
sent = 0

def check_takeover():
    # The survivor holds the lease: how long after the kill.
    global takeover, last_check
    if killed_at is None or takeover is not None or time.time() - last_check < 0.1:
        return
    last_check = time.time()
    if metric(alive[0], "cueline_notification_lease_held") == 1:
        takeover = time.time() - killed_at

outage_lag = []   # (facts, seconds) on /metrics while the fault receiver is stopped
last_lag = 0

while queue or faults:
    check_takeover()
    now = time.time() - t0
    if 21 <= now < 26 and time.time() - last_lag >= 0.5:
        last_lag = time.time()
        outage_lag.append((metric(alive[0], "cueline_notification_lag", 'subscription="fault"') or 0,
                           metric(alive[0], "cueline_notification_lag_seconds", 'subscription="fault"') or 0))
    if faults and faults[0][0] <= now:
        _, fault = faults.pop(0)
        if fault in ("fail", "slow", "ok"):
            set_mode(fault)
        elif fault == "stop":
            stop_receiver("fault")
        elif fault == "start":
            start_receiver("fault")
        elif fault == "kill":
            holder = [base for base in alive if metric(base, "cueline_notification_lease_held") == 1]
            if len(holder) != 1:
                failures.append(f"expected one lease holder before the kill, found {holder}")
            else:
                os.kill(servers[holder[0]], signal.SIGKILL)
                alive.remove(holder[0])
                killed_at = time.time()
                print(f"killed the lease holder {holder[0]} (pid {servers[holder[0]]})")
        continue
    if queue and queue[0][0] <= now:
        at, kind, channel, brk, what = queue.pop(0)
        base = alive[sent % len(alive)]
        sent += 1
        if kind == "place":
            status, answer = post(base, channel, {"command": "place_break", "id": brk, "in": 2, "duration": 3,
                                                  "asset_uri": "https://ads.example.com/a.m3u8"})
            if status != 201:
                failures.append(f"place {brk}: {status} {answer}")
                continue
            expected[(channel, brk)] = {"placed"}
            if what == "cancel":
                queue.append((now + 0.5, "cancel", channel, brk, what))
            elif what == "limit":
                queue.append((now + 4.05, "limit", channel, brk, what))
            queue.sort()
        elif kind == "cancel":
            status, answer = post(base, channel, {"command": "cancel_break", "id": brk})
            if status != 201:
                failures.append(f"cancel {brk}: {status} {answer}")
                continue
            expected[(channel, brk)] |= {"cancelled", "removed"}
            queue.append((now + 0.2, "recancel", channel, brk, what))
            queue.sort()
        elif kind == "recancel":
            # Cancelled already: refused (409), recorded, and notified as "refused" after the cancellation.
            status, answer = post(base, channel, {"command": "cancel_break", "id": brk})
            if status != 409:
                failures.append(f"second cancel of {brk}: {status} {answer}")
                continue
            expected[(channel, brk)] |= {"refused"}
        elif kind == "limit":
            status, answer = post(base, channel, {"command": "set_playout_limit", "id": brk, "playout_limit": 2.5})
            if status != 201:
                failures.append(f"limit {brk}: {status} {answer}")
                continue
            expected[(channel, brk)] |= {"limited"}
        continue
    time.sleep(0.02)
for key, kinds in expected.items():
    if "cancelled" not in kinds:
        kinds |= {"on-air", "ended-early" if "limited" in kinds else "aired"}

# Takeover: the survivor holds the lease within 10 s of the kill.
survivor = alive[0]
while takeover is None and killed_at is not None and time.time() - killed_at < 15:
    check_takeover()
    time.sleep(0.02)
if takeover is None or takeover > 10:
    failures.append(f"the survivor did not take the lease over within 10 s ({takeover})")

def read(name):
    with open(logs[name]) as f:
        return [json.loads(line) for line in f]

def complete(name):
    got = {(r["body"]["channel"], r["body"].get("break_id"), r["body"]["type"]) for r in read(name) if r["status"] == 200}
    return all((c, brk, k) in got for (c, brk), kinds in expected.items() for k in kinds)

# Lag back to 0 and every fact delivered, on the survivor's /metrics.
deadline = time.time() + 120
settled = None
while time.time() < deadline:
    lags = [metric(survivor, "cueline_notification_lag", f'subscription="{s}"') for s in ("fault", "steady")]
    if lags == [0, 0] and complete("fault") and complete("steady"):
        settled = time.time() - t0
        break
    time.sleep(0.5)
if settled is None:
    failures.append(f"lag not back to 0 with every fact delivered within 120 s: {lags}")

for name in ("fault", "steady"):
    records = read(name)
    invalid = [r for r in records if not r["valid"]]
    if invalid:
        failures.append(f"{name}: {len(invalid)} deliveries with an invalid signature")
    accepted = [r for r in records if r["status"] == 200]
    first = {}
    for r in accepted:
        first.setdefault(r["delivery"], r)
    order = {}
    for r in first.values():
        order.setdefault(r["body"]["channel"], []).append(r["body"])
    for channel, bodies in order.items():
        positions = [x["position"] for x in bodies if x["category"] == "commanded" and x["type"] != "refused"]
        if positions != sorted(positions):
            failures.append(f"{name}/{channel}: commanded facts out of log order: {positions}")
        seen = {}
        for index, x in enumerate(bodies):
            seen[(x.get("break_id"), x["type"])] = index
        for brk in {x.get("break_id") for x in bodies}:
            for before, after in (("placed", "on-air"), ("on-air", "aired"), ("on-air", "ended-early"),
                                  ("limited", "ended-early"), ("placed", "cancelled"), ("cancelled", "removed"),
                                  ("cancelled", "refused")):
                if (brk, before) in seen and (brk, after) in seen and seen[(brk, before)] > seen[(brk, after)]:
                    failures.append(f"{name}/{channel}: {brk} {after} before {before}")
    ids = [r["delivery"] for r in accepted]
    wanted = sum(len(k) for k in expected.values())
    missing = [(c, brk, k) for (c, brk), kinds in expected.items() for k in kinds
               if (c, brk, k) not in {(r["body"]["channel"], r["body"].get("break_id"), r["body"]["type"]) for r in accepted}]
    if missing:
        failures.append(f"{name}: {len(missing)} facts never delivered, e.g. {missing[:5]}")
    print(f"{name}: {wanted} facts expected, {len(set(ids))} distinct delivered, {len(ids) - len(set(ids))} "
          f"duplicates, {len(records) - len(accepted)} requests refused or failed, {len(invalid)} invalid signatures")

# The steady subscriber while the other failed and was slow (6 s to 18 s): its commanded facts within 3 s.
steady_delays = [r["received"] - iso(r["body"]["at"]) for r in read("steady")
                 if r["status"] == 200 and r["body"]["category"] == "commanded" and 6 <= r["received"] - t0 <= 18]
if steady_delays and max(steady_delays) > 3:
    failures.append(f"steady subscriber held up while the other failed: up to {max(steady_delays):.2f} s")
print(f"steady subscriber during the other's failures: {len(steady_delays)} commanded facts, "
      f"at most {max(steady_delays or [0]):.2f} s after their decision")
# While its subscriber was down, the fault subscription's lag grew on /metrics (then went back to 0, above).
peak = max(outage_lag or [(0, 0)])
if peak[0] < 1 or max(x[1] for x in outage_lag or [(0, 0)]) <= 0:
    failures.append(f"the fault subscription's lag did not show the outage: {outage_lag}")
print(f"lag while the fault subscriber was down: up to {int(peak[0])} facts, "
      f"{max(x[1] for x in outage_lag or [(0, 0)]):.1f} s behind")
print(f"lease taken over {takeover:.2f} s after the holder was killed" if takeover else "no takeover")
print(f"every fact delivered and lag 0 at {settled:.1f} s after the start" if settled else "not settled")
for name in procs:
    procs[name].kill()
if failures:
    print("FAILED:\n  " + "\n  ".join(failures))
    sys.exit(1)
print("notifications: ok")
PY
) || status=$?
# What the instances said about the lease and failed deliveries (the first lines of each kind).
grep -h 'delivering notifications\|notification lease lost\|notification not delivered' "$SCRATCH"/a.log "$SCRATCH"/b.log \
    | cut -c1-300 | head -8 >&2 || true
exit "$status"
