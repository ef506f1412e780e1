#!/usr/bin/env bash
# Fault check (issue 36): Cueline behind PgBouncer (Debian's, installed here when missing). In transaction mode a
# LISTEN's server session is handed to other clients between transactions, so an instance would hear of no one else's
# commands, and named prepared statements vanish: `cueline serve` must refuse to start, within 10 s, with an error that
# names the pooler. In session mode it must start, take a command through the pooler and show it in the playlist.
# Prints what it measured; exits non-zero on any failure.
set -euo pipefail
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/demo.sh"
cd "$(repo_root)"

apt_install pgbouncer
throwaway_service
bouncer_dir=$SCRATCH/pgbouncer
mkdir -p "$bouncer_dir"
echo '"postgres" ""' >"$bouncer_dir/users.txt"
[ "$(id -u)" -ne 0 ] || chown -R postgres "$bouncer_dir"

bouncer() {  # bouncer MODE : PgBouncer in front of the throwaway cluster, in pool mode MODE, on $bport
    bport=$(free_port 16432)
    cat >"$bouncer_dir/pgbouncer.ini" <<EOF
[databases]
cueline = host=127.0.0.1 port=$CUELINE_PGPORT dbname=cueline user=postgres
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $bport
unix_socket_dir =
auth_type = trust
auth_file = $bouncer_dir/users.txt
pool_mode = $1
logfile = $bouncer_dir/pgbouncer-$1.log
pidfile = $bouncer_dir/pgbouncer-$1.pid
EOF
    [ "$(id -u)" -ne 0 ] || chown postgres "$bouncer_dir/pgbouncer.ini"
    as_pg_owner /usr/sbin/pgbouncer "$bouncer_dir/pgbouncer.ini" >>"$bouncer_dir/stdout.log" 2>&1 &
    BOUNCER_PID=$!
    BACKGROUND_PIDS+=("$BOUNCER_PID")
    for _ in $(seq 50); do (exec 3<>"/dev/tcp/127.0.0.1/$bport") 2>/dev/null && return 0; sleep 0.1; done
    cat "$bouncer_dir/stdout.log" "$bouncer_dir/pgbouncer-$1.log" >&2 2>/dev/null || true
    die "pgbouncer ($1) did not start"
}

"$CUELINE" channel create pooled --segment-duration 1 --window 6 --rendition 720p,1000000,720p/seg{n}.ts >/dev/null
failures=()

# Transaction mode: refused at start, with the reason.
bouncer transaction
port=$(free_port 18640)
started=$(date +%s%N)
status=0
DATABASE_URL="postgresql://postgres@127.0.0.1:$bport/cueline" timeout 30 "$CUELINE" serve --port "$port" \
    --unauthenticated-commands >"$SCRATCH/transaction.log" 2>&1 || status=$?
took=$(awk -v n="$(( $(date +%s%N) - started ))" 'BEGIN { printf "%.2f", n / 1e9 }')
log "transaction mode: cueline serve exited $status after ${took} s"
grep -h 'pooler' "$SCRATCH/transaction.log" | head -2 | cut -c1-400 >&2 || true
[ "$status" -ne 0 ] && [ "$status" -ne 124 ] || failures+=("serve behind a transaction-mode pooler exited $status (expected a refusal)")
grep -q 'pooler in transaction or statement mode' "$SCRATCH/transaction.log" \
    || failures+=("the refusal does not name the pooler: $(tail -3 "$SCRATCH/transaction.log" | tr '\n' ' ' | cut -c1-300)")
awk -v t="$took" 'BEGIN { exit !(t < 10) }' || failures+=("the refusal took ${took} s (bound 10 s)")
# The pooler itself (its pid file), not the runuser that started it.
kill "$(cat "$bouncer_dir/pgbouncer-transaction.pid" 2>/dev/null)" "$BOUNCER_PID" 2>/dev/null || true
wait "$BOUNCER_PID" 2>/dev/null || true

# Session mode: serves, a command through the pooler shows in the playlist.
bouncer session
port=$(free_port 18641)
DATABASE_URL="postgresql://postgres@127.0.0.1:$bport/cueline" serve_open "$port" "$SCRATCH/session.log"
code=$(curl -s -o "$SCRATCH/post.out" -w '%{http_code}' -H 'Content-Type: application/json' \
    -d '{"command":"place_break","id":"through-the-pooler","in":20,"duration":10,"asset_uri":"https://ads.example.com/a.m3u8"}' \
    "http://127.0.0.1:$port/channels/pooled/commands")
[ "$code" = 201 ] || failures+=("place through a session-mode pooler: $code $(cut -c1-200 "$SCRATCH/post.out")")
sleep 1.2
curl -s "http://127.0.0.1:$port/channels/pooled/720p.m3u8" | grep -q 'ID="through-the-pooler"' \
    || failures+=("the break placed through a session-mode pooler is not in the playlist")
log "session mode: cueline serve started, place_break answered $code"

kill "$(cat "$bouncer_dir/pgbouncer-session.pid" 2>/dev/null)" 2>/dev/null || true
if [ ${#failures[@]} -gt 0 ]; then
    printf 'FAILED:\n' >&2
    printf '  %s\n' "${failures[@]}" >&2
    exit 1
fi
log "pooler: ok (transaction mode refused in ${took} s with the reason; session mode serves)"
