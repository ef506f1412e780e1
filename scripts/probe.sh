#!/usr/bin/env bash
# Plays the demo channel in a real hls.js (1.6.15) inside headless Chromium: places a 30 s break 20 s ahead, ends
# it early 10 s into it, and checks that the interstitial started, that the early return ended it well before its
# planned 30 s, and that hls.js raised no fatal error. Skips (exit 0, with a message) where Chromium or the hls.js
# build cannot be installed.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
source "$(dirname "$0")/lib/demo.sh"
cd "$(repo_root)"

skip() { printf 'SKIPPED: %s\n' "$*" >&2; exit 0; }

probe_src=""
for candidate in "$(repo_root)/../shared/tools/hlsjs-probe" "$(repo_root)/shared/tools/hlsjs-probe"; do
    [ -f "$candidate/hlsjs_probe.py" ] && probe_src=$candidate && break
done
[ -n "$probe_src" ] || skip "the hlsjs-probe tool (shared/tools/hlsjs-probe) is not next to this checkout"
( apt_install chromium ffmpeg ) || skip "chromium cannot be installed here"
probe=/tmp/cueline-hlsjs-probe
rm -rf "$probe" && cp -r "$probe_src" "$probe" && mkdir -p "$probe/hlsjs"
wheel_dir=/tmp/cueline-hlsjs-wheel
if ! ls "$wheel_dir"/gradio-6.31.0-*.whl >/dev/null 2>&1; then
    python3 -m pip download -q --no-deps -d "$wheel_dir" gradio==6.31.0 || skip "the gradio wheel (which bundles hls.js 1.6.15) cannot be downloaded"
fi
python3 "$probe/extract_hlsjs.py" "$wheel_dir"/gradio-6.31.0-*.whl "$probe/hlsjs/hls-1.6.15-gradio.mjs" >/dev/null \
    || skip "hls.js could not be extracted from the gradio wheel"

trap demo_down EXIT
demo_up
"$CUELINE" break place demo --id probe-1 --in 20s --duration 30s --asset-uri "$DEMO_URL/media/ad/ad.m3u8" --actor probe
start=$("$CUELINE" schedule demo --json | sed -n 's/.*"start" : "\(.*\)".*/\1/p' | head -n 1)
events=$(repo_root)/.demo/hlsjs-events.jsonl
log "playing $DEMO_URL/channels/demo/master.m3u8 in hls.js for 60 s"
python3 "$probe/hlsjs_probe.py" --src "$DEMO_URL/channels/demo/master.m3u8" --seconds 60 --json "$events" \
    >"$DEMO_PGDIR/probe.out" 2>&1 &
probe_pid=$!
sleep $(( $(seconds_until "$start") + 10 ))
"$CUELINE" event cancel-current demo --actor probe --reason "early return under a real player"
status=0
wait "$probe_pid" || status=$?
tail -n 3 "$DEMO_PGDIR/probe.out"
[ "$status" -eq 3 ] && die "hls.js never parsed the manifest (see $DEMO_PGDIR/probe.out)"
[ "$status" -eq 1 ] && { grep '"ERROR"' "$events" | head -5 >&2; die "hls.js raised a fatal error"; }

python3 - "$events" <<'PY'
import json, sys
events = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
started = [e for e in events if e.get("ev") == "INTERSTITIAL_STARTED"]
ended = [e for e in events if e.get("ev") == "INTERSTITIAL_ENDED"]
resumed = [e for e in events if e.get("ev") == "INTERSTITIALS_PRIMARY_RESUMED"]
fatal = [e for e in events if e.get("ev") == "ERROR" and e.get("fatal")]
updates = [e for e in events if e.get("ev") == "INTERSTITIALS_UPDATED"]
limits = [x.get("playoutLimit") for u in updates for x in (u.get("events") or []) if isinstance(x, dict) and x.get("playoutLimit")]
for e in events:
    if e.get("ev") in ("INTERSTITIAL_STARTED", "INTERSTITIAL_ASSET_STARTED", "INTERSTITIAL_ASSET_ENDED", "INTERSTITIAL_ENDED", "INTERSTITIALS_PRIMARY_RESUMED") or (e.get("ev") == "tick" and e.get("im", {}) and str(e["im"].get("playing", "")).startswith("interstitial")):
        print("  ", json.dumps(e)[:300])
print(f"hls.js: {len(started)} interstitial(s) started, {len(ended)} ended, primary resumed {len(resumed)}x, "
      f"playout limit seen: {limits[-1] if limits else None}, fatal errors: {len(fatal)}")
assert not fatal, "fatal hls.js error"
assert started, "no interstitial started"
assert ended or resumed, "the interstitial never ended"
# hls.js may restart an interstitial once its duration is re-derived: measure from the first start to the last end.
back = (ended or resumed)[-1]["t"] - started[0]["t"]
print(f"interstitial played {back:.1f} s of its planned 30 s")
assert back < 25, "the early return did not end the interstitial before its planned duration"
assert limits, "hls.js never saw the playout limit"
print("PASS: the interstitial started, the early return ended it, no fatal error")
PY
