#!/usr/bin/env bash
# The whole test suite: installs what is missing, starts a throwaway PostgreSQL, migrates, runs `swift test`, then
# the fault scripts, the fuzzers and the player scenarios (hls.js in headless Chromium).
# Usage: scripts/test.sh [extra swift test arguments, e.g. --filter HLSTests]
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
cd "$(repo_root)"

ensure_build_deps
ensure_threefive
pgdir=$(mktemp -d /tmp/cueline-test-pg.XXXXXX)
chmod 755 "$pgdir"
e2e_pid=
e2e_log=
cleanup() {
    # The end-to-end suites' process, if the script stops before it ends (a failure, Ctrl-C): stopped, its output shown.
    if [ -n "$e2e_pid" ] && kill -0 "$e2e_pid" 2>/dev/null; then
        kill "$e2e_pid" 2>/dev/null || true
        { echo "== the end-to-end suites, stopped unfinished:"; cat "$e2e_log"; } >&2
    fi
    [ -n "$e2e_log" ] && rm -f "$e2e_log"
    stop_cluster
    rm -rf "$pgdir"
}
trap cleanup EXIT
start_cluster "$pgdir"

log "building"
swift build --build-tests
bin=$(swift build --show-bin-path)
export CUELINE_BIN=$bin/cueline CUELINE_MIGRATIONS=$PWD/Migrations CUELINE_REQUIRE_DB=1

log "migrating the test database"
"$CUELINE_BIN" migrate

log "running the tests"
# One test at a time in a process: the end-to-end suites time commands against segment boundaries, and 30
# database-heavy suites at once on 2 cores stalled the shared PostgreSQL for seconds (commands sent late, breaks
# missed). The whole suite runs in two processes: the two end-to-end suites that spend two minutes mostly waiting for
# segment boundaries (each on its own database and server) beside all the others, one after the other. With
# arguments (e.g. --filter), one process runs what they select.
if [ $# -gt 0 ]; then
    swift test --skip-build --no-parallel "$@"
else
    waiting='^CLITests\.(AuditEndToEndTests|LiveChannelEndToEndTests)/'
    e2e_log=$(mktemp /tmp/cueline-e2e-tests.XXXXXX)
    # The test binary itself, not `swift test`: SwiftPM runs one command at a time in a build directory. Each run is
    # stopped after 25 minutes (exit 124): a hung test fails CI with its output rather than holding it to its limit.
    timeout -k 30 25m "$bin/CuelinePackageTests.xctest" --testing-library swift-testing --no-parallel --filter "$waiting" \
        > "$e2e_log" 2>&1 &
    e2e_pid=$!
    status=0
    e2e_status=0
    timeout -k 30 25m swift test --skip-build --no-parallel --skip "$waiting" || status=$?
    wait "$e2e_pid" || e2e_status=$?
    e2e_pid=
    log "the end-to-end suites, run beside the others:"
    cat "$e2e_log"
    [ "$status" -eq 0 ] || die "tests failed (exit $status; 124: stopped after 25 minutes)"
    [ "$e2e_status" -eq 0 ] || die "the end-to-end suites failed (exit $e2e_status; their output is just above)"
fi

log "checking the Swift sources' format (.swift-format; fix with: swift format format -r -i Sources Tests Benchmarks Package.swift)"
swift format lint --strict -r Sources Tests Benchmarks Package.swift

log "checking the module graph in docs/architecture.md against Package.swift"
python3 scripts/ci/check-layout.py
log "checking the links and the paths named in the Markdown pages"
python3 scripts/ci/check-links.py
log "checking Migrations/functions/ against what the migrations create"
scripts/ci/check-sql-functions.sh

log "checking deploy/ (systemd unit, YAML, container build command)"
scripts/ci/check-deploy.sh "$CUELINE_BIN"

log "fault scenarios: two instances, SIGKILL mid-break, database outage, a database host gone silent, slow commits on a saturated machine, floods, misbehaving asset servers, one client class starving another, notifications through a failing subscriber and a killed lease holder, a pooler in transaction mode"
scripts/faults/fault-two-instances.sh
scripts/faults/fault-kill9.sh
scripts/faults/fault-db-down.sh
scripts/faults/fault-db-silent.sh
scripts/faults/fault-slow-commits.sh
scripts/faults/fault-flood.sh
scripts/faults/fault-slow-assets.sh
scripts/faults/fault-starvation.sh
scripts/faults/fault-notifications.sh
scripts/faults/fault-pooler.sh

log "fuzzing the HTTP surface for 60 s (scripts/fuzz/fuzz-http.sh --seconds 600 for a longer run)"
scripts/fuzz/fuzz-http.sh --seconds 60

log "SCTE-35 parser: the fuzz corpus under AddressSanitizer"
scripts/fuzz/fuzz-scte35.sh --replay

log "what viewers see: the player scenarios in a real hls.js 1.6.15 (skipped with a message where Chromium cannot be installed)"
scripts/browser/player-scenarios.sh     # results: .demo/player-scenarios/
scripts/browser/probe.sh --low-latency  # an LL-HLS channel in hls.js: its interstitial, early return, < 3 s behind live
scripts/browser/console-tests.sh        # the operator console in headless Chromium; .demo/console-screenshots/
