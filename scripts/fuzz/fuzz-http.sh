#!/usr/bin/env bash
# Fuzz test of the whole HTTP surface (issue 11): a throwaway PostgreSQL, `cueline serve` with tokens (operator,
# automation scoped to one channel, viewer, a revoked one), a hooks file and a media directory, three channels, then
# random and adversarial commands, SCTE-35 sections, hook deliveries, GETs with random query strings on every route of
# openapi.json, odd paths and wrong methods for --seconds (scripts/fuzz/fuzz_http.py runs it: its generators in
# cases.py, its checks in checks.py). Invariants checked after the run: the server never died and answered no 5xx but
# 503; every 201 is in the log once with the acknowledged bytes; every 503 wrote nothing; `cueline verify` passes; every
# rendition passes `cueline lint` and `--previous` against its last fetch. Other smells are printed as findings. Exit 1
# on a violation.
#
# Usage: scripts/fuzz/fuzz-http.sh [--seconds N] [--seed S] [--workers N]     (default 60 s, a random seed, 3 workers)
# CUELINE_BIN names the binary to test (default: the debug build, built if needed).
set -euo pipefail
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/demo.sh"
cd "$(repo_root)"

seconds=60 seed="" workers=3
while [ $# -gt 0 ]; do
    case $1 in
        --seconds) seconds=$2; shift 2 ;;
        --seed) seed=$2; shift 2 ;;
        --workers) workers=$2; shift 2 ;;
        -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown argument $1 (see --help)" ;;
    esac
done
command -v python3 >/dev/null || apt_install python3

throwaway_service
cueline=$CUELINE
work=$SCRATCH/fuzz
mkdir -p "$work/media"
chmod 755 "$work" "$work/media"

for channel in fz1 fz2; do
    "$cueline" channel create "$channel" --segment-duration 1 --window 6 \
        --rendition '720p,1000000,720p/seg{n}.ts' --rendition '360p,400000,360p/seg{n}.ts' >/dev/null
done
# fz3 has LL-HLS parts: the delivery directives (_HLS_msn, _HLS_part, _HLS_skip) block and answer deltas there.
"$cueline" channel create fz3 --segment-duration 1 --window 8 --part-duration 0.25 \
    --rendition '720p,1000000,720p/seg{n}.m4s' --part '720p=720p/seg{n}.{p}.m4s' \
    --rendition '360p,400000,360p/seg{n}.m4s' --part '360p=360p/seg{n}.{p}.m4s' >/dev/null
token() {
    local out
    out=$("$cueline" token create "$@" 2>"$work/token.err") || { cat "$work/token.err" >&2; die "cueline token create $1 failed"; }
    echo "$out" | tail -n 1 | tr -d '[:space:]'
}
operator=$(token fuzz-op --role operator)
automation=$(token fuzz-auto --role automation --channel fz1)
automation2=$(token fuzz-auto2 --role automation --channel fz2 --command cancel_current_event)
viewer=$(token fuzz-view --role viewer)
revoked=$(token fuzz-revoked --role operator)
"$cueline" token revoke fuzz-revoked >/dev/null

# Hooks: a cancel, a place with fixed fields, and a place and a limit whose fields all come from the payload.
secret=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
cat >"$work/hooks.json" <<EOF
{"hooks": [{"name": "feed", "secret": "$secret", "tolerance_seconds": 300, "rules": [
  {"when": {"event": "goal"}, "channel": "fz1", "command": {"command": "cancel_current_event", "reason": "\$.reason"}},
  {"when": {"event": "timeout", "team": "home"}, "channel": "fz2",
   "command": {"command": "place_break", "id": "\$.break", "in": 5, "duration": "\$.seconds", "asset_uri": "https://ads.example.com/t.m3u8", "reason": "\$.reason"}},
  {"when": {"event": "custom"}, "channel": "fz1",
   "command": {"command": "place_break", "id": "\$.break", "in": "\$.in", "duration": "\$.seconds", "asset_uri": "\$.uri", "reason": "\$.reason"}},
  {"when": {"event": "limit"}, "channel": "fz1", "command": {"command": "set_playout_limit", "id": "\$.break", "playout_limit": "\$.limit"}}
]}]}
EOF
# The media directory holds a file and a symlink to one outside it (which must not be served).
echo inside >"$work/media/inside.txt"
echo "outside the media directory" >"$work/outside.txt"
ln -s "$work/outside.txt" "$work/media/outside-link"

port=$(free_port 18700)
export FUZZ_PORT=$port FUZZ_WORK=$work FUZZ_CUELINE=$cueline FUZZ_SECRET=$secret FUZZ_OP=$operator FUZZ_AUTO=$automation \
    FUZZ_AUTO2=$automation2 FUZZ_VIEW=$viewer FUZZ_REVOKED=$revoked
python3 - >"$work/config.json" <<'PY'
import json, os
e = os.environ
work, port = e["FUZZ_WORK"], int(e["FUZZ_PORT"])
print(json.dumps({
    "port": port, "workdir": work, "cueline": e["FUZZ_CUELINE"], "database_url": e["DATABASE_URL"],
    "server_cmd": [e["FUZZ_CUELINE"], "serve", "--port", str(port), "--hooks", f"{work}/hooks.json", "--media-dir", f"{work}/media",
                   "--log-level", "warning"],
    "channels": {c: ["720p", "360p"] for c in ("fz1", "fz2", "fz3")},
    "channel_create": [e["FUZZ_CUELINE"], "channel", "create", "{channel}", "--segment-duration", "1", "--window", "6",
                       "--rendition", "720p,1000000,720p/seg{n}.ts", "--rendition", "360p,400000,360p/seg{n}.ts"],
    "tokens": {"operator": e["FUZZ_OP"], "automation": e["FUZZ_AUTO"], "automation2": e["FUZZ_AUTO2"], "viewer": e["FUZZ_VIEW"], "revoked": e["FUZZ_REVOKED"]},
    "token_names": {"operator": "fuzz-op", "automation": "fuzz-auto", "automation2": "fuzz-auto2", "viewer": "fuzz-view"},
    "auto_channel": "fz1", "auto2_channel": "fz2",
    "hooks": {"feed": e["FUZZ_SECRET"]},
}))
PY
log "fuzzing http://127.0.0.1:$port for $seconds s (server logs and playlists in $work)"
status=0
python3 scripts/fuzz/fuzz_http.py --config "$work/config.json" --seconds "$seconds" --workers "$workers" ${seed:+--seed "$seed"} || status=$?
# The harness stops the servers it started; this catches any left behind if it was interrupted.
if [ -f "$work/server.pids" ]; then
    while read -r pid; do kill -9 "$pid" 2>/dev/null || true; done <"$work/server.pids"
fi
if [ "$status" -ne 0 ] && [ -n "${FUZZ_KEEP:-}" ]; then
    cp -r "$work" "$FUZZ_KEEP" && log "kept the server logs and playlists in $FUZZ_KEEP"
fi
exit "$status"
