#!/usr/bin/env bash
# Fuzzes the SCTE-35 parser with libFuzzer and AddressSanitizer for a fixed time (default 300 s), growing the
# committed corpus in Fuzz/SCTE35/corpus and then merging it down to the inputs that add coverage.
#   scripts/fuzz/fuzz-scte35.sh [seconds]     fuzz, then merge the corpus
#   scripts/fuzz/fuzz-scte35.sh --replay      run every corpus input once, changing nothing (the test command does this)
set -euo pipefail
source "$(dirname "$0")/../lib/common.sh"
cd "$(repo_root)"
mode=fuzz
[ "${1:-}" = "--replay" ] && { mode=replay; shift; }
seconds=${1:-300}
out=.build/fuzz
mkdir -p "$out"
log "building the fuzzer (swiftc -sanitize=fuzzer,address)"
swiftc -sanitize=fuzzer,address -parse-as-library -module-name SCTE35Fuzz -O -g \
    Sources/SCTE35/*.swift Fuzz/SCTE35/FuzzSCTE35.swift -o "$out/scte35-fuzz" 2>"$out/build.log" || { cat "$out/build.log"; die "the fuzzer did not build"; }
corpus=Fuzz/SCTE35/corpus
if [ "$mode" = replay ]; then
    "$out/scte35-fuzz" -runs=0 "$corpus" >"$out/replay.log" 2>&1 || { cat "$out/replay.log"; die "a corpus input crashes the SCTE-35 parser"; }
    log "SCTE-35 parser: all $(ls "$corpus" | wc -l) corpus inputs run clean under AddressSanitizer"
    exit 0
fi
log "fuzzing for $seconds s from $(ls "$corpus" | wc -l) corpus inputs"
# Crashes are written to .build/fuzz/ as crash-<sha1>; the run fails on the first one.
"$out/scte35-fuzz" -max_total_time="$seconds" -max_len=4096 -print_final_stats=1 \
    -artifact_prefix="$out/" "$corpus" 2>&1 | tee "$out/fuzz.log" | grep -E "^#[0-9]+ +(pulse|DONE)|ERROR|stat::|Done" || true
if grep -q "ERROR: " "$out/fuzz.log"; then die "the fuzzer found a crash; see $out/fuzz.log and $out/crash-*"; fi
# Keep only the inputs that add coverage.
rm -rf "$out/merged" && mkdir -p "$out/merged"
"$out/scte35-fuzz" -merge=1 "$out/merged" "$corpus" >/dev/null 2>&1
rm -f "$corpus"/* && cp "$out/merged"/* "$corpus"/
for seed in Fuzz/SCTE35/seeds/*; do cp "$seed" "$corpus/"; done
log "no crash in $seconds s; corpus now $(ls "$corpus" | wc -l) inputs"
