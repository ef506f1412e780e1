#!/usr/bin/env python3
"""Player scenario suite: plays Cueline channels in real hls.js 1.6.15 (the hlsjs-probe) and asserts what the viewer
gets. Run by scripts/browser/player-scenarios.sh, which starts the database, the server, the test ad server and the
channels s1…s10 and sets:

  CUELINE       the cueline binary (with DATABASE_URL and CUELINE_MIGRATIONS in the environment)
  DEMO_URL      the server, e.g. http://127.0.0.1:8080 (demo media at /media, the ads under /media/ad/)
  PROBE_DIR     the hlsjs-probe set up as scripts/browser/probe.sh does (hlsjs_probe.py + hlsjs/hls-1.6.15-gradio.mjs)
  SERVER_COMMIT what the server was built from (git describe --dirty)
  ADS_URL       the test ad server (scripts/lib/test_adserver.py --media-base DEMO_URL/media), for scenarios 8-10

  player_scenarios.py --out DIR [--only N]

Exit status: 0 every scenario passed, 1 at least one failed.

Timing. Every played duration is measured on the player's own clock (the `t` of the probe's events, from
performance.now() in the page), never by sleeping. The page's clock is tied to the wall clock through Chromium's log,
which stamps each console line (the probe's player logs every event there too): that tells when to send a command
relative to what the viewer sees (scenarios 2, 3 and 6 wait for the player's own INTERSTITIAL_STARTED or
ASSET_LIST_LOADED before acting), and gives the viewer's latency as wall clock minus the program time of the
playhead (START-DATE of the break + primary media time - the break's startTime in media time).
"""
import argparse, datetime, glob, json, os, re, shutil, statistics, subprocess, sys, tempfile, threading, time
import urllib.request

CUELINE = os.environ.get("CUELINE", "cueline")
URL = os.environ.get("DEMO_URL", "http://127.0.0.1:8080")
PROBE_DIR = os.environ.get("PROBE_DIR", "/tmp/cueline-hlsjs-probe")
AD = URL + "/media/ad"
# The test ad server (scripts/lib/test_adserver.py, its creatives the demo's ads under AD): scenarios 8-10.
ADS = os.environ.get("ADS_URL", "")
TD = 2.0  # target duration of the demo channels (2 s segments)

# ---- tolerances --------------------------------------------------------------------------------------------------
# Played seconds (player clock, INTERSTITIAL_STARTED -> INTERSTITIAL_ENDED) against the expected seconds (the published
# X-PLAYOUT-LIMIT, else PLANNED-DURATION, minus where a joining viewer came in):
#  - at most +2 s: the target ("<= 2 s over the limit"). It has to absorb the chunk or asset boundary where a
#    late limit takes effect and the ad media running a little longer than its EXTINFs (2.02-2.07 s per "2 s"
#    segment: ~0.04 s per asset); nothing else, so a limit taking effect one 6 s pod asset late fails.
#  - at least -1 s: the player's events are 10 ms-quantized and an asset player starts ~0.1-0.3 s after the event
#    that announces it; a join offset is estimated from a 2 s tick (below). More than 1 s short means the viewer
#    was shown less than was on air (a wrong join point, an asset skipped), which is a failure.
PLAYED_LOW, PLAYED_HIGH = 1.0, 2.0
# A joining viewer plays the rest of the break as many short assets (a 5 x 6 s pod is 15 chunks of ~2 s), and hls.js
# takes 2.17-2.19 s per 2.00-2.08 s chunk (it attaches a new asset player each time): ~0.15 s per asset. A join plays
# ~10 of them, so its upper bound grows by this much per asset played. Replaying the pod (the defect this scenario
# guards against) is ~10 s over, and one chunk too many is 2.2 s over plus this allowance: both still fail.
JOIN_ASSET_SWITCH = 0.15
# Where the primary resumes (program time) against START-DATE + the expected duration: hls.js resumes at
# startTime + playoutLimit (or + duration); +-2 s allows one segment of snapping and the tick-based estimate.
RESUME_TOL = 2.0
# Latency (wall clock - program time of the playhead) after the break against before it: the viewer may not end up
# further behind live. +2 s is one segment: the live edge moves in 2 s steps and hls.js re-targets 3 target durations
# behind it. Without a "before" (a mid-break join), the bound is the nominal 3 TD behind the last segment's end + up
# to 1 TD for the segment being written + 2 s slack = 10 s.
LATENCY_SLACK = 2.0
LATENCY_CAP = 3 * TD + TD + 2.0


def now():
    return time.time()


def iso(ts):
    return datetime.datetime.fromtimestamp(ts, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def parse_iso(text):
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def sleep_until(ts):
    while True:
        d = ts - now()
        if d <= 0:
            return
        time.sleep(min(d, 0.2))


class Log:
    def __init__(self, path):
        self.f = open(path, "w")

    def __call__(self, msg, quiet=False):
        line = f"{iso(now())} {msg}"
        self.f.write(line + "\n")
        self.f.flush()
        if not quiet:
            print(f"    {line[11:23]} {msg.splitlines()[0][:150]}", file=sys.stderr)


def cueline(log, *args, check=True):
    t = now()
    p = subprocess.run([CUELINE, *args], capture_output=True, text=True)
    out = " ".join((p.stdout + " " + p.stderr).split())
    log(f"$ cueline {' '.join(args)}  -> exit {p.returncode} ({now() - t:.2f} s): {out[:2000]}", quiet=args[0] == "schedule")
    if check and p.returncode != 0:
        raise ScenarioError(f"`cueline {' '.join(args[:3])}` failed (exit {p.returncode}): {(p.stderr or p.stdout).strip()[:200]}")
    return p


def schedule(log, ch):
    p = cueline(log, "schedule", ch, "--json")
    # The API's schedule view (snake_case); the scenarios read start, end, planned and playoutLimit.
    return {b["id"]: dict(b, start=b["start_date"], end=b["end_date"], planned=b["planned_duration"],
                          playoutLimit=b.get("playout_limit"))
            for b in json.loads(p.stdout)["breaks"]}


def help_has(flag, *cmd):
    p = subprocess.run([CUELINE, *cmd, "--help"], capture_output=True, text=True)
    return flag in p.stdout


class ScenarioError(Exception):
    pass


# ---- the live playlist, polled -----------------------------------------------------------------------------------
ATTR = re.compile(r'([A-Z0-9-]+)=("[^"]*"|[^,]*)')


def dateranges(text):
    out = {}
    for line in text.splitlines():
        if line.startswith("#EXT-X-DATERANGE:"):
            attrs = {k: v.strip('"') for k, v in ATTR.findall(line[len("#EXT-X-DATERANGE:"):])}
            out.setdefault(attrs.get("ID"), {}).update(attrs)
    return out


class Poller(threading.Thread):
    """Polls CH/720p.m3u8 every second: which date ranges are published when, with their merged attributes."""

    def __init__(self, ch, path):
        super().__init__(daemon=True)
        self.url = f"{URL}/channels/{ch}/720p.m3u8"
        self.polls = []  # (wall, {id: attrs})
        self.stop = threading.Event()
        self.path = path

    def run(self):
        last = None
        with open(self.path, "w") as f:
            while not self.stop.is_set():
                t = now()
                try:
                    text = urllib.request.urlopen(self.url, timeout=3).read().decode()
                    ranges = dateranges(text)
                    self.polls.append((t, ranges))
                    if ranges != last:
                        f.write(json.dumps({"wall": iso(t), "dateranges": ranges}) + "\n")
                        f.flush()
                        last = ranges
                except Exception as e:  # noqa: BLE001 - a failed poll is recorded, not fatal
                    f.write(json.dumps({"wall": iso(t), "error": str(e)}) + "\n")
                self.stop.wait(1.0)

    def attrs(self, bid):
        merged = {}
        for _, r in self.polls:
            merged.update(r.get(bid, {}))
        return merged

    def first_seen(self, bid, key):
        for t, r in self.polls:
            if key in r.get(bid, {}):
                return t
        return None

    def present_after(self, bid, wall):
        """True/False: was the range still published in the first poll at or after `wall`; None: no poll that late."""
        for t, r in self.polls:
            if t >= wall:
                return bid in r
        return None


# ---- the probe, watched live through Chromium's log ---------------------------------------------------------------
CONSOLE = re.compile(r'^\[\d+:\d+:(\d{4})/(\d{6}\.\d+):[A-Z]+:CONSOLE[^\]]*\] "HLSJS (\{.*\})", source: ')


class Probe:
    def __init__(self, ch, seconds, outdir, name):
        self.tmp = tempfile.mkdtemp(prefix="cueline-scenario-")
        self.json_path = os.path.join(outdir, f"{name}.events.jsonl")
        self.out_path = os.path.join(outdir, f"{name}.probe.out")
        self.stderr_copy = os.path.join(outdir, f"{name}.chromium.log")
        self.seconds = seconds
        self.launched = now()
        env = dict(os.environ, TMPDIR=self.tmp)  # the probe's Chromium profile (and its log) goes there
        self.p = subprocess.Popen(
            [sys.executable, os.path.join(PROBE_DIR, "hlsjs_probe.py"), "--src", f"{URL}/channels/{ch}/master.m3u8",
             "--seconds", str(seconds), "--json", self.json_path],
            stdout=open(self.out_path, "w"), stderr=subprocess.STDOUT, env=env)
        self.live = []  # (wall, event) parsed from Chromium's log so far
        self.pos = 0
        self.wall0 = None  # wall clock of the page's t = 0

    def _read(self):
        logs = glob.glob(os.path.join(self.tmp, "hlsjs-probe-*", "chromium.stderr"))
        if not logs:
            return
        with open(logs[0], errors="replace") as f:
            f.seek(self.pos)
            chunk = f.read()
        cut = chunk.rfind("\n") + 1
        self.pos += len(chunk[:cut].encode(errors="replace"))
        for line in chunk[:cut].splitlines():
            m = CONSOLE.match(line)
            if not m:
                continue
            try:
                ev = json.loads(m.group(3))
            except ValueError:
                continue
            md, hms = m.group(1), m.group(2)
            year = datetime.datetime.now().year
            local = datetime.datetime.strptime(f"{year}{md}{hms}", "%Y%m%d%H%M%S.%f")
            wall = local.timestamp()  # Chromium stamps its log in local time
            if self.wall0 is None and ev.get("ev") == "init":
                self.wall0 = wall - ev.get("t", 0)
            self.live.append((wall, ev))

    def wait_event(self, pred, deadline):
        """Waits (until wall `deadline`) for the first live event matching pred; returns (wall, event) or None."""
        seen = 0
        while True:
            self._read()
            for wall, ev in self.live[seen:]:
                if pred(ev):
                    return wall, ev
            seen = len(self.live)
            if now() >= deadline or self.p.poll() is not None:
                return None
            time.sleep(0.1)

    def finish(self):
        status = self.p.wait(timeout=self.seconds + 60)
        self._read()
        logs = glob.glob(os.path.join(self.tmp, "hlsjs-probe-*", "chromium.stderr"))
        if logs:
            shutil.copy(logs[0], self.stderr_copy)
        shutil.rmtree(self.tmp, ignore_errors=True)
        events = []
        if os.path.exists(self.json_path):
            events = [json.loads(line) for line in open(self.json_path) if line.strip()]
        if not events:  # the probe wrote nothing (killed?): fall back to what Chromium's log carried
            events = [ev for _, ev in self.live]
        if self.wall0 is None:  # no Chromium log: the page starts ~1 s after the launch (measured 0.5-1.5 s)
            self.wall0 = self.launched + 1.0
        return status, events


# ---- analysis ----------------------------------------------------------------------------------------------------
def ident(ev):
    e = ev.get("event")
    return e.get("identifier") if isinstance(e, dict) else None


def analyse_break(events, bid, start_wall, expected, wall0, poll, join=False):
    """What the viewer got of break `bid`: episodes (a start ... end), played seconds, join point, resume point,
    when the player saw the limit, latency before and after. `expected` is the effective duration on air (limit or
    planned); for a join the expected played time is that minus the join offset."""
    eps, cur = [], None
    assets = []
    limit_seen = None
    start_media = None  # the break's startTime in the primary's media time, as hls.js maps it (last seen)
    for ev in events:
        name, t = ev.get("ev"), ev.get("t", 0)
        for x in (ev.get("events") or []) + ([ev["event"]] if isinstance(ev.get("event"), dict) else []):
            if isinstance(x, dict) and x.get("identifier") == bid:
                if isinstance(x.get("startTime"), (int, float)):
                    start_media = x["startTime"]
                if x.get("playoutLimit") not in (None, 0) and limit_seen is None:
                    limit_seen = (t, x.get("playoutLimit"))
        if name == "INTERSTITIAL_STARTED" and ident(ev) == bid and cur is None:
            cur = {"start": t, "in_place": ev["event"].get("appendInPlace"), "end": None, "resumed": None}
            eps.append(cur)
        elif name == "INTERSTITIAL_ASSET_STARTED" and ident(ev) == bid:
            a = ev.get("asset") or {}
            assets.append({"t": t, "asset": a.get("identifier"), "startOffset": a.get("startOffset"),
                           "duration": a.get("duration"), "uri": a.get("uri")})
        elif name == "INTERSTITIAL_ENDED" and ident(ev) == bid and cur is not None:
            cur["end"] = t
            cur = None
        elif name == "INTERSTITIALS_PRIMARY_RESUMED" and eps and eps[-1]["end"] is not None and eps[-1]["resumed"] is None:
            eps[-1]["resumed"] = t
    # hls.js sends INTERSTITIALS_PRIMARY_RESUMED just after INTERSTITIAL_ENDED, or just before it in the same
    # millisecond (seen in CI: "no primary resume seen"): a resume up to 0.5 s before an episode's end is its resume.
    resumes = [ev.get("t", 0) for ev in events if ev.get("ev") == "INTERSTITIALS_PRIMARY_RESUMED"]
    for i, ep in enumerate(eps):
        if ep["resumed"] is None and ep["end"] is not None:
            nxt = eps[i + 1]["start"] if i + 1 < len(eps) else float("inf")
            near = [t for t in resumes if ep["end"] - 0.5 <= t < nxt]
            ep["resumed"] = near[0] if near else None
    ticks = [e for e in events if e.get("ev") == "tick"]
    t_end_probe = max((e.get("t", 0) for e in events), default=0)
    played = sum((ep["end"] if ep["end"] is not None else t_end_probe) - ep["start"] for ep in eps)

    def program(primary):  # program time (wall clock of the channel) of a primary media time
        return None if start_media is None else start_wall + (primary - start_media)

    # On the primary, the media element's time is the primary's media time (the interstitials manager's
    # `primary.currentTime` was seen frozen while the video played on, so it is not used).
    def primary_tick(e):
        im = e.get("im") or {}
        return im.get("playing") == "primary" and isinstance(e.get("video"), (int, float))

    def latency(e):
        p = program(e["video"])
        return None if p is None else wall0 + e["t"] - p

    first = eps[0]["start"] if eps else None
    # join offset: where in the break the viewer came in, from the first tick inside it (position minus elapsed time)
    join_offset = None
    if eps:
        for e in ticks:
            if e["t"] > eps[0]["start"] and str((e.get("im") or {}).get("playing", "")).startswith("interstitial"):
                elapsed = e["t"] - eps[0]["start"]
                if eps[0]["in_place"] and start_media is not None:
                    pos = e["video"] - start_media
                else:
                    cur_asset = [a for a in assets if a["t"] <= e["t"]]
                    pos = (cur_asset[-1]["startOffset"] or 0) + e["video"] if cur_asset else e["video"]
                join_offset = max(0.0, pos - elapsed)
                break
    want = expected - (join_offset or 0) if join else expected

    # resume point: program time where the primary picked up after the (last) episode
    resume_at = None
    last = eps[-1] if eps else None
    # Back to back: when another interstitial starts within 1 s of this one's end, the player goes on to it without
    # the primary (its INTERSTITIALS_PRIMARY_RESUMED comes after the next break): the resume point is that break.
    chained = None
    if last and last["end"] is not None:
        nxt = [e for e in events if e.get("ev") == "INTERSTITIAL_STARTED" and ident(e) not in (None, bid)
               and last["end"] <= e.get("t", 0) <= last["end"] + 1.0]
        chained = ident(nxt[0]) if nxt else None
    if last and last["resumed"] is not None and not chained:
        # The first tick after the resume can still carry the asset's element time (the interstitials manager says
        # "primary" a moment before the element is switched back: seen as "resumed -70 s into the break" in CI). A
        # primary time before the break's start is not the primary's: skip those ticks.
        after = [e for e in ticks if e["t"] >= last["resumed"] and primary_tick(e)
                 and (start_media is None or e["video"] >= start_media - 2.0)]
        if after and program(after[0]["video"]) is not None:
            resume_at = program(after[0]["video"]) - (after[0]["t"] - last["resumed"]) - start_wall
    before = [latency(e) for e in ticks if primary_tick(e) and e["t"] >= 3 and (first is None or e["t"] < first)]
    settle = (last["resumed"] if last and last["resumed"] is not None else (last["end"] if last and last["end"] else None))
    if not eps:  # nothing played (a cancelled break): "after" is once the playhead is 4 s past the break's start
        past = [e for e in ticks if primary_tick(e) and program(e["video"]) is not None and program(e["video"]) >= start_wall + 4]
        settle = past[0]["t"] if past else None
    after_l = [latency(e) for e in ticks if primary_tick(e) and settle is not None and e["t"] >= settle]
    if eps:
        after_l = [latency(e) for e in ticks if primary_tick(e) and settle is not None and e["t"] >= settle + 4]
    # Stalls: 2 s tick intervals in which the picture did not move while not paused, the same item playing. On the
    # primary: advanced less than 0.5 s. In an interstitial the element's time restarts with every asset (2 s chunks,
    # 6 s pod assets), so only an identical time counts there.
    stalled = []
    for a, b in zip(ticks, ticks[1:]):
        ia, ib = (a.get("im") or {}).get("playing"), (b.get("im") or {}).get("playing")
        va, vb = a.get("video"), b.get("video")
        if ia != ib or b.get("paused") or not isinstance(va, (int, float)) or not isinstance(vb, (int, float)) or b["t"] - a["t"] < 1.5:
            continue
        if (ia == "primary" and vb - va < 0.5) or (ia != "primary" and vb == va):
            stalled.append(round(b["t"], 2))
    reached = max((program(e["video"]) - start_wall for e in ticks if primary_tick(e) and program(e["video"]) is not None), default=None)
    before = [x for x in before if x is not None]
    after_l = [x for x in after_l if x is not None]
    ended_wall = wall0 + last["end"] if last and last["end"] is not None else None
    return {
        "break": bid, "starts": len(eps), "episodes": eps, "assets": assets, "played": round(played, 2),
        "expected": round(want, 2), "effective_duration": expected,
        "join_offset": None if join_offset is None else round(join_offset, 2),
        "limit_seen_by_player": limit_seen, "limit_seen_after_start": (round(limit_seen[0] - first, 2) if limit_seen and first is not None else None),
        "resume_offset_in_break": None if resume_at is None else round(resume_at, 2), "chained_to": chained,
        "latency_before": round(statistics.median(before), 2) if before else None,
        "latency_after": round(statistics.median(after_l), 2) if after_l else None,
        "latency_after_last": round(after_l[-1], 2) if after_l else None,
        "hlsjs_latency": [e.get("latency") for e in ticks],
        "range_published_at_end": (poll.present_after(bid, ended_wall + 1.0) if ended_wall else None),
        "stalled_ticks": stalled, "stalled_seconds": round(2.0 * len(stalled), 1),
        "primary_reached_in_break": None if reached is None else round(reached, 2),
        "unfinished": bool(eps and eps[-1]["end"] is None),
    }


def verdict(r, expect_starts=1, check_latency_before=True, join=False):
    """Assertions on one break's result; returns a list of failure reasons."""
    why = []
    if r["starts"] != expect_starts:
        why.append(f"started {r['starts']}x, expected {expect_starts}")
    # A frozen picture is what the viewer gets too: one stalled 2 s tick interval is allowed (loading the first asset
    # or the primary again at a transition), more is a failure.
    if r["stalled_seconds"] > 2.0:
        why.append(f"the picture froze for ~{r['stalled_seconds']} s (ticks at t={r['stalled_ticks'][:6]})")
    if expect_starts == 0:
        if r["played"] > 0:
            why.append(f"played {r['played']} s of a cancelled break")
        if r["primary_reached_in_break"] is None or r["primary_reached_in_break"] < 4:
            why.append(f"the primary never played past the cancelled break's start (reached {r['primary_reached_in_break']} s)")
        if r["latency_after"] is not None and r["latency_before"] is not None and r["latency_after"] > r["latency_before"] + LATENCY_SLACK:
            why.append(f"latency {r['latency_before']} s -> {r['latency_after']} s past the cancelled break")
        return why
    if r["unfinished"]:
        why.append("the interstitial never ended during the probe")
    lo, hi = r["expected"] - PLAYED_LOW, r["expected"] + PLAYED_HIGH
    if join:
        hi += JOIN_ASSET_SWITCH * len(r["assets"])
    if not lo <= r["played"] <= hi:
        why.append(f"played {r['played']} s, expected {r['expected']} s (allowed {lo:.1f}..{hi:.1f})")
    if r.get("chained_to"):
        pass  # went straight on to the next break (checked as that break's start)
    elif r["resume_offset_in_break"] is None:
        why.append("no primary resume seen")
    elif abs(r["resume_offset_in_break"] - r["effective_duration"]) > RESUME_TOL:
        why.append(f"primary resumed {r['resume_offset_in_break']} s into the break, not at its end ({r['effective_duration']} s)")
    la, lb = r["latency_after"], r["latency_before"]
    if la is None:
        why.append("no latency measured after the break")
    else:
        if check_latency_before and lb is not None and la > lb + LATENCY_SLACK:
            why.append(f"latency {lb} s -> {la} s after the break (further behind live)")
        if la > LATENCY_CAP:
            why.append(f"latency after the break {la} s > {LATENCY_CAP} s")
    if r["range_published_at_end"] is False:
        why.append("the range had left the playlist when the interstitial ended (the window, not the limit, ended it)")
    return why


# ---- scenarios ---------------------------------------------------------------------------------------------------
class Ctx:
    def __init__(self, n, title, outdir, features, ch):
        self.n, self.title, self.features = n, title, features
        self.ch = ch
        self.dir = outdir
        self.log = Log(os.path.join(outdir, f"{ch}.commands.log"))
        self.poll = Poller(self.ch, os.path.join(outdir, f"{ch}.playlist.jsonl"))
        self.poll.start()
        self.probe = None
        self.notes = []

    def place(self, bid, *args):
        align = ["--align", self.features["align_mode"]] if self.features.get("align_mode") else []
        cueline(self.log, "break", "place", self.ch, "--id", bid, "--actor", "scenario", *align, *args)
        b = schedule(self.log, self.ch)[bid]
        self.log(f"{bid}: start {b['start']} planned {b.get('planned')}")
        return b

    def play(self, seconds):
        self.probe = Probe(self.ch, seconds, self.dir, self.ch)
        self.log(f"probe launched for {seconds} s")
        return self.probe

    def published(self, bid, sched):
        """The break's effective duration as published: X-PLAYOUT-LIMIT if the playlist carried one, else
        PLANNED-DURATION; the schedule's values when the playlist never showed the range."""
        a = self.poll.attrs(bid)
        if "X-PLAYOUT-LIMIT" in a:
            return float(a["X-PLAYOUT-LIMIT"]), "limit", a
        if "PLANNED-DURATION" in a:
            return float(a["PLANNED-DURATION"]), "planned", a
        b = sched.get(bid, {})
        for k in ("playoutLimit", "limit", "duration", "planned"):
            if b.get(k) is not None:
                return float(b[k]), k, a
        raise ScenarioError(f"{bid}: no duration published")

    def close(self):
        self.poll.stop.set()
        self.poll.join(5)


def pod(n, seconds=6):
    return [x for i in range(1, n + 1) for x in ("--pod", f"{AD}/pod{i}.m3u8,{seconds}")]


def s1(c):
    """Early return known before the viewer reaches the break."""
    b = c.place("s1-brk", "--in", "12s", "--duration", "30s", "--asset-uri", f"{AD}/ad.m3u8")
    S = parse_iso(b["start"])
    sleep_until(S - 4)
    probe = c.play(30)
    # 3 s after the wall-clock start: inside the break's second segment (starts are on segment boundaries; an
    # unaligned start's first segment is over too), so this is an early return and not the removal of a break
    # not yet served. Viewers play ~8 s behind the wall clock, so the limit is in their playlist ~5 s before they
    # reach the break.
    sleep_until(S + 3)
    cueline(c.log, "event", "cancel-current", c.ch, "--actor", "scenario")
    return probe, [("s1-brk", S, {})], {"limit_before_start": True}


def late_return(c, bid, asset_args, seconds=50):
    b = c.place(bid, "--in", "10s", "--duration", "30s", *asset_args)
    S = parse_iso(b["start"])
    sleep_until(S - 4)
    probe = c.play(seconds)
    # Viewers reach the break ~8 s after its wall-clock start: wait for the player's own INTERSTITIAL_STARTED (up to
    # start + 16 s), then end the break 10 s later; without it, end it at start + 18 s.
    got = probe.wait_event(lambda e: e.get("ev") == "INTERSTITIAL_STARTED" and ident(e) == bid, S + 16)
    if got:
        c.log(f"the viewer's interstitial started at {iso(got[0])} (break start + {got[0] - S:.1f} s)")
        sleep_until(got[0] + 10)
    else:
        c.notes.append("the player had not started the interstitial 16 s after the break's start: ended it at start + 18 s")
        sleep_until(S + 18)
    cueline(c.log, "event", "cancel-current", c.ch, "--actor", "scenario")
    return probe, [(bid, S, {})], {"limit_mid_ad": True}


def s2(c):
    """Early return arriving while a single long asset plays (Cueline's chunked asset list by default)."""
    return late_return(c, "s2-brk", ["--asset-uri", f"{AD}/ad.m3u8"])


def s3(c):
    """Early return arriving while a pod of 5 x 6 s plays."""
    return late_return(c, "s3-brk", pod(5))


def join(c, bid, asset_args):
    b = c.place(bid, "--in", "4s", "--duration", "30s", *asset_args)
    S = parse_iso(b["start"])
    # The viewer starts 3 target durations behind the last segment's end (~7 s behind the wall clock on average)
    # and the page is up ~1 s after the launch: launched at S + 15 the playhead lands ~9 s into the break.
    sleep_until(S + 15)
    return c.play(34), [(bid, S, {"join": True})], {}


def s4(c):
    """Mid-break join through an asset list (a 5 x 6 s pod)."""
    return join(c, "s4-brk", pod(5))


def s5(c):
    """Mid-break join through a single asset URI (plain X-ASSET-URI: --no-chunks)."""
    extra = ["--no-chunks"] if c.features.get("no_chunks") else []
    if not extra:
        c.notes.append("this build has no --no-chunks (its single-asset breaks are plain X-ASSET-URI anyway)")
    return join(c, "s5-brk", ["--asset-uri", f"{AD}/ad.m3u8", *extra])


def s6(c):
    """A future break cancelled after hls.js preloaded its asset list: it must not play."""
    bid = "s6-brk"
    b = c.place(bid, "--in", "14s", "--duration", "12s", *pod(2))
    S = parse_iso(b["start"])
    probe = c.play(34)
    got = probe.wait_event(lambda e: e.get("ev") == "ASSET_LIST_LOADED" and ident(e) == bid, S - 1.5)
    if got:
        c.log(f"hls.js loaded the asset list at {iso(got[0])} (break start - {S - got[0]:.1f} s)")
        sleep_until(max(got[0] + 0.5, S - 3))
    else:
        c.notes.append("hls.js had not loaded the asset list 1.5 s before the start: cancelled anyway")
    cueline(c.log, "break", "cancel", c.ch, bid, "--actor", "scenario")
    return probe, [(bid, S, {"starts": 0})], {"preloaded": bool(got)}


def s7(c):
    """Back-to-back breaks with a natural end: 6 s, then a 12 s pod at once; each plays once."""
    b1 = c.place("s7-a", "--in", "10s", "--duration", "6s", "--asset-uri", f"{AD}/ad6.m3u8")
    b2 = c.place("s7-b", "--at", b1["end"], "--duration", "12s", *pod(2))
    S1, S2 = parse_iso(b1["start"]), parse_iso(b2["start"])
    if abs(S2 - parse_iso(b1["end"])) > 0.001:
        c.notes.append(f"the second break starts {S2 - parse_iso(b1['end']):.3f} s after the first one's end")
    sleep_until(S1 - 4)
    return c.play(44), [("s7-a", S1, {}), ("s7-b", S2, {})], {}


def decided(ads):
    """A break filled by the test ad server: a pod of `ads` 6 s creatives (the demo's pod1.m3u8, pod2.m3u8, …)."""
    if not ADS:
        raise ScenarioError("no ADS_URL: the test ad server is not running")
    return ["--ad-server", f"{ADS}/vast/inline?ads={ads}&b={{break_id}}&pid={{primary_id}}"]


def s8(c):
    """A break filled by the test ad server: hls.js plays the three decided creatives in order, each its length."""
    b = c.place("s8-brk", "--in", "12s", "--duration", "18s", *decided(3))
    S = parse_iso(b["start"])
    sleep_until(S - 4)
    return c.play(36), [("s8-brk", S, {"assets": [f"{AD}/pod{i}.m3u8" for i in (1, 2, 3)]})], {}


def s9(c):
    """Early return arriving while a pod of 5 x 6 s decided by the ad server plays."""
    return late_return(c, "s9-brk", decided(5))


def s10(c):
    """A future break whose preload range the viewer's playlist carried, cancelled: it must not play, and its
    preload range goes with it."""
    bid = "s10-brk"
    b = c.place(bid, "--in", "30s", "--duration", "12s", *decided(2))
    S = parse_iso(b["start"])
    probe = c.play(46)
    seen = None
    while now() < S - 5 and not seen:
        seen = c.poll.first_seen(f"{bid}.preload", "X-URI")
        time.sleep(0.3)
    if seen:
        c.log(f"the preload range was published by {iso(seen)} (break start - {S - seen:.1f} s)")
    # The player loads the asset list itself shortly before the start (hls.js reads no preload range): cancel once it
    # has, as scenario 6 does, or 3 s before the start.
    got = probe.wait_event(lambda e: e.get("ev") == "ASSET_LIST_LOADED" and ident(e) == bid, S - 3)
    if got:
        c.log(f"hls.js loaded the asset list at {iso(got[0])} (break start - {S - got[0]:.1f} s)")
    cueline(c.log, "break", "cancel", c.ch, bid, "--actor", "scenario")
    return probe, [(bid, S, {"starts": 0, "preload": True})], {"preload_seen": bool(seen)}


def prerolls(ranges):
    """The CUE=PRE interstitials of one poll: {id: (start wall, duration)}."""
    return {i: (parse_iso(a["START-DATE"]), float(a.get("DURATION", 0))) for i, a in ranges.items()
            if i and "PRE" in a.get("CUE", "").split(",")}


def s11(c):
    """A preroll on join: the viewer joins 20 s before the channel's preroll range is replaced by the next one (it
    ends before the window); hls.js plays the preroll once at the join, then the programme, and does not play the
    next range's preroll when it appears."""
    cueline(c.log, "channel", "update", c.ch, "--preroll-asset", f"{AD}/ad6.m3u8", "--preroll-duration", "6s",
            "--actor", "scenario")
    window = 60.0  # 30 x 2 s segments (player-scenarios.sh)
    for attempt in range(2):
        deadline = now() + 10
        current = {}
        while now() < deadline and not current:
            current = prerolls(c.poll.polls[-1][1]) if c.poll.polls else {}
            time.sleep(0.3)
        if len(current) != 1:
            raise ScenarioError(f"the playlist does not carry one preroll range: {current}")
        (first, (start, length)), = current.items()
        # Replaced once it ends before the window's first segment: the live edge a window (and a segment) past its end.
        handover = start + length + window + 2
        c.log(f"preroll range {first}: START-DATE {iso(start)}, {length} s; the next one from about {iso(handover)}")
        if handover - now() >= 25:
            break
        # Too soon to join before it (a join within a preroll's length of the handover has its preroll ended by
        # hls.js when the range leaves): wait for the next range (every 100 target durations, 200 s here).
        sleep_until(handover + 3)
    else:
        raise ScenarioError("no preroll range far enough from its replacement to join before it")
    sleep_until(handover - 20)
    probe = c.play(45)

    def check(events):
        why = []
        started = [e for e in events if e.get("ev") == "INTERSTITIAL_STARTED" and (ident(e) or "").startswith("preroll.")]
        ids = [ident(e) for e in started]
        later = [p for t, r in c.poll.polls if t > handover - 20 for p in prerolls(r) if p != first]
        second = later[0] if later else None
        c.notes.append(f"prerolls started by hls.js: {ids}; the next range {second} published from "
                       f"{iso(c.poll.first_seen(second, 'ID')) if second else '-'}")
        if ids.count(first) != 1:
            why.append(f"the preroll {first} was started {ids.count(first)} times at the join, not once")
        if second is None:
            why.append("precondition: the next preroll range never reached the playlist while the viewer watched")
        elif second in ids:
            why.append(f"the next preroll range {second} was played by a viewer already watching")
        assets = [(e.get("asset") or {}).get("uri", "") for e in events
                  if e.get("ev") == "INTERSTITIAL_ASSET_STARTED" and ident(e) == first]
        if not assets or not assets[0].startswith(f"{AD}/ad6.m3u8"):
            why.append(f"the preroll's asset as hls.js started it: {assets}")
        # The programme after the preroll: the primary's position advancing while hls.js plays the primary.
        ended = [e.get("t", 0) for e in events if e.get("ev") == "INTERSTITIAL_ENDED" and ident(e) == first]
        ticks = [((e.get("im") or {}).get("primary", 0), e.get("t", 0)) for e in events if e.get("ev") == "tick"
                 and ended and e.get("t", 0) > ended[0] and (e.get("im") or {}).get("playing") == "primary"]
        advanced = (ticks[-1][0] - ticks[0][0]) if len(ticks) >= 2 else 0
        c.notes.append(f"preroll ended at t={ended[0] if ended else '-'} s; the programme then advanced {advanced:.1f} s")
        if not ended:
            why.append("the preroll never ended")
        elif advanced < 10:
            why.append(f"the programme advanced {advanced:.1f} s after the preroll (stalled?)")
        # Where hls.js 1.6.15 joins the programme after a live preroll: at the window's start (a window behind the
        # live edge), not at the live start: hls.js #7845, fixed by #7846 in 1.7.0. Recorded; more than the window
        # and two segments behind would be something else.
        lat = sorted(e.get("latency") for e in events if e.get("ev") == "tick" and ended and e.get("t", 0) > ended[0] + 2
                     and isinstance(e.get("latency"), (int, float)) and (e.get("im") or {}).get("playing") == "primary")
        if lat:
            median = lat[len(lat) // 2]
            c.notes.append(f"latency after the preroll {median:.1f} s (window {window:.0f} s): hls.js 1.6.15 joins the "
                           "programme at the window's start after a live preroll (hls.js #7845, fixed in 1.7.0)")
            if median > window + 4:
                why.append(f"latency after the preroll {median:.1f} s, more than the window ({window:.0f} s)")
        return why

    return probe, [], {"check": check}


SCENARIOS = [
    (1, "early return known before the viewer reaches the break", s1),
    (2, "early return while a single 30 s asset plays", s2),
    (3, "early return while a 5 x 6 s pod plays", s3),
    (4, "mid-break join via an asset list (pod)", s4),
    (5, "mid-break join via a single asset URI", s5),
    (6, "future break cancelled after its list was preloaded", s6),
    (7, "back-to-back breaks, natural end (6 s + 12 s pod)", s7),
    (8, "a break filled by the ad server (3 x 6 s decided)", s8),
    (9, "early return while a 5 x 6 s decided pod plays", s9),
    (10, "future decided break cancelled after its preload range", s10),
    (11, "a preroll on join, played once; the next range not played", s11),
]


def run(n, title, fn, outdir, features, ch):
    print(f"==> scenario {n}: {title} (channel {ch})", file=sys.stderr)
    c = Ctx(n, title, outdir, features, ch)
    res = {"scenario": n, "title": title, "channel": c.ch, "breaks": [], "failures": [], "notes": c.notes}
    try:
        probe, breaks, pre = fn(c)
        status, events = probe.finish()
        time.sleep(1.2)  # one more playlist poll after the probe ended
        sched = schedule(c.log, c.ch)
        res["schedule"] = sched
        res["probe_status"] = status
        fatal = [e for e in events if e.get("ev") == "ERROR" and e.get("fatal")]
        res["fatal_errors"] = fatal[:5]
        res["errors"] = [{"t": e.get("t"), "details": e.get("details"), "fatal": e.get("fatal")}
                         for e in events if e.get("ev") in ("ERROR", "INTERSTITIAL_ASSET_ERROR")][:20]
        if fatal:
            res["failures"].append(f"{len(fatal)} fatal hls.js error(s): {fatal[0].get('details')}")
        if status == 3:
            res["failures"].append("hls.js never parsed the manifest")
        if "check" in pre:
            res["failures"] += pre["check"](events)
        for bid, S, opts in breaks:
            expect_starts = opts.get("starts", 1)
            if expect_starts == 0:
                eff, source, attrs = 0.0, "cancelled", c.poll.attrs(bid)
            else:
                eff, source, attrs = c.published(bid, sched)
            r = analyse_break(events, bid, S, eff, probe.wall0, c.poll, join=opts.get("join", False))
            r["expected_from"] = source
            r["published"] = {k: v for k, v in attrs.items() if k not in ("ID", "CLASS")}
            r["delivery"] = ("X-ASSET-LIST" if "X-ASSET-LIST" in attrs else "X-ASSET-URI" if "X-ASSET-URI" in attrs else None)
            why = verdict(r, expect_starts, check_latency_before=not opts.get("join"), join=opts.get("join", False))
            if pre.get("limit_before_start") and expect_starts:
                ls = r["limit_seen_after_start"]
                if ls is None or ls > 0:
                    why.append(f"precondition: the limit reached the player {ls} s after its interstitial started, not before")
            if pre.get("limit_mid_ad"):
                ls = r["limit_seen_after_start"]
                if ls is None or not 3 <= ls <= 25:
                    why.append(f"precondition: the limit reached the player {ls} s into the ad, not mid-ad")
            if "preloaded" in pre and not pre["preloaded"]:
                why.append("precondition: hls.js never loaded the asset list before the cancel")
            if "preload_seen" in pre and not pre["preload_seen"]:
                why.append("precondition: the preload range never reached the playlist before the cancel")
            if opts.get("preload") and c.poll.polls and f"{bid}.preload" in c.poll.polls[-1][1]:
                why.append("the cancelled break's preload range is still in the playlist")
            if opts.get("assets"):
                # The creatives the ad server decided, as hls.js started them (its own asset events: the URI, the
                # index in the list, the duration it read from the media), against what the ad server said: in
                # order, each once, each its VAST length (6 s) within half a second.
                started = [e for e in events if e.get("ev") == "INTERSTITIAL_ASSET_STARTED" and ident(e) == bid]
                played = [(e.get("assetListIndex"), (e.get("asset") or {}).get("uri"),
                           (e.get("asset") or {}).get("duration")) for e in started]
                r["decided_assets"] = played
                if [p[1] for p in played] != opts["assets"] or [p[0] for p in played] != list(range(len(opts["assets"]))):
                    why.append(f"hls.js started {[(p[0], p[1]) for p in played]}, not the decided {opts['assets']} in order")
                off = [p for p in played if not isinstance(p[2], (int, float)) or abs(p[2] - 6.0) > 0.5]
                if off:
                    why.append(f"assets whose length is not the VAST duration (6 s): {off}")
            if opts.get("join") and r["join_offset"] is not None and not 4 <= r["join_offset"] <= 16:
                res["notes"].append(f"the viewer joined {r['join_offset']} s into the break (aimed at ~9 s)")
            if source == "cancelled":
                r["still_published"] = bid in (c.poll.polls[-1][1] if c.poll.polls else {})
                if r["still_published"]:
                    why.append("the cancelled break is still in the playlist")
            r["failures"] = why
            res["breaks"].append(r)
            res["failures"] += [f"{bid}: {w}" for w in why]
    except ScenarioError as e:
        res["failures"].append(str(e))
    except Exception as e:  # noqa: BLE001 - one broken scenario must not stop the others
        res["failures"].append(f"{type(e).__name__}: {e}")
    finally:
        if c.probe and c.probe.p.poll() is None:
            c.probe.p.kill()
        c.close()
    res["verdict"] = "PASS" if not res["failures"] else "FAIL"
    return res


def fmt(x):
    return "-" if x is None else (f"{x:.2f}" if isinstance(x, float) else str(x))


def table(results):
    rows = [("#", "scenario", "break", "expected s", "played s", "starts", "latency s", "verdict")]
    for r in results:
        bs = r["breaks"] or [{"break": "-", "expected": None, "played": None, "starts": None}]
        for b in bs:
            lat = f"{fmt(b.get('latency_before'))}->{fmt(b.get('latency_after'))}" if b.get("break") != "-" else "-"
            v = r["verdict"] if not b.get("failures") and r["verdict"] == "PASS" else "FAIL"
            rows.append((str(r["scenario"]), r["title"][:52], b["break"], fmt(b.get("expected")), fmt(b.get("played")),
                         fmt(b.get("starts")), lat, v))
    w = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w[i]) for i, c in enumerate(row)) for row in rows)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", type=lambda v: {int(x) for x in v.split(",")}, help="scenario numbers, e.g. 2 or 2,7")
    ap.add_argument("--align", choices=["segment", "exact"], help="pass --align to every break place (diagnostics)")
    ap.add_argument("--retry", action="store_true", help="run a failed scenario once more on channel s<n>r")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    features = {"no_chunks": help_has("--no-chunks", "break", "place"), "align": help_has("--align", "break", "place")}
    if a.align:
        if not features["align"]:
            sys.exit("this build has no break place --align")
        features["align_mode"] = a.align
    t0 = now()
    results = []
    for n, title, fn in SCENARIOS:
        if a.only and n not in a.only:
            continue
        r = run(n, title, fn, a.out, features, f"s{n}")
        print(f"    scenario {n}: {r['verdict']}" + "".join(f"\n      - {w}" for w in r["failures"]), file=sys.stderr)
        if r["verdict"] != "PASS" and a.retry:
            # A real browser on a loaded 2-core CI machine misses a timing bound now and then. A failed scenario runs
            # once more on its own fresh channel (s<n>r, created by player-scenarios.sh); it passes only if that run
            # passes, and the first run's failures stay in the summary and the table's notes.
            first = r
            print(f"    scenario {n} failed once; running it again on channel s{n}r", file=sys.stderr)
            r = run(n, title, fn, a.out, features, f"s{n}r")
            r["first_attempt"] = {"channel": first["channel"], "failures": first["failures"], "breaks": first["breaks"]}
            r["notes"].append(f"passed only on its second run; the first failed: {'; '.join(first['failures'])}"
                              if r["verdict"] == "PASS" else "failed twice")
            print(f"    scenario {n} (second run): {r['verdict']}" + "".join(f"\n      - {w}" for w in r["failures"]),
                  file=sys.stderr)
        results.append(r)
    summary = {"server": URL, "server_commit": os.environ.get("SERVER_COMMIT"), "features": features,
               "hlsjs": "1.6.15", "seconds": round(now() - t0, 1),
               "tolerances": {"played_low": PLAYED_LOW, "played_high": PLAYED_HIGH, "join_asset_switch": JOIN_ASSET_SWITCH, "resume": RESUME_TOL,
                              "latency_slack": LATENCY_SLACK, "latency_cap": LATENCY_CAP},
               "scenarios": results}
    with open(os.path.join(a.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2, default=str)
    print(table(results))
    failed = [r for r in results if r["verdict"] != "PASS"]
    for r in failed:
        print(f"scenario {r['scenario']} FAILED: " + "; ".join(r["failures"]))
    for r in results:
        if r.get("first_attempt") and r["verdict"] == "PASS":
            print(f"scenario {r['scenario']} passed on its second run; its first run failed: "
                  + "; ".join(r["first_attempt"]["failures"]))
    print(f"{len(results) - len(failed)}/{len(results)} scenarios passed in {now() - t0:.0f} s "
          f"(server {os.environ.get('SERVER_COMMIT')}); events and summary.json in {a.out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
