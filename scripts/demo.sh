#!/usr/bin/env bash
# The main job: installs what is missing, starts a throwaway PostgreSQL, builds, migrates.
# (Serving a demo channel with a break ended early lands with the live-channel work.)
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
cd "$(repo_root)"

ensure_build_deps
pgdir=$(mktemp -d /tmp/cueline-demo-pg.XXXXXX)
chmod 755 "$pgdir"
trap 'stop_cluster; rm -rf "$pgdir"' EXIT
start_cluster "$pgdir"

log "building"
swift build
bin=$(swift build --show-bin-path)/cueline
"$bin" migrate
log "the event log is ready at $DATABASE_URL"
