#!/usr/bin/env bash
# LL-HLS benchmark (issue 14), appended to Benchmarks/results.md:
#   blocked : 1,000 clients on 100 channels (1 s segments, 0.25 s parts, all boundaries aligned), each blocking on the
#             next part (_HLS_msn/_HLS_part) as a player does, for 30 s: how long after its part's boundary each answer
#             arrived at the client (p50/p99/worst), the server's CPU and memory. Baselines: the same with 10 clients,
#             and the same 1,000 clients with one more request header (`Connection: keep-alive, bench`) that the raw
#             path leaves to the HTTP codec: what the answers cost through the codec in the same run; and the floor:
#             the same 1,000 clients against scripts/lib/ll_floor_server.c, a C server that only holds each request
#             to its boundary and writes a fixed answer of the same size (cueline stopped meanwhile).
#   early return: a break on air on 20 of the channels, cancel_current_event sent over HTTP to each: from sending the
#             command to a client blocked on that channel holding the augmenting tag (X-PLAYOUT-LIMIT); a run of its own
#             (the same 1,000 clients, 20 of them in Python), so the main row and its baselines carry no commands.
# The clients run on the same 2 cores as the server (one C process, and Python for the trials). The C clients run at
# idle priority (SCHED_IDLE: they take only CPU time nothing else wants), as players on devices of their own take none
# of the server's; one more row runs them at normal priority, taking their ~23 us per answer from the server's cores
# just when the answers are due. The server pins one event loop to each core (`serve --pin-event-loops`), and so does
# the floor server.
set -euo pipefail
source "$(dirname "$0")/../lib/common.sh"
cd "$(repo_root)"

ensure_build_deps
out=Benchmarks/results.md
pgdir=$(mktemp -d /tmp/cueline-bench-ll.XXXXXX)
chmod 755 "$pgdir"
server=
floor_pid=
cleanup() {
    [ -n "$floor_pid" ] && kill "$floor_pid" 2>/dev/null || true
    # The server may be stopped (the floor's run): a pending SIGTERM only acts once it runs again.
    [ -n "$server" ] && { kill "$server" 2>/dev/null; kill -CONT "$server" 2>/dev/null; } || true
    stop_cluster
    rm -rf "$pgdir"
}
trap cleanup EXIT
start_cluster "$pgdir"
log "building (release)"
swift build -c release >/dev/null
bin=$(swift build -c release --show-bin-path)
export CUELINE_MIGRATIONS=$PWD/Migrations
"$bin/cueline" migrate >/dev/null
port=18791
channels=${LL_CHANNELS:-100}
clients=${LL_CLIENTS:-1000}
seconds=${LL_SECONDS:-30}
# One epoch for all: every channel's parts end at the same instants (the hardest case).
epoch=$(date -u -d "@$(( $(date +%s) - 60 ))" +%Y-%m-%dT%H:%M:%SZ)
epoch_ms=$(( $(date -u -d "$epoch" +%s) * 1000 ))
log "creating $channels channels with parts"
for i in $(seq 0 $((channels - 1))); do
    "$bin/cueline" channel create "ll-$i" --segment-duration 1 --part-duration 0.25 --window 10 --epoch "$epoch" \
        --rendition 720p,3000000,720p/seg{n}.m4s --map 720p=720p/init.mp4 --part 720p=720p/seg{n}.{p}.m4s \
        --rendition 480p,1500000,480p/seg{n}.m4s --map 480p=480p/init.mp4 --part 480p=480p/seg{n}.{p}.m4s >/dev/null
done
secret=$("$bin/cueline" token create bench --role operator)
"$bin/cueline" serve --port "$port" --pin-event-loops >/tmp/cueline-bench-ll.log 2>&1 &
server=$!
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/channels/ll-0/720p.m3u8" >/dev/null && break; sleep 0.1; done

# The blocked clients run in one C process (scripts/lib/ll_clients.c, epoll: a few microseconds per answer, where a
# Python asyncio client spends ~40 us, so 1,000 answers due at one instant would queue ~40 ms of client CPU on the
# cores the server shares); the early-return trials, with a client blocked on each trial channel, run in Python.
clients_bin="$pgdir/ll_clients"
"${CC:-$(command -v clang || command -v cc)}" -O2 -o "$clients_bin" scripts/lib/ll_clients.c
floor_bin="$pgdir/ll_floor_server"
"${CC:-$(command -v clang || command -v cc)}" -O2 -pthread -o "$floor_bin" scripts/lib/ll_floor_server.c
# The C clients' scheduling: idle (SCHED_IDLE) unless a run says otherwise (client_priority=normal).
command -v chrt >/dev/null || die "chrt (util-linux) is missing: the clients could not run at idle priority"
idle_clients=(chrt --idle 0)
client_priority=idle
measure() {  # clients trials [extra header] -> JSON with the server's CPU seconds and peak RSS added
    local before after rss dir py
    dir=$(mktemp -d)
    py=$(( $2 > 0 ? $2 : 0 ))
    before=$(awk '{print $14 + $15}' /proc/$server/stat)
    if [ "$py" -gt 0 ]; then
        python3 scripts/lib/ll_clients.py 127.0.0.1 "$port" "$channels" "$py" "$seconds" "$epoch_ms" 250 4 "$secret" "$2" 0 >"$dir/py.json" &
    fi
    local run_as=("${idle_clients[@]}")
    [ "$client_priority" = idle ] || run_as=()
    "${run_as[@]}" "$clients_bin" 127.0.0.1 "$port" "$channels" $(( $1 - py )) "$seconds" "$epoch_ms" 250 4 "$py" "${3:-}" >"$dir/c.json" &
    wait
    after=$(awk '{print $14 + $15}' /proc/$server/stat)
    rss=$(awk '/VmHWM/ {print $2}' /proc/$server/status)
    curl -fs "http://127.0.0.1:$port/metrics" | grep '^cueline_blocked_reload_lateness_seconds_bucket' >"$dir/buckets" || true
    python3 - "$dir" "$before" "$after" "$rss" "$(getconf CLK_TCK)" "$seconds" <<'PY'
import glob, json, re, sys
parts = [json.load(open(f)) for f in sorted(glob.glob(sys.argv[1] + "/*.json"))]
b, a, r, hz, s = map(float, sys.argv[2:])
# Server side: when each blocked answer was ready after its part's boundary (cumulative histogram since start; the
# previous measurement's counts are subtracted by the caller through LL_PREVIOUS_BUCKETS).
buckets = {}
for line in open(sys.argv[1] + "/buckets"):
    m = re.match(r'.*le="([^"]+)".*\} (\S+)', line)
    if m: buckets[m.group(1)] = float(m.group(2))

late = sorted(x for p in parts for x in p["lateness_ms"])
# Kernel receive timestamps (the C clients only): when the answer reached the client's socket.
arrived = sorted(x for p in parts for x in p.get("arrived_ms", []))
unstamped = sum(p.get("unstamped", 0) for p in parts)
delays = sorted(x for p in parts for x in p["delays_ms"])
# The C clients' own CPU per answer they read (the Python clients do not report theirs).
c_parts = [p for p in parts if "client_cpu_ms" in p]
c_answers = sum(len(p["lateness_ms"]) for p in c_parts)
client_cpu_us = round(sum(p["client_cpu_ms"] for p in c_parts) * 1000 / c_answers, 1) if c_answers else None
pct = lambda v, q: round(v[min(len(v) - 1, int(len(v) * q))], 1) if v else None
print(json.dumps({
    "answers": len(late), "errors": sum(p["errors"] for p in parts), "unstamped": unstamped,
    "late_p50_ms": pct(late, 0.5), "late_p99_ms": pct(late, 0.99), "late_max_ms": round(late[-1], 1) if late else None,
    "arrived_p50_ms": pct(arrived, 0.5), "arrived_p99_ms": pct(arrived, 0.99),
    "arrived_max_ms": round(arrived[-1], 1) if arrived else None,
    "arrived_within_20_percent": round(sum(1 for x in arrived if x <= 20) / len(arrived) * 100, 1) if arrived else None,
    "trials": sum(p["trials"] for p in parts), "trials_seen": len(delays),
    "command_to_client_p50_ms": pct(delays, 0.5), "command_to_client_p99_ms": pct(delays, 0.99),
    "command_to_client_max_ms": round(delays[-1], 1) if delays else None,
    "server_cpu_percent": round((a - b) / hz / s * 100), "server_peak_rss_mib": round(r / 1024), "client_cpu_us": client_cpu_us,
    "server_buckets": buckets}))
PY
    rm -rf "$dir"
}
# The machine's own share of the cores over the runs: time the hypervisor gave to others (steal), reported below.
cpu_start=$(head -1 /proc/stat)
log "10 clients (baseline)"
base=$(measure 10 0)
log "$clients clients on $channels channels"
load=$(measure "$clients" 0)
log "$clients clients on $channels channels, the clients at normal priority"
client_priority=normal
normal=$(measure "$clients" 0)
client_priority=idle
log "$clients clients on $channels channels, 20 of them in Python, with 20 early returns"
trials=$(measure "$clients" 20)
log "$clients clients through the HTTP codec (baseline)"
codec=$(measure "$clients" 0 "Connection: keep-alive, bench")
raw=$(curl -fs "http://127.0.0.1:$port/metrics" | awk '/^cueline_playlist_raw_requests_total / {print $2}')
# The floor: the same clients against scripts/lib/ll_floor_server.c, which holds each request to its boundary and
# writes a fixed answer of the size of cueline's, head and body (no rendering, no log): what the kernel and the
# clients alone take on these cores. cueline is stopped (SIGSTOP) meanwhile, so it takes no CPU; PostgreSQL stays
# idle. The size is a whole answer (`curl -i`) of a channel without the early-return trials' breaks.
response_bytes=$(curl -fsi "http://127.0.0.1:$port/channels/ll-$((channels - 1))/720p.m3u8" | wc -c)
log "$clients clients against the floor server ($response_bytes-byte answers; baseline)"
kill -STOP "$server"
floor_dir=$(mktemp -d)
"$floor_bin" $((port + 1)) "$epoch_ms" 250 4 "$response_bytes" "$(nproc)" 1 & floor_pid=$!
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$((port + 1))/channels/ll-0/720p.m3u8" >/dev/null && break; sleep 0.05; done
floor_before=$(awk '{print $14 + $15}' /proc/$floor_pid/stat)
"${idle_clients[@]}" "$clients_bin" 127.0.0.1 $((port + 1)) "$channels" "$clients" "$seconds" "$epoch_ms" 250 4 0 >"$floor_dir/c.json"
floor_after=$(awk '{print $14 + $15}' /proc/$floor_pid/stat)
kill "$floor_pid"; wait "$floor_pid" 2>/dev/null || true
floor_pid=
kill -CONT "$server"
floor=$(python3 - "$floor_dir/c.json" "$floor_before" "$floor_after" "$(getconf CLK_TCK)" "$seconds" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
b, a, hz, s = map(float, sys.argv[2:])
arrived = sorted(d["arrived_ms"])
pct = lambda v, q: round(v[min(len(v) - 1, int(len(v) * q))], 1) if v else None
d.update({"arrived_p50_ms": pct(arrived, 0.5), "arrived_p99_ms": pct(arrived, 0.99),
          "arrived_max_ms": round(arrived[-1], 1) if arrived else None,
          "arrived_within_20_percent": round(sum(1 for x in arrived if x <= 20) / len(arrived) * 100, 1) if arrived else None,
          "server_cpu_percent": round((a - b) / hz / s * 100), "server_peak_rss_mib": "—",
          "client_cpu_us": round(d["client_cpu_ms"] * 1000 / len(d["lateness_ms"]), 1) if d["lateness_ms"] else None})
del d["lateness_ms"], d["arrived_ms"]
print(json.dumps(d))
PY
)
rm -rf "$floor_dir"
loadavg=$(cut -d' ' -f1-3 /proc/loadavg)
steal=$(python3 - "$cpu_start" "$(head -1 /proc/stat)" <<'PY'
import sys
a, b = ([int(x) for x in line.split()[1:]] for line in sys.argv[1:3])
d = [y - x for x, y in zip(a, b)]
print(f"{d[7] / max(1, sum(d)) * 100:.1f}")
PY
)
python3 - "$base" "$load" "$loadavg" "$channels" "$clients" "$seconds" "$codec" "${raw:-0}" "$floor" "$response_bytes" "$trials" "$steal" "$normal" >>"$out" <<'PY'
import json, sys
base, load, codec, floor = json.loads(sys.argv[1]), json.loads(sys.argv[2]), json.loads(sys.argv[7]), json.loads(sys.argv[9])
trials, normal = json.loads(sys.argv[11]), json.loads(sys.argv[13])
response_bytes = sys.argv[10]
raw = int(float(sys.argv[8]))
# The server's histogram is cumulative over the run: the 1,000-client counts are the second reading less the first.
def server_side(now, before):
    keys = sorted((k for k in now if k != "+Inf"), key=float) + ["+Inf"]
    counts = {k: now.get(k, 0) - before.get(k, 0) for k in keys}
    total = counts["+Inf"] or 1
    within20 = counts.get("0.02", 0) / total * 100
    p99 = next((k for k in keys if counts[k] >= 0.99 * total), "+Inf")
    p50 = next((k for k in keys if counts[k] >= 0.5 * total), "+Inf")
    ms = lambda k: "over 1 s" if k == "+Inf" else f"≤ {float(k) * 1000:g} ms"
    return f"{int(counts['+Inf'])} answers, {within20:.1f} % within 20 ms of the boundary, p50 {ms(p50)}, p99 {ms(p99)}"
base_server = server_side(base["server_buckets"], {})
load_server = server_side(load["server_buckets"], base["server_buckets"])
normal_server = server_side(normal["server_buckets"], load["server_buckets"])
trials_server = server_side(trials["server_buckets"], normal["server_buckets"])
codec_server = server_side(codec["server_buckets"], trials["server_buckets"])
ratio = lambda key, to=codec: f"{load[key] / to[key]:.2f}" if to.get(key) else "—"
loadavg, channels, clients, seconds = sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6]
rows = "\n".join(
    f"| {name} | {m['answers']} | {m['errors']} | {m['arrived_p50_ms']} ms | {m['arrived_p99_ms']} ms | {m['arrived_max_ms']} ms | "
    f"{m['arrived_within_20_percent']} % | {m['late_p50_ms']} ms | {m['late_p99_ms']} ms | {m['late_max_ms']} ms | "
    f"{m['server_cpu_percent']} % | {m['server_peak_rss_mib']} MiB | {m.get('client_cpu_us')} us |"
    for name, m in [("10 (baseline)", base), (clients, load), (f"{clients}, the clients at normal priority", normal),
                    (f"{clients}, 20 of them in Python, with 20 early returns", trials),
                    (f"{clients} through the HTTP codec (baseline)", codec),
                    (f"{clients} against the floor server (baseline)", floor)])
print(f"""
## LL-HLS blocking reload (`scripts/bench/bench-ll.sh`)
{channels} channels of 1 s segments and 0.25 s parts, 2 renditions, one epoch (every part boundary aligned), on a
release build; each client blocks on the next part of `720p` as a player does, {seconds} s. Lateness after the
part's boundary, two ways: when the answer reached the client's socket (the kernel's receive timestamp; on loopback
it is taken as the server's write hands the bytes over: what a player on a device of its own sees, less the network),
and when the client process read it (the clients share the 2 cores with the
server and PostgreSQL, in one C process, epoll, `scripts/lib/ll_clients.c`, which reads the answers due at one
instant one after another; the 20 clients of the early-return trials in Python, read times only). The C clients run
at idle priority (`chrt --idle 0`: they take only CPU time nothing else wants, as players on devices of their own take
none of the server's; their reads then come late, their sockets' timestamps do not) except in the row "at normal
priority", where their own CPU competes with the server's at every boundary. The server pins one event loop to each
core (`serve --pin-event-loops`), the floor server one thread to each core.
Load average at the end: {loadavg}; CPU time the hypervisor gave to others (steal) over the runs: {sys.argv[12]} % of the
cores' time. Between runs on this machine the same binary's CPU for the same answers has varied by up to 1.5x with no
steal: compare rows of one run.

| clients | answers | errors | reached the socket p50 | p99 | worst | within 20 ms | read by the client p50 | p99 | worst | server CPU | server peak RSS | C clients' CPU per answer |
|---|---|---|---|---|---|---|---|---|---|---|---|---|
{rows}
| ratio, raw path / codec | | | {ratio('arrived_p50_ms')} | {ratio('arrived_p99_ms')} | {ratio('arrived_max_ms')} | | {ratio('late_p50_ms')} | {ratio('late_p99_ms')} | {ratio('late_max_ms')} | {ratio('server_cpu_percent')} | | {ratio('client_cpu_us')} |
| ratio, raw path / floor | | | {ratio('arrived_p50_ms', floor)} | {ratio('arrived_p99_ms', floor)} | {ratio('arrived_max_ms', floor)} | | {ratio('late_p50_ms', floor)} | {ratio('late_p99_ms', floor)} | {ratio('late_max_ms', floor)} | {ratio('server_cpu_percent', floor)} | | {ratio('client_cpu_us', floor)} |

The floor server (`scripts/lib/ll_floor_server.c`, one thread per core) holds each request to its part's boundary and
writes a fixed {response_bytes}-byte answer (head and body, the size of cueline's) whose preload hint names the next
part, in one write: no rendering, no log, no checks. It runs alone (cueline stopped meanwhile) with the same clients:
what the kernel and the clients take for these answers on these cores, the least any server could do here. The
{clients}-client row and the baselines carry no commands; the row with early returns replaces 20 of the C clients with
Python ones (about 40 us of client CPU per answer instead of a few) and sends the 20 commands. Timestamps missing from
reads (left out of "reached the socket"): {sum(m.get('unstamped', 0) for m in (base, load, normal, trials, codec, floor))}.
The C clients open their connections one after another over the first second of each row (as a crowd joins, not
1,000 at one instant), and every answer from the first is counted.
"C clients' CPU per answer" is the C client process's own user and system time (`getrusage`) over the answers it read:
its reads and the next requests it sends take that much of the same 2 cores, more when answers come one by one (an
idle client is woken for each) than when they come together.

Server side (`cueline_blocked_reload_lateness_seconds`: when the answer was ready after its part's boundary, before
it is written): 10 clients: {base_server}; {clients} clients: {load_server}; the clients at normal priority:
{normal_server}; with the early returns: {trials_server};
through the codec: {codec_server}.
Answered on raw bytes over the run: {raw:,} (the codec baseline's requests carry a header the raw path leaves to
the codec).

Early return: cancel_current_event over HTTP on {trials['trials']} channels with a break on air, one client of each
channel blocked on the next part; from sending the command to that client holding the augmenting tag
(X-PLAYOUT-LIMIT), {trials['trials_seen']} seen: p50 {trials['command_to_client_p50_ms']} ms, p99
{trials['command_to_client_p99_ms']} ms, worst {trials['command_to_client_max_ms']} ms (includes the 50 ms effect delay and
the wait for the next part boundary, up to 250 ms).
""")
PY
tail -20 "$out"
