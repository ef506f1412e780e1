#!/usr/bin/env bash
# Flat in history (issue 34, item 7): `cueline serve`, running as the service role (cueline_app), started on one
# channel's log of 100 events and then on the same log grown to 100,000 (a year of operation: a break every ~15
# minutes, placed, ended early, some cancelled; written with their hash chain and past decision times, as
# cueline-replay-bench writes them); then an auditor's first replays of instants of that year, with only the
# checkpoints the server wrote as it folded the log (no operator tool wrote any).
#   memory : the server's resident size (VmRSS) after folding each log and 20 s of playlist requests; bound: the
#            100,000-event figure within 10 % of the 100-event one
#   replay : `cueline replay --at` (the CLI, a process each, as the operator runs it) at 10 random instants of the
#            year; bound: < 200 ms each
# Prints a Markdown section; with --append, also appends it to Benchmarks/results.md.
# Usage: scripts/bench/bench-history.sh [--append] [debug|release]   (release by default; about 3 minutes)
set -euo pipefail
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/demo.sh"
cd "$(repo_root)"

append=0
[ "${1:-}" = --append ] && { append=1; shift; }
config=${1:-release}
events=${HISTORY_EVENTS:-100000}
throwaway_service "$config"
swift build -c "$config" --product cueline-replay-bench >/dev/null || die "swift build failed"
writer=$(swift build -c "$config" --show-bin-path)/cueline-replay-bench
"$CUELINE_PGBIN/psql" "$DATABASE_URL" -qc "ALTER ROLE cueline_app LOGIN"
service_url="postgresql://cueline_app@127.0.0.1:$CUELINE_PGPORT/cueline"
port=$(free_port 18900)
base="http://127.0.0.1:$port"

serve() {  # starts the server as the service role and waits until it has folded the whole log; sets server
    DATABASE_URL=$service_url CUELINE_LOG_LEVEL=notice "$CUELINE" serve --port "$port" >>"$SCRATCH/serve.log" 2>&1 &
    server=$!
    BACKGROUND_PIDS+=("$server")
    wait_http "$base/readyz" 120 || { tail -20 "$SCRATCH/serve.log" >&2; die "cueline serve did not start"; }
    for _ in $(seq 600); do
        curl -fs "$base/metrics" | awk '/^cueline_log_position_lag / {found = 1; lag = $2} END {exit !(found && lag == 0)}' \
            && return 0
        sleep 0.1
    done
    die "the server did not catch up with the log"
}
rss_after_load() {  # 20 s of playlist requests, then the resident size in KiB
    python3 -c '
import sys, time, urllib.request
end = time.time() + 20
while time.time() < end:
    for path in ("/channels/history/master.m3u8", "/channels/history/1080p.m3u8", "/channels/history/360p.m3u8"):
        urllib.request.urlopen(sys.argv[1] + path).read()
    time.sleep(0.01)
' "$base"
    awk '/VmRSS/ {print $2}' "/proc/$server/status"
}
stop_server() { kill "$server"; wait "$server" 2>/dev/null || true; }
sql() { "$CUELINE_PGBIN/psql" "$DATABASE_URL" -Atc "$1"; }

# The year ends an hour before now, so every instant of it has been served and its breaks have all aired.
export REPLAY_BENCH_EPOCH=$(date -u -d '366 days ago' +%Y-%m-%dT%H:00:00Z)
small=100
"$writer" write history 1 "$small" >/dev/null
serve
rss_small=$(rss_after_load)
stop_server
"$writer" write history $((small + 1)) "$events" >/dev/null
large=$(sql "SELECT version FROM cueline_streams WHERE channel = 'history'")
started=$(date +%s%N)
serve
catch_up_ms=$((($(date +%s%N) - started) / 1000000))
for _ in $(seq 300); do
    [ "$(sql "SELECT count(*) FROM cueline_snapshots WHERE channel = 'history'")" -ge $((large / 1000)) ] && break
    sleep 0.1
done
rss_large=$(rss_after_load)
checkpoints=$(sql "SELECT count(*) || ', written by ' || coalesce(string_agg(DISTINCT written_by, ', '), 'nobody') FROM cueline_snapshots WHERE channel = 'history'")
read -r first_s last_s <<<"$(sql "SELECT floor(extract(epoch FROM min(decided_at))) || ' ' || floor(extract(epoch FROM max(decided_at))) FROM cueline_events WHERE channel = 'history'")"
replays=()
first_note=
for i in $(seq 10); do
    at=$(date -u -d "@$((first_s + (last_s - first_s) / 1000 * (RANDOM % 1000)))" +%Y-%m-%dT%H:%M:%SZ)
    t0=$(date +%s%N)
    "$CUELINE" replay history --at "$at" >/dev/null 2>"$SCRATCH/replay.err" || { cat "$SCRATCH/replay.err" >&2; die "replay failed"; }
    replays+=($((($(date +%s%N) - t0) / 1000000)))
    [ "$i" = 1 ] && first_note=$(cat "$SCRATCH/replay.err")
done

status=0
python3 - "$small" "$large" "$rss_small" "$rss_large" "$checkpoints" "$catch_up_ms" "$config" "${replays[*]}" \
    "$first_note" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)" >"$SCRATCH/section.md" <<'PY' || status=$?
import sys
small, large, rss_small, rss_large = map(int, sys.argv[1:5])
checkpoints, catch_up_ms, config, replays, note, cores, load = sys.argv[5:12]
replays = [int(x) for x in replays.split()]
ratio = rss_large / rss_small
ok_memory = ratio <= 1.10
ok_replay = max(replays) < 200
print(f"""## history ({config} build, {cores} cores, load average {load} at the end)

`scripts/bench/bench-history.sh`: `cueline serve`, as the service role, started on one channel's log of {small:,} events,
then on the same log grown to a year of operation ({large:,} events, folded by the server in {int(catch_up_ms):,} ms from
its start).

| measure | after {small:,} events | after {large:,} events | ratio | bound |
|---|---|---|---|---|
| server resident size, after folding the log and 20 s of playlist requests | {rss_small / 1024:.1f} MiB | {rss_large / 1024:.1f} MiB | {ratio:.2f} | ≤ 1.10 {'(met)' if ok_memory else '(NOT MET)'} |

Checkpoints the server wrote as it folded: {checkpoints}. The first replays of that year (the CLI, a process each, at
random instants): {', '.join(f'{r} ms' for r in replays)}; worst {max(replays)} ms, bound 200 ms
{'(met)' if ok_replay else '(NOT MET)'}. The first one said: `{note.strip() or 'no checkpoint used'}`.
""")
sys.exit(0 if ok_memory and ok_replay else 3)
PY
cat "$SCRATCH/section.md"
if [ "$append" = 1 ]; then { echo; cat "$SCRATCH/section.md"; } >>Benchmarks/results.md; fi
exit "$status"
