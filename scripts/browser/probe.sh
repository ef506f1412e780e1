#!/usr/bin/env bash
# Plays a channel in a real hls.js (1.6.15) inside headless Chromium: places a 30 s break 20 s ahead, ends it early 10 s
# into it, and checks that the interstitial started, that it played the playout limit the server published (not more
# than 2 s over it), and that hls.js raised no fatal error. The channel has a 60 s window, so the finished range is
# still in the playlist when the interstitial ends (checked): the window dropping it cannot be what ends the ad. Skips
# (exit 0, with a message) where Chromium or the hls.js build cannot be installed. scripts/browser/player-scenarios.sh
# plays the other cases (late limits, pods, joins, cancelled and back-to-back breaks).
set -euo pipefail
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/demo.sh"
cd "$(repo_root)"

# --low-latency: the same on an LL-HLS channel (1 s segments of 0.25 s fMP4 parts, blocking reload, delta updates),
# which hls.js plays in its default lowLatencyMode; also checks that it plays under 3 s behind the live edge.
low_latency=false
[ "${1:-}" = "--low-latency" ] && low_latency=true

skip() { printf 'SKIPPED: %s\n' "$*" >&2; exit 0; }
trap demo_down EXIT
hlsjs_probe_setup || skip "$PROBE_SKIP"

demo_server_up
if [ "$low_latency" = true ]; then
    demo_ll_channel probe 60   # 60 x 1 s: a 60 s window
else
    demo_channel probe 30      # 30 x 2 s: a 60 s window
fi
"$CUELINE" break place probe --id probe-1 --in 20s --duration 30s --asset-uri "$DEMO_URL/media/ad/ad.m3u8" --actor probe
start=$("$CUELINE" schedule probe --json | sed -n 's/.*"start_date" : "\(.*\)".*/\1/p' | head -n 1)
events=$(repo_root)/.demo/hlsjs-events.jsonl
log "playing $DEMO_URL/channels/probe/master.m3u8 in hls.js for 60 s"
python3 "$PROBE_DIR/hlsjs_probe.py" --src "$DEMO_URL/channels/probe/master.m3u8" --seconds 60 --json "$events" \
    >"$DEMO_PGDIR/probe.out" 2>&1 &
probe_pid=$!
sleep $(( $(seconds_until "$start") + 10 ))
"$CUELINE" event cancel-current probe --actor probe --reason "early return under a real player"
status=0
wait "$probe_pid" || status=$?
tail -n 3 "$DEMO_PGDIR/probe.out"
[ "$status" -eq 3 ] && die "hls.js never parsed the manifest (see $DEMO_PGDIR/probe.out)"
[ "$status" -eq 1 ] && { grep '"ERROR"' "$events" | head -5 >&2; die "hls.js raised a fatal error"; }
# What the server published, read after the probe: the range must still be there (60 s window), with its limit.
playlist=$(curl -fs "$DEMO_URL/channels/probe/720p.m3u8")
limit=$(printf '%s\n' "$playlist" | sed -n 's/^#EXT-X-DATERANGE:.*ID="probe-1".*X-PLAYOUT-LIMIT=\([0-9.]*\).*/\1/p' | head -n 1)
[ -n "$limit" ] || { printf '%s\n' "$playlist" | grep DATERANGE >&2
    die "the playlist no longer carries probe-1 with its X-PLAYOUT-LIMIT after the probe (range dropped, or no limit)"; }

python3 - "$events" "$limit" "$low_latency" <<'PY'
import json, sys
events = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
limit = float(sys.argv[2])
low_latency = sys.argv[3] == "true"
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
# hls.js may restart an interstitial once its duration is re-derived: measure from the first start to the last end
# (player clock), against the limit the server published. At most 2 s over it (the issue's target: a limit that
# arrives mid-ad takes effect at the next chunk boundary); at least 1 s under (event quantization and asset start-up).
back = (ended or resumed)[-1]["t"] - started[0]["t"]
print(f"interstitial played {back:.1f} s for a published playout limit of {limit:.3f} s (planned 30 s)")
assert limits, "hls.js never saw the playout limit"
assert back <= limit + 2, f"played {back:.1f} s, more than 2 s over the {limit:.3f} s limit"
assert back >= limit - 1, f"played {back:.1f} s, more than 1 s short of the {limit:.3f} s limit"
if low_latency:
    # hls.latency: how far behind the live edge the primary plays (ticks every 2 s, while it is playing, after start-up).
    behind = sorted(e["latency"] for e in events if e.get("ev") == "tick" and e["t"] > 8 and isinstance(e.get("latency"), (int, float))
                    and (e.get("im") or {}).get("playing") == "primary" and not e.get("paused"))
    assert behind, "no latency reading while the primary played"
    median = behind[len(behind) // 2]
    print(f"hls.js played the primary {median:.2f} s behind the live edge (median of {len(behind)} readings; max {behind[-1]:.2f} s)")
    assert median < 3, f"{median:.2f} s behind the live edge, not under 3 s"
print(f"PASS: the interstitial started, played {back:.1f} s for a {limit:.3f} s limit, no fatal error")
PY
