# The demo channel: real tiny media made with ffmpeg, a local server, a channel with 3 renditions.
# Source after common.sh. Functions only.

DEMO_SEGMENT=2     # seconds per segment
DEMO_LOOP=15       # segments of media per rendition (30 s, looped)
# The demo's breaks are marked for players and for a downstream SSAI at once (issue 33): the hls.js scenarios play
# interstitials with the CUE markers beside them. DEMO_MARKERS=interstitial for the players' shape alone.
DEMO_MARKERS=${DEMO_MARKERS:-both}

# make_media DIR : 3 renditions of a 30 s test pattern in 2 s MPEG-TS segments, and a 30 s VOD ad.
make_media() {
    local dir=$1
    [ -f "$dir/.complete" ] && { make_ad_cuts "$dir"; return 0; }
    apt_install ffmpeg
    rm -rf "$dir"
    mkdir -p "$dir"
    log "making demo media with ffmpeg (once; kept in $dir)"
    local spec name size rate
    for spec in 720p:1280x720:2000k 480p:854x480:1000k 360p:640x360:500k; do
        IFS=: read -r name size rate <<<"$spec"
        mkdir -p "$dir/$name"
        ffmpeg -loglevel error -y -f lavfi -i "testsrc=size=$size:rate=25" -f lavfi -i "sine=frequency=440:sample_rate=48000" \
            -t $((DEMO_SEGMENT * DEMO_LOOP)) -c:v libx264 -profile:v main -level 3.1 -preset ultrafast -pix_fmt yuv420p \
            -g 50 -keyint_min 50 -sc_threshold 0 -b:v "$rate" -c:a aac -b:a 96k -ac 2 \
            -f hls -hls_time $DEMO_SEGMENT -hls_list_size 0 -hls_segment_filename "$dir/$name/seg%d.ts" "$dir/$name/source.m3u8" \
            || die "ffmpeg failed making $name"
    done
    mkdir -p "$dir/ad"
    ffmpeg -loglevel error -y -f lavfi -i "smptebars=size=1280x720:rate=25" -f lavfi -i "sine=frequency=1000:sample_rate=48000" \
        -t 30 -c:v libx264 -profile:v main -level 3.1 -preset ultrafast -pix_fmt yuv420p -g 50 -keyint_min 50 -sc_threshold 0 \
        -b:v 1500k -c:a aac -b:a 96k -ac 2 -f hls -hls_time $DEMO_SEGMENT -hls_playlist_type vod \
        -hls_segment_filename "$dir/ad/ad%d.ts" "$dir/ad/ad.m3u8" || die "ffmpeg failed making the ad"
    touch "$dir/.complete"
    make_ad_cuts "$dir"
}

# make_ad_cuts DIR : short VOD ads cut from the 30 s ad without re-encoding (their segments are the ad's own):
# ad/ad6.m3u8 and ad/ad12.m3u8 are its first 6 s and 12 s, ad/pod1.m3u8 … ad/pod5.m3u8 its five 6 s parts in order.
# Rewritten every time (cheap), so media made by an older make_media gets them too.
make_ad_cuts() {
    local dir=$1 per=$((6 / DEMO_SEGMENT)) i
    ad_cut "$dir/ad/ad.m3u8" 0 $((6 / DEMO_SEGMENT)) "$dir/ad/ad6.m3u8"
    ad_cut "$dir/ad/ad.m3u8" 0 $((12 / DEMO_SEGMENT)) "$dir/ad/ad12.m3u8"
    for i in 1 2 3 4 5; do ad_cut "$dir/ad/ad.m3u8" $(((i - 1) * per)) "$per" "$dir/ad/pod$i.m3u8"; done
}

# ad_cut VOD FIRST COUNT OUT : writes OUT, a VOD playlist of COUNT segments of VOD from its FIRST (0-based).
ad_cut() {
    awk -v first="$2" -v count="$3" '
        /^#EXTINF/ { n++; keep = n > first && n <= first + count }
        /^#EXT-X-ENDLIST/ { next }
        (/^#EXTINF/ || !/^#/) && !keep { next }
        /^#EXT-X-MEDIA-SEQUENCE/ { print "#EXT-X-MEDIA-SEQUENCE:" first; next }
        { print }
        END { print "#EXT-X-ENDLIST" }' "$1" >"$4.tmp" && mv "$4.tmp" "$4" || die "could not write $4"
}

# wait_http URL SECONDS : waits until URL answers 200.
wait_http() {
    local url=$1 limit=${2:-30} i
    for ((i = 0; i < limit * 10; i++)); do
        curl -fs -o /dev/null "$url" && return 0
        sleep 0.1
    done
    return 1
}

# demo_up : database, build, migrations, media, server and the channel "demo". Sets CUELINE, DEMO_URL, SERVER_PID.
demo_up() {
    demo_server_up
    demo_channel demo 8
}

# demo_server_up : database, build (skipped when CUELINE_BIN is set), migrations, media and `cueline serve` with the
# media at /media, no channel. Sets CUELINE, DEMO_URL, DEMO_MEDIA, DEMO_PGDIR, SERVER_PID.
demo_server_up() {
    local root
    root=$(repo_root)
    ensure_build_deps
    apt_install curl
    DEMO_PGDIR=$(mktemp -d /tmp/cueline-demo-pg.XXXXXX)
    chmod 755 "$DEMO_PGDIR"
    start_cluster "$DEMO_PGDIR"
    if [ -n "${CUELINE_BIN:-}" ]; then
        [ -x "$CUELINE_BIN" ] || die "CUELINE_BIN=$CUELINE_BIN is not an executable"
    else
        log "building"
        (cd "$root" && swift build) || die "swift build failed"
    fi
    # A copy of its own: another build in this checkout cannot swap the binary under a running demo.
    cp "${CUELINE_BIN:-$(cd "$root" && swift build --show-bin-path)/cueline}" "$DEMO_PGDIR/cueline"
    CUELINE=$DEMO_PGDIR/cueline
    export CUELINE_MIGRATIONS=$root/Migrations
    "$CUELINE" migrate
    DEMO_MEDIA=$root/.demo/media
    make_media "$DEMO_MEDIA"
    local port
    port=$(free_port "${CUELINE_DEMO_PORT:-8080}")
    DEMO_URL="http://127.0.0.1:$port"
    "$CUELINE" serve --port "$port" --media-dir "$DEMO_MEDIA" >"$DEMO_PGDIR/serve.log" 2>&1 &
    SERVER_PID=$!
    wait_http "$DEMO_URL/healthz" 30 || { cat "$DEMO_PGDIR/serve.log" >&2; die "cueline serve did not start"; }
    log "cueline serve is running at $DEMO_URL (log: $DEMO_PGDIR/serve.log)"
}

# demo_channel NAME WINDOW : creates channel NAME on the demo media (3 renditions, 2 s segments, looped) with a
# live window of WINDOW segments, and waits until its playlist is served.
demo_channel() {
    local name=$1 window=$2
    "$CUELINE" channel create "$name" --segment-duration "$DEMO_SEGMENT" --window "$window" --loop "$DEMO_LOOP" \
        --rendition "720p,2300000,/media/720p/seg{n%$DEMO_LOOP}.ts" --resolution 720p=1280x720 \
        --rendition "480p,1200000,/media/480p/seg{n%$DEMO_LOOP}.ts" --resolution 480p=854x480 \
        --rendition "360p,700000,/media/360p/seg{n%$DEMO_LOOP}.ts" --resolution 360p=640x360 \
        --codecs 720p=avc1.4d401f,mp4a.40.2 --codecs 480p=avc1.4d401f,mp4a.40.2 --codecs 360p=avc1.4d401f,mp4a.40.2 \
        --public-url "$DEMO_URL" --markers "$DEMO_MARKERS" --actor demo
    wait_http "$DEMO_URL/channels/$name/720p.m3u8" 10 || die "the $name channel's playlist is not served"
}

demo_down() {
    [ -n "${SERVER_PID:-}" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
    stop_cluster
    [ -n "${DEMO_PGDIR:-}" ] && rm -rf "$DEMO_PGDIR"
    [ -n "${PROBE_DIR:-}" ] && rm -rf "$PROBE_DIR"
    return 0
}

# hlsjs_probe_setup : the hlsjs-probe (shared/tools/hlsjs-probe, or scripts/browser/hlsjs-probe) with hls.js 1.6.15
# extracted from the gradio wheel, and Chromium and ffmpeg installed. Sets PROBE_DIR (a copy of the tool of its own,
# removed by demo_down). Returns 1 with PROBE_SKIP saying why where that cannot be done here (callers skip with that
# message).
hlsjs_probe_setup() {
    local src="" candidate wheel_dir=/tmp/cueline-hlsjs-wheel
    # The team's shared copy when it is next to this checkout, else the copy kept in scripts/browser/hlsjs-probe (so a
    # clone anywhere, CI's included, runs the player checks rather than skipping them).
    for candidate in "$(repo_root)/../shared/tools/hlsjs-probe" "$(repo_root)/shared/tools/hlsjs-probe" "$(repo_root)/scripts/browser/hlsjs-probe"; do
        [ -f "$candidate/hlsjs_probe.py" ] && src=$candidate && break
    done
    [ -n "$src" ] || { PROBE_SKIP="the hlsjs-probe tool (shared/tools/hlsjs-probe) is not next to this checkout"; return 1; }
    ( apt_install chromium ffmpeg ) || { PROBE_SKIP="chromium cannot be installed here"; return 1; }
    PROBE_DIR=$(mktemp -d /tmp/cueline-hlsjs-probe.XXXXXX)  # removed by demo_down
    cp -r "$src/." "$PROBE_DIR" && mkdir -p "$PROBE_DIR/hlsjs"
    if ! ls "$wheel_dir"/gradio-6.31.0-*.whl >/dev/null 2>&1; then
        python3 -m pip download -q --no-deps -d "$wheel_dir" gradio==6.31.0 \
            || { PROBE_SKIP="the gradio wheel (which bundles hls.js 1.6.15) cannot be downloaded"; return 1; }
    fi
    python3 "$PROBE_DIR/extract_hlsjs.py" "$wheel_dir"/gradio-6.31.0-*.whl "$PROBE_DIR/hlsjs/hls-1.6.15-gradio.mjs" >/dev/null \
        || { PROBE_SKIP="hls.js could not be extracted from the gradio wheel"; return 1; }
}

# seconds_until ISO : whole seconds from now until the ISO 8601 time (0 if past).
seconds_until() {
    local target now
    target=$(date -d "$1" +%s%3N) now=$(date +%s%3N)
    echo $(((target - now + 999) / 1000 > 0 ? (target - now + 999) / 1000 : 0))
}

# throwaway_service [release] : a throwaway PostgreSQL, the built (debug, or release) and migrated cueline, and a
# cleanup on exit that stops every process in BACKGROUND_PIDS. Sets SCRATCH (a temporary directory) and CUELINE.
# For debug, CUELINE_BIN (set by scripts/test.sh, or a copy that other builds cannot replace) skips the build.
throwaway_service() {
    local config=${1:-debug}
    ensure_build_deps
    apt_install curl
    SCRATCH=$(mktemp -d /tmp/cueline-scratch.XXXXXX)
    chmod 755 "$SCRATCH"
    BACKGROUND_PIDS=()
    trap 'for p in "${BACKGROUND_PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done; stop_cluster; rm -rf "$SCRATCH"' EXIT
    start_cluster "$SCRATCH"
    if [ "$config" = debug ] && [ -n "${CUELINE_BIN:-}" ]; then
        [ -x "$CUELINE_BIN" ] || die "CUELINE_BIN=$CUELINE_BIN is not an executable"
        CUELINE=$CUELINE_BIN
    else
        [ "$config" = release ] && log "building (release)"
        swift build -c "$config" --product cueline >/dev/null || die "swift build failed"
        CUELINE=$(swift build -c "$config" --show-bin-path)/cueline
    fi
    export CUELINE_MIGRATIONS=$PWD/Migrations
    "$CUELINE" migrate >/dev/null
}

# serve_open PORT LOG : starts `cueline serve` without tokens on PORT, logging to LOG (appended), and waits until it
# is ready. Sets SERVER_PID; the process joins BACKGROUND_PIDS.
serve_open() {
    "$CUELINE" serve --port "$1" --unauthenticated-commands >>"$2" 2>&1 &
    SERVER_PID=$!
    BACKGROUND_PIDS+=("$SERVER_PID")
    wait_http "http://127.0.0.1:$1/readyz" 30 || { tail -20 "$2" >&2; die "cueline serve on port $1 did not start"; }
}

DEMO_LL_LOOP=60    # seconds of LL media per rendition (60 segments of 1 s, four 0.25 s parts each), looped

# make_ll_media DIR : Low-Latency HLS media in DIR/ll/<rendition>/: fMP4 parts of 0.25 s made by ffmpeg's HLS muxer
# (a keyframe every 6 frames at 24 fps, so every part starts with one), named seg<n>.<p>.m4s (part p of segment n),
# each 1 s segment seg<n>.m4s the concatenation of its four parts (moof/mdat pairs: a valid fMP4 segment), and init.mp4.
make_ll_media() {
    local dir=$1/ll spec name size rate k count
    [ -f "$dir/.complete" ] && return 0
    apt_install ffmpeg
    rm -rf "$dir"
    log "making LL-HLS demo media with ffmpeg (once; kept in $dir)"
    for spec in 720p:1280x720:2000k 360p:640x360:500k; do
        IFS=: read -r name size rate <<<"$spec"
        mkdir -p "$dir/$name/raw"
        ffmpeg -loglevel error -y -f lavfi -i "testsrc=size=$size:rate=24" -f lavfi -i "sine=frequency=660:sample_rate=48000" \
            -t "$DEMO_LL_LOOP" -c:v libx264 -profile:v main -level 3.1 -preset ultrafast -pix_fmt yuv420p -g 6 -keyint_min 6 \
            -sc_threshold 0 -b:v "$rate" -c:a aac -b:a 96k -ac 2 -f hls -hls_time 0.25 -hls_list_size 0 -hls_segment_type fmp4 \
            -hls_fmp4_init_filename init.mp4 -hls_segment_filename "$dir/$name/raw/p%d.m4s" "$dir/$name/raw/parts.m3u8" \
            || die "ffmpeg failed making LL media for $name"
        count=$(grep -c '^#EXTINF:0.250' "$dir/$name/raw/parts.m3u8")
        [ "$count" -eq $((DEMO_LL_LOOP * 4)) ] || die "ffmpeg made $count parts of 0.25 s for $name, not $((DEMO_LL_LOOP * 4))"
        mv "$dir/$name/raw/init.mp4" "$dir/$name/init.mp4"
        for ((k = 0; k < DEMO_LL_LOOP * 4; k++)); do
            mv "$dir/$name/raw/p$k.m4s" "$dir/$name/seg$((k / 4)).$((k % 4)).m4s"
        done
        for ((k = 0; k < DEMO_LL_LOOP; k++)); do
            cat "$dir/$name/seg$k.0.m4s" "$dir/$name/seg$k.1.m4s" "$dir/$name/seg$k.2.m4s" "$dir/$name/seg$k.3.m4s" >"$dir/$name/seg$k.m4s"
        done
        rm -rf "$dir/$name/raw"
    done
    touch "$dir/.complete"
}

# demo_ll_channel NAME WINDOW : a channel with 1 s segments of 0.25 s parts on the LL demo media (2 renditions,
# looped), a live window of WINDOW segments; waits until its playlist is served.
demo_ll_channel() {
    local name=$1 window=$2 r args=()
    make_ll_media "$DEMO_MEDIA"
    for r in 720p:2300000:1280x720 360p:700000:640x360; do
        IFS=: read -r rendition bandwidth size <<<"$r"
        args+=(--rendition "$rendition,$bandwidth,/media/ll/$rendition/seg{n%$DEMO_LL_LOOP}.m4s" --resolution "$rendition=$size"
            --codecs "$rendition=avc1.4d401f,mp4a.40.2" --map "$rendition=/media/ll/$rendition/init.mp4"
            --part "$rendition=/media/ll/$rendition/seg{n%$DEMO_LL_LOOP}.{p}.m4s" --independent-parts "$rendition=1")
    done
    "$CUELINE" channel create "$name" --segment-duration 1 --part-duration 0.25 --window "$window" --loop "$DEMO_LL_LOOP" \
        "${args[@]}" --public-url "$DEMO_URL" --markers "$DEMO_MARKERS" --actor demo
    wait_http "$DEMO_URL/channels/$name/720p.m3u8" 10 || die "the $name channel's playlist is not served"
}

# resumed BASE CHANNEL URL: after a database fault, a command on CHANNEL is taken again within 20 s and shows in its
# 720p playlist, the server is ready, and the log at URL holds the channel's three events (created, "before", "after"):
# nothing lost, nothing duplicated.
resumed() {
    local base=$1 channel=$2 url=$3 code events
    for _ in $(seq 1 100); do
        code=$(curl -s -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' \
            -d '{"command":"place_break","id":"after","in":30,"duration":10,"asset_uri":"https://ads.example.com/b.m3u8"}' \
            "$base/channels/$channel/commands")
        [ "$code" = 201 ] && break
        sleep 0.2
    done
    [ "$code" = 201 ] || die "commands did not resume after the database came back (last answer $code)"
    sleep 0.5
    curl -fs "$base/channels/$channel/720p.m3u8" | grep -q 'ID="after"' || die "the command after the fault does not show"
    curl -fs "$base/readyz" >/dev/null || die "the server is not ready again"
    events=$(psql "$url" -Atc "SELECT count(*) FROM cueline_events WHERE channel = '$channel'")
    echo "events in the log: $events (create, before, after: nothing lost, nothing duplicated)"
    [ "$events" = 3 ] || die "expected 3 events, found $events"
}

# The benchmarks' start: a durable throwaway cluster (fsync on, PostgreSQL's defaults: an acknowledged command is
# committed, so appends are compared with durable inserts on the same cluster), the release build, migrated, and on
# exit the processes in `pids` killed and the cluster removed. $1 names the scratch directory. Sets pgdir, pids, bin.
bench_setup() {
    pgdir=$(mktemp -d "/tmp/cueline-$1-pg.XXXXXX")
    chmod 755 "$pgdir"
    pids=()
    trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; stop_cluster; rm -rf "$pgdir"' EXIT
    CUELINE_PG_DURABLE=1 start_cluster "$pgdir"
    log "building (release)"
    swift build -c release >/dev/null
    bin=$(swift build -c release --show-bin-path)
    export CUELINE_MIGRATIONS=$PWD/Migrations
    "$bin/cueline" migrate >/dev/null
}
