# Shared by the scripts in scripts/: installing what is missing and running a throwaway PostgreSQL.
# Source it; it defines functions and sets nothing else but CUELINE_LOG_START (see log).

# Every line carries the time since the outermost script started (nested scripts inherit the start), so a slow CI
# run shows where its minutes went.
: "${CUELINE_LOG_START:=$(date +%s)}"
export CUELINE_LOG_START
log() { local t=$(( $(date +%s) - CUELINE_LOG_START )); printf '==> [%d:%02d] %s\n' $((t / 60)) $((t % 60)) "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

repo_root() { cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd; }

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
        die "need root to run: $* (install it by hand or run as root)"; fi
}

# apt_install PKG... : installs the Debian packages that are not installed yet.
apt_install() {
    local missing=()
    for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
    [ ${#missing[@]} -eq 0 ] && return 0
    log "installing ${missing[*]}"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
        || die "apt-get install ${missing[*]} failed"
}

ensure_build_deps() { apt_install pkg-config libpq-dev libssl-dev; }

# ensure_threefive : installs threefive from PyPI when python3 cannot import it: the independent SCTE-35 decoder that
# SCTE35Tests runs on the sections the encoder writes (scripts/ci/check-scte35-threefive.py). A failed install is
# said and not fatal: that test then skips, saying why.
ensure_threefive() {
    command -v python3 >/dev/null || apt_install python3 python3-pip
    python3 -c 'import threefive' 2>/dev/null && return 0
    log "installing threefive (PyPI) for the SCTE-35 decoder check"
    python3 -m pip install -q threefive==3.1.5 >/dev/null 2>&1 \
        || python3 -m pip install -q --break-system-packages threefive==3.1.5 >/dev/null 2>&1 \
        || log "warning: pip could not install threefive; the SCTE-35 threefive check will be skipped"
}
ensure_postgres() { apt_install postgresql postgresql-contrib; }

pg_bindir() {
    local d
    d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
    [ -n "$d" ] || d=$(dirname "$(command -v initdb 2>/dev/null || echo /nonexistent/initdb)")
    [ -x "$d/initdb" ] || die "PostgreSQL server binaries (initdb) not found after install"
    echo "$d"
}

# Runs a command as the cluster's owner: PostgreSQL refuses to run as root.
as_pg_owner() {
    if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

free_port() {
    local port=${1:-54329}
    while (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do port=$((port + 1)); done
    echo "$port"
}

# start_cluster DIR : initdb + start a throwaway cluster in DIR on a free port, create database "cueline".
# Exports DATABASE_URL, CUELINE_PGDATA, CUELINE_PGPORT, CUELINE_PGBIN.
start_cluster() {
    local dir=$1 bin port
    ensure_postgres
    bin=$(pg_bindir)
    port=$(free_port "${CUELINE_PGPORT:-54329}")
    rm -rf "$dir"
    mkdir -p "$dir"
    if [ "$(id -u)" -eq 0 ]; then
        id postgres >/dev/null 2>&1 || die "the postgres user is missing (the postgresql package creates it)"
        chown postgres: "$dir"
    fi
    as_pg_owner "$bin/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 \
        || { cat "$dir/initdb.log" >&2; die "initdb failed"; }
    # Throwaway clusters skip fsync (tests only); CUELINE_PG_DURABLE=1 keeps PostgreSQL's durable defaults (the
    # benchmarks: an acknowledged command must survive a crash, so appends are compared with durable inserts).
    local durability="-c fsync=off"
    [ "${CUELINE_PG_DURABLE:-0}" = 1 ] && durability=""
    # Another cluster may take the port between the check and the start (scripts run side by side): try the next.
    local attempt
    for attempt in 1 2 3 4 5; do
        if as_pg_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
            -o "-p $port -k $dir -c listen_addresses=127.0.0.1 $durability -c max_connections=200" start >/dev/null; then
            break
        fi
        [ "$attempt" -eq 5 ] && { cat "$dir/server.log" >&2; die "PostgreSQL did not start"; }
        port=$(free_port $((port + 1 + RANDOM % 50)))
    done
    "$bin/createdb" -h 127.0.0.1 -p "$port" -U postgres cueline || die "createdb failed"
    export CUELINE_PGDATA=$dir/data CUELINE_PGPORT=$port CUELINE_PGBIN=$bin
    export DATABASE_URL="postgresql://postgres@127.0.0.1:$port/cueline"
    log "PostgreSQL running: $DATABASE_URL (data in $dir/data)"
}

stop_cluster() {
    [ -n "${CUELINE_PGDATA:-}" ] && [ -d "$CUELINE_PGDATA" ] || return 0
    as_pg_owner "$CUELINE_PGBIN/pg_ctl" -D "$CUELINE_PGDATA" -m immediate stop >/dev/null 2>&1 || true
}
