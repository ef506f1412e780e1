#!/usr/bin/env python3
"""Fuzzes the whole HTTP surface of `cueline serve` (driven by scripts/fuzz/fuzz-http.sh; Python standard library only).

For --seconds it sends random and adversarial requests from a few workers: commands (valid and broken, with and
without Idempotency-Key and If-Match, retries, racers), SCTE-35 sections (valid, mutated, random, hex/base64
confusion), signed and forged hook deliveries, GETs with random query strings on every route of openapi.json, odd
paths and wrong methods, with no, bad, viewer and other-channel tokens. A poller checks /healthz and lints every
rendition against its previous fetch. When the server dies, the requests in flight are replayed one at a time
against a restarted server to name the one that kills it, and fuzzing goes on.

Invariants checked at the end (any violation: exit 1):
  1 the server never died and no answer was a 5xx other than 503
  2 every 201 is in the log exactly once, with the acknowledged bytes
  3 every 503 to a command wrote nothing
  4 `cueline verify` passes for every channel
  5 every rendition passes `cueline lint` and `cueline lint --previous` against its last fetch
  7 on kept-alive connections (players' media playlist requests, read on raw bytes by the server, mixed with other
    routes and with mutated heads, sent in random chunks), every request gets exactly one answer, in order, of its kind
Reported as findings (exit 0): bad input not answered 4xx with a JSON error naming the field (6), and the other
smells the harness looks for (authorization, cross-tenant answers, hook replays, control characters in playlists, …).

Beside it: raw_http.py (the raw-socket client), values.py and scte35_writer.py (what goes into requests), request.py
(a generated request, and how findings describe it), cases.py (the generators) and checks.py (the checks).
"""
import argparse
import collections
import json
import os
import random
import re
import subprocess
import sys
import threading
import time

from cases import Cases
from checks import Checks
from raw_http import build_raw, send_raw
from request import TOKEN_NAMES, Req, short_body


class Fuzzer(Cases, Checks):
    """The run: the server, the workers, the poller, crash handling and the summary. The request generators are in
    cases.py, the checks in checks.py."""

    def __init__(self, cfg, seed, seconds, workers):
        self.cfg = cfg
        self.seed = seed
        self.seconds = seconds
        self.workers = workers
        self.port = cfg["port"]
        self.base = f"http://127.0.0.1:{self.port}"
        self.channels = cfg["channels"]            # {name: [renditions]}
        self.tokens = cfg["tokens"]                # {"operator": secret, ...}
        TOKEN_NAMES.update(self.tokens)
        self.token_names = cfg["token_names"]      # {"operator": "fuzz-op", ...}
        self.auto_channel = cfg["auto_channel"]
        self.auto2_channel = cfg["auto2_channel"]
        self.hooks = cfg["hooks"]                  # {name: secret}
        self.lock = threading.Lock()
        self.records = []
        self.next_id = 0
        self.stop = threading.Event()
        self.running = threading.Event()
        self.running.set()
        self.inflight = {}
        self.recent_errors = collections.deque(maxlen=64)
        self.sem = threading.BoundedSemaphore(4)   # the workers' requests in flight (racers included); the poller adds one
        self.proc = None
        self.server_logs = []
        self.crashes = []
        self.suppressed = set()
        self.findings = collections.OrderedDict()   # title -> [count, example]
        self.violations = collections.OrderedDict()
        self.retired = {}                                      # channels that stopped taking commands
        self.blocked = collections.Counter()                   # 503s per channel while the database is up
        self.breaks = {c: [] for c in self.channels}          # break ids seen placed
        self.versions = {c: 1 for c in self.channels}
        self.sent_keys = []                                    # (channel, token, key, body)
        self.scte_sent = []                                    # (time, channel, section bytes b64)
        self.hook_deliveries = []                              # (name, ts, body, sig)
        self.hook_first = {}
        self.errors = []                                       # requests without an answer
        self.deaths = []                                       # when the process was found dead                                   # delivery -> (first request, status, replayed)
        self.lint_runs = 0
        self.lint_pairs = 0
        self.lint_gaps = 0
        self.polls = 0
        self.health_checks = 0
        self.pipelines = 0
        self.next_event_id = 1000
        self.started = time.time()

    # -- bookkeeping ------------------------------------------------------------------------------------------

    def finding(self, title, example):
        with self.lock:
            entry = self.findings.setdefault(title, [0, example])
            entry[0] += 1

    def violation(self, invariant, title, example):
        with self.lock:
            entry = self.violations.setdefault((invariant, title), [0, example])
            entry[0] += 1

    # -- the server -------------------------------------------------------------------------------------------

    def start_server(self):
        n = len(self.server_logs) + 1
        path = os.path.join(self.cfg["workdir"], f"serve-{n}.log")
        self.server_logs.append(path)
        log = open(path, "ab")
        self.proc = subprocess.Popen(self.cfg["server_cmd"], stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        with open(os.path.join(self.cfg["workdir"], "server.pids"), "a") as f:
            f.write(f"{self.proc.pid}\n")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"cueline serve exited at start ({self.proc.returncode}); see {path}")
            r = send_raw(self.port, build_raw(self.port, "GET", "/readyz"), timeout=2)
            if r.status == 200:
                return
            time.sleep(0.1)
        raise SystemExit(f"cueline serve did not become ready in 60 s; see {path}")

    def stop_server(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def server_dead(self):
        return self.proc.poll() is not None

    def crash_excerpt(self):
        try:
            text = open(self.server_logs[-1], "rb").read().decode("utf-8", "replace")
        except OSError:
            return ""
        lines = text.splitlines()
        what = [l.strip() for l in lines if re.search(r"Fatal error|runtime failure", l)][:1]
        # The first frame in the project's own sources names the place.
        where = [re.sub(r"^\s*\d+ \[[^]]*\](?: \[[^]]*\])*\s+0x[0-9a-f]+ ", "", l).strip() for l in lines
                 if "/Sources/" in l and " at " in l and "/.build/" not in l][:1]
        out = " | ".join(what + where)
        return out[:600] or " | ".join(lines[-3:])[:600]

    def describe_exit(self):
        rc = self.proc.returncode
        return f"signal {-rc}" if rc is not None and rc < 0 else f"exit {rc}"

    # -- sending ----------------------------------------------------------------------------------------------

    def send(self, req, record=True, timeout=10.0, limited=True):
        if req.raw is None:
            req.raw = build_raw(self.port, req.method, req.path, req.headers, req.body)
        with self.lock:
            self.next_id += 1
            req.id = self.next_id
            self.inflight[req.id] = req
        if limited:
            self.sem.acquire()
        try:
            req.t0 = time.time()
            req.resp = send_raw(self.port, req.raw, timeout=timeout, stream_seconds=0.5, method=req.method)
            req.t1 = time.time()
        finally:
            if limited:
                self.sem.release()
            with self.lock:
                self.inflight.pop(req.id, None)
                if req.resp.error:
                    self.recent_errors.append(req)
                if record:
                    self.records.append(req)
        return req.resp

    # -- tokens -----------------------------------------------------------------------------------------------

    def auth_header(self, who):
        if who == "none":
            return []
        if who == "invalid":
            return [("Authorization", "Bearer " + "0" * 64)]
        if who == "basic":
            return [("Authorization", "Basic YWRtaW46YWRtaW4=")]
        if who == "huge":
            return [("Authorization", "Bearer " + "A" * 20000)]
        if who == "bearer-empty":
            return [("Authorization", "Bearer ")]
        return [("Authorization", "Bearer " + self.tokens[who])]

    def pick_token(self, rng, channel, command=True):
        r = rng.random()
        if r < 0.62:
            return "operator"
        if r < 0.78:
            return "automation"
        if r < 0.83:
            return "automation2"
        if r < 0.88:
            return "viewer"
        return rng.choice(["none", "invalid", "revoked", "basic", "bearer-empty", "huge"])

    def may_command(self, who, channel, command):
        """Whether the token may send this command on this channel (None: the harness cannot tell)."""
        if who == "operator":
            return True
        if who == "automation":
            return channel == self.auto_channel
        if who == "automation2":
            return channel == self.auto2_channel and command == "cancel_current_event"
        return False

    def may_read(self, who, channel):
        if who in ("operator", "viewer"):
            return True
        if who == "automation":
            return channel == self.auto_channel
        if who == "automation2":
            return channel == self.auto2_channel
        return False

    # -- the workers ------------------------------------------------------------------------------------------

    def worker(self, n):
        rng = random.Random(f"{self.seed}-{n}")
        while not self.stop.is_set():
            self.running.wait()
            if self.stop.is_set():
                break
            req = self.generate(rng)
            if req is None:
                continue
            if req == "race":
                self.gen_race(rng)
                continue
            if req == "pipeline":
                self.gen_pipeline(rng)
                continue
            if self.suppressed and suppression_keys(req) & self.suppressed:
                continue
            self.send(req)
            self.after(req)
            time.sleep(rng.random() * 0.01)

    def poller(self):
        """/healthz every second; every rendition of every channel about every 1.5 s, linted with `cueline lint` against
        its previous fetch (renditions rendered for the same tick are linted together: they must also agree)."""
        previous = {}
        cycle = 0
        d = os.path.join(self.cfg["workdir"], "playlists")
        os.makedirs(d, exist_ok=True)
        while not self.stop.is_set():
            time.sleep(0.7)
            if not self.running.is_set():
                continue
            r = send_raw(self.port, build_raw(self.port, "GET", "/healthz"), timeout=10)
            self.health_checks += 1
            if r.status != 200 and self.running.is_set() and not self.server_dead():
                # A dying process stops answering while its backtrace is written: that is reported as the crash.
                deadline = time.time() + 20
                while time.time() < deadline and not self.server_dead():
                    time.sleep(0.2)
                if not self.server_dead():
                    self.violation(1, "/healthz did not answer 200 while the process was alive", f"{r.status} {r.error or short_body(r)}")
                continue
            cycle += 1
            for channel, renditions in list(self.channels.items()):
                fetched = []
                for name in (["master"] if cycle % 5 == 1 else []) + renditions:
                    if not self.running.is_set():
                        break
                    path = f"/channels/{channel}/{name}.m3u8"
                    req = Req("GET", path, "GET /channels/{channel}/{rendition}.m3u8" if name != "master" else "GET /channels/{channel}/master.m3u8", "poll")
                    resp = self.send(req, limited=False)
                    if resp.status != 200:
                        self.trim(req)
                        if resp.status and resp.status != 503:
                            self.violation(5, "a rendition was not served", f"GET {path} → {resp.status} {short_body(resp)}")
                        continue
                    body = resp.body
                    self.after(req)
                    self.polls += 1
                    f = os.path.join(d, f"{channel}-{name}-{self.polls:05d}.m3u8")
                    with open(f, "wb") as out:
                        out.write(body)
                    prev, prev_at = previous.get((channel, name), (None, 0))
                    # --previous needs successive versions: across a gap longer than the window's slack (a crash, a
                    # slow machine) a range can end and leave without the fetch that shows its DURATION.
                    if prev and req.t0 - prev_at > 4:
                        self.lint_gaps += 1
                        prev = None
                    previous[(channel, name)] = (f, req.t0)
                    fetched.append((name, f, prev, resp.headers.get("x-cueline-tick")))
                media = [x for x in fetched if x[0] != "master"]
                groups = [[x] for x in fetched if x[0] == "master"]
                if len(media) > 1 and len({x[3] for x in media}) == 1 and all(x[2] for x in media) == any(x[2] for x in media):
                    groups.append(media)
                else:
                    groups += [[x] for x in media]
                for group in groups:
                    args = [self.cfg["cueline"], "lint"] + [x[1] for x in group]
                    for x in group:
                        if x[2]:
                            args += ["--previous", x[2]]
                            self.lint_pairs += 1
                    lint = subprocess.run(args, capture_output=True, text=True, errors="replace")
                    self.lint_runs += 1
                    if lint.returncode != 0:
                        what = " ".join(os.path.basename(a) if a.startswith("/") else a for a in args[1:])
                        names = "+".join(x[0] for x in group)
                        self.violation(5, f"cueline lint fails on {channel}/{names}", f"cueline {what} (in {d}): {(lint.stdout + lint.stderr).strip()[:600]}")

    def monitor(self):
        """Watches the process; on death, names the request that killed it and restarts the server."""
        while not self.stop.is_set():
            time.sleep(0.1)
            if self.server_dead():
                self.handle_crash()

    def handle_crash(self):
        died = time.time()
        self.deaths.append(died)
        self.running.clear()
        exitinfo = self.describe_exit()
        excerpt = self.crash_excerpt()
        time.sleep(0.3)
        deadline = time.time() + 12
        while time.time() < deadline:
            with self.lock:
                if not self.inflight:
                    break
            time.sleep(0.05)
        with self.lock:
            # What was on the wire when it died: requests cut off (not refused: those came after) and any still open.
            # (the backtracer can hold a dying process for longer than a request's 10 s timeout on a loaded machine)
            candidates = [r for r in self.recent_errors if r.t0 <= died and r.t1 >= died - 30 and "Refused" not in (r.resp.error or "")]
            candidates.sort(key=lambda r: -r.t0)
            candidates += [r for r in self.inflight.values() if r.t0 <= died]
            self.recent_errors.clear()
        seen, unique = set(), []
        for c in candidates:
            if c.raw not in seen and c.kind != "poll":
                seen.add(c.raw)
                unique.append(c)
        crash = {"at": died - self.started, "exit": exitinfo, "log": excerpt, "candidates": [c.describe() for c in unique], "confirmed": []}
        self.crashes.append(crash)
        self.violation(1, "the server process died", f"{exitinfo}: {excerpt}")
        if len(self.crashes) > 40:
            print("fuzz: more than 40 crashes; stopping early", file=sys.stderr)
            self.stop.set()
            self.start_server()
            return
        self.start_server()
        for c in unique[:8]:
            send_raw(self.port, c.raw, timeout=10)
            # Alive once /healthz answers; a dying process stops answering while it writes its backtrace.
            deadline = time.time() + 20
            while time.time() < deadline and not self.server_dead():
                if send_raw(self.port, build_raw(self.port, "GET", "/healthz"), timeout=1).status == 200:
                    break
                time.sleep(0.2)
            if self.server_dead():
                crash["confirmed"].append((c.describe(), c.tags, self.describe_exit(), self.crash_excerpt()))
                self.suppressed.update(suppression_keys(c))
                self.start_server()
        self.running.set()

    # -- the run ----------------------------------------------------------------------------------------------

    def run(self):
        self.start_server()
        # Every GET route of the served OpenAPI document is fuzzed; the POST routes have their own generators.
        doc = send_raw(self.port, build_raw(self.port, "GET", "/openapi.json"), timeout=10).json()
        self.get_paths = [p for p, ops in doc["paths"].items() if "get" in ops]
        self.post_paths = [p for p, ops in doc["paths"].items() if "post" in ops]
        self.query_params = {p: [x["name"] for x in ops["get"].get("parameters", []) if isinstance(x, dict) and x.get("in") == "query"]
                             for p, ops in doc["paths"].items() if "get" in ops}
        threads = [threading.Thread(target=self.worker, args=(i,), daemon=True) for i in range(self.workers)]
        threads.append(threading.Thread(target=self.poller, daemon=True))
        mon = threading.Thread(target=self.monitor, daemon=True)
        mon.start()
        for t in threads:
            t.start()
        end = time.time() + self.seconds
        while time.time() < end and not self.stop.is_set():
            time.sleep(0.2)
        self.stop.set()
        self.running.set()
        for t in threads:
            t.join(30)
        mon.join(30)
        self.fuzz_seconds = time.time() - self.started

    # -- the summary ------------------------------------------------------------------------------------------

    def summary(self):
        by_route = collections.defaultdict(collections.Counter)
        for req in self.records:
            r = req.resp
            key = str(r.status) if r.status else ("stream" if r.streamed else "no answer")
            by_route[req.route][key] += 1
        total = len(self.records)
        print()
        print(f"fuzz-http: seed {self.seed}, {self.fuzz_seconds:.0f} s of fuzzing, {total} requests ({total / max(1, self.fuzz_seconds):.0f}/s), "
              f"{self.workers} workers + 1 poller, server started {len(self.server_logs)} time(s)")
        print(f"  {self.polls} playlist fetches linted ({self.lint_pairs} against the previous; {self.lint_gaps} gaps over 4 s not paired), {self.health_checks} health checks, "
              f"{getattr(self, 'acked_events', 0)} acknowledged events compared with the log, {getattr(self, 'n503', 0)} command 503s checked")
        print("requests by route and status:")
        for route in sorted(by_route):
            c = by_route[route]
            print(f"  {route:48s} " + "  ".join(f"{k}:{v}" for k, v in sorted(c.items())))
        if self.crashes:
            print(f"crashes: {len(self.crashes)}")
            for i, c in enumerate(self.crashes, 1):
                print(f"  #{i} at {c['at']:.1f} s, {c['exit']}: {c['log']}")
                if c["confirmed"]:
                    for desc, tags, ex, log in c["confirmed"]:
                        print(f"     reproduced alone ({ex}): {desc}")
                else:
                    print(f"     not reproduced alone; requests in flight ({len(c['candidates'])}):")
                    for d in c["candidates"][:4]:
                        print(f"       {d}")
        if self.findings:
            print(f"findings ({len(self.findings)} kinds; reported, not failing):")
            for title, (n, ex) in self.findings.items():
                print(f"  - {title} [{n}x]\n      e.g. {ex}")
        if self.violations:
            print("INVARIANT VIOLATIONS:")
            names = {1: "server alive, no 5xx", 2: "every 201 in the log once, byte for byte", 3: "every 503 wrote nothing",
                     4: "cueline verify passes", 5: "every rendition passes cueline lint (--previous)"}
            for (inv, title), (n, ex) in sorted(self.violations.items(), key=lambda kv: kv[0][0]):
                print(f"  [{inv}: {names[inv]}] {title} [{n}x]\n      e.g. {ex}")
            print(f"FAIL (seed {self.seed}; rerun with --seed {self.seed})")
            return 1
        print(f"PASS: invariants 1-5 and 7 hold (seed {self.seed}; {self.pipelines} kept-alive connections)")
        return 0


def suppression_keys(req):
    """What a crash's reproducer stops being sent for the rest of the run: the fields it made adversarial on its route
    (every bad value of a field that crashed the server once; the kind of request itself goes on being sent)."""
    keys = set()
    for tag in req.tags:
        if "=" in tag:
            keys.add(req.route + "|" + tag.split("=", 1)[0])
        elif tag.startswith(("sig:ts:", "hook:num:", "hook:reason:", "hook:uri:")):
            keys.add(req.route + "|" + ":".join(tag.split(":")[:2]))
        elif tag.startswith(("odd:", "enc:", "hdr:", "scte:mutated", "scte:random")):
            keys.add(req.route + "|" + tag)
    return keys


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", required=True, help="JSON written by scripts/fuzz/fuzz-http.sh")
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--workers", type=int, default=3, help="fuzzing workers (plus one poller); at most 4 requests in flight")
    a = p.parse_args()
    seed = a.seed if a.seed is not None else random.SystemRandom().randrange(1, 2**31)
    print(f"fuzz-http: seed {seed} (rerun with --seed {seed}), {a.seconds:.0f} s", flush=True)
    cfg = json.load(open(a.config))
    fz = Fuzzer(cfg, seed, a.seconds, min(4, max(1, a.workers)))
    try:
        fz.run()
        fz.check()
        code = fz.summary()
    finally:
        fz.stop.set()
        fz.stop_server()
    sys.exit(code)


if __name__ == "__main__":
    main()
