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
"""
import argparse
import base64
import collections
import hashlib
import hmac
import json
import os
import random
import re
import socket
import subprocess
import sys
import threading
import time

# ---------------------------------------------------------------------------------------------------------------
# HTTP over a raw socket: full control over the request line, headers and body (http.client refuses most of what a
# hostile client sends). One connection per request, `Connection: close`.


class Resp:
    __slots__ = ("status", "headers", "body", "error", "elapsed", "streamed")

    def __init__(self):
        self.status = None
        self.headers = {}
        self.body = b""
        self.error = None
        self.elapsed = 0.0
        self.streamed = False

    def json(self):
        try:
            return json.loads(self.body.decode("utf-8", "surrogatepass"))
        except Exception:
            return None


def _read_response(sock, deadline, stream_seconds):
    buf = b""
    r = Resp()
    while b"\r\n\r\n" not in buf:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("connection closed before the status line" if not buf else "connection closed in the headers")
        buf += chunk
        if len(buf) > 1 << 20:
            raise ConnectionError("headers larger than 1 MiB")
    head, rest = buf.split(b"\r\n\r\n", 1)
    lines = head.split(b"\r\n")
    parts = lines[0].split(b" ", 2)
    r.status = int(parts[1])
    for line in lines[1:]:
        if b":" in line:
            k, v = line.split(b":", 1)
            r.headers[k.strip().lower().decode("latin-1")] = v.strip().decode("latin-1")
    if r.headers.get("content-type", "").startswith("text/event-stream"):
        # A Server-Sent Events stream runs for minutes: read a little of it and go.
        end = min(deadline, time.monotonic() + stream_seconds)
        body = rest
        while time.monotonic() < end:
            sock.settimeout(max(0.01, end - time.monotonic()))
            try:
                chunk = sock.recv(65536)
            except socket.timeout:
                break
            if not chunk:
                break
            body += chunk
        r.body, r.streamed = body, True
        return r
    if r.status in (204, 304) or r.status < 200:
        return r
    if "content-length" in r.headers:
        n = int(r.headers["content-length"])
        body = rest
        while len(body) < n:
            sock.settimeout(max(0.01, deadline - time.monotonic()))
            chunk = sock.recv(min(1 << 20, n - len(body)))
            if not chunk:
                raise ConnectionError(f"connection closed after {len(body)} of {n} body bytes")
            body += chunk
        r.body = body[:n]
        return r
    data = rest
    while True:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        chunk = sock.recv(1 << 20)
        if not chunk:
            break
        data += chunk
    if "chunked" in r.headers.get("transfer-encoding", ""):
        out, i = b"", 0
        while True:
            j = data.find(b"\r\n", i)
            if j < 0:
                break
            size = int(data[i:j].split(b";")[0] or b"0", 16)
            if size == 0:
                break
            out += data[j + 2:j + 2 + size]
            i = j + 2 + size + 2
        data = out
    r.body = data
    return r


def send_raw(port, raw, timeout=10.0, stream_seconds=0.5, method=None):
    r = Resp()
    t0 = time.monotonic()
    deadline = t0 + timeout
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
            sock.sendall(raw)
            if method == "HEAD":
                rr = Resp()
                buf = b""
                while b"\r\n\r\n" not in buf:
                    sock.settimeout(max(0.01, deadline - time.monotonic()))
                    c = sock.recv(65536)
                    if not c:
                        break
                    buf += c
                if buf:
                    rr.status = int(buf.split(b" ", 2)[1])
                else:
                    rr.error = "connection closed without an answer"
                r = rr
            else:
                r = _read_response(sock, deadline, stream_seconds)
    except socket.timeout:
        r.error = f"no answer within {timeout:.0f} s"
    except (ConnectionError, OSError, ValueError, IndexError) as e:
        r.error = f"{type(e).__name__}: {e}"
    r.elapsed = time.monotonic() - t0
    return r


def build_raw(port, method, path, headers=(), body=None, content_length=True):
    """The bytes of one request. path and header values may be str or bytes (bytes are sent as they are)."""
    b = lambda x: x if isinstance(x, bytes) else x.encode("utf-8", "surrogatepass")
    out = b(method) + b" " + b(path) + b" HTTP/1.1\r\nHost: 127.0.0.1:" + str(port).encode() + b"\r\nConnection: close\r\n"
    for k, v in headers:
        out += b(k) + b": " + b(v) + b"\r\n"
    if body is not None and content_length:
        out += b"Content-Length: " + str(len(body)).encode() + b"\r\n"
    out += b"\r\n"
    if body is not None:
        out += body
    return out


# ---------------------------------------------------------------------------------------------------------------
# JSON with raw tokens: numbers JSON cannot express through json.dumps (1e309, -0, NaN) go in verbatim.


class Raw(str):
    pass


def enc(v, ascii_only=True):
    if isinstance(v, Raw):
        return str(v)
    if isinstance(v, dict):
        return "{" + ",".join(json.dumps(k, ensure_ascii=ascii_only) + ":" + enc(x, ascii_only) for k, x in v.items()) + "}"
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(enc(x, ascii_only) for x in v) + "]"
    return json.dumps(v, ensure_ascii=ascii_only)


def body_bytes(obj, rng):
    return enc(obj, ascii_only=rng.random() < 0.5).encode("utf-8", "surrogatepass")


# ---------------------------------------------------------------------------------------------------------------
# Adversarial values. Each is (tag, value, bad) where bad says the value is outside what the API documents, so a
# 4xx naming the field is the right answer.

NUMBERS = [
    ("num:1e300", Raw("1e300"), True), ("num:-1e300", Raw("-1e300"), True), ("num:-0", Raw("-0"), False),
    ("num:int64max", Raw("9223372036854775807"), True), ("num:int64max+1", Raw("9223372036854775808"), True),
    ("num:int64min", Raw("-9223372036854775808"), True), ("num:1e309", Raw("1e309"), True),
    ("num:str1e309", "1e309", True), ("num:NaN", Raw("NaN"), True), ("num:Infinity", Raw("Infinity"), True),
    ("num:neg", Raw("-5"), True), ("num:tiny", Raw("1e-320"), False), ("num:86400", Raw("86400"), None),
    ("num:86400.0001", Raw("86400.0001"), True), ("num:3600.5", Raw("3600.5"), None), ("num:9.2e15", Raw("9.3e15"), True),
    ("num:str", "30", True), ("num:null", None, True), ("num:true", True, True), ("num:list", [30], True),
    ("num:obj", {"s": 30}, True), ("num:0", Raw("0"), None), ("num:frac", Raw("0.0005"), None),
    ("num:manydigits", Raw("1." + "9" * 400), None), ("num:exp", Raw("3e1"), False),
]

STRINGS = [
    ("str:nul", "before\x00after"), ("str:tab", "a\tb"), ("str:esc", "\x1b[31mred\x1b[0m"), ("str:del", "a\x7fb"),
    ("str:crlf", "a\r\nb"), ("str:endlist", "x\n#EXT-X-ENDLIST"), ("str:quote", 'a"b'), ("str:backslash", "a\\b\\"),
    ("str:unicode", "ü日本🎬\u200f\u202e"), ("str:u2028", "a\u2028b"), ("str:bom", "\ufeffx"),
    ("str:surrogate", "x\ud800y"), ("str:100k", "x" * 100_000), ("str:5k", "y" * 5000),
    ("str:sql", "'); DROP TABLE cueline_events; --"), ("str:sql2", "$$ || pg_sleep(5) || $$"), ("str:empty", ""),
    ("str:space", " "), ("str:attr", '",X-EVIL="1'), ("str:percent", "%00%0a%s%n%x"), ("str:bell", "a\x07b"),
    ("str:c1", "a\u0085b\u009bc"),
]

URIS = [
    ("uri:ok", "https://ads.example.com/a.m3u8", False), ("uri:relative", "ad/a.m3u8", None),
    ("uri:js", "javascript:alert(1)", None), ("uri:leadspace", " https://ads.example.com/a.m3u8", True),
    ("uri:newline", "https://ads.example.com/a.m3u8\n#EXT-X-ENDLIST", True), ("uri:empty", "", True),
    ("uri:huge", "https://ads.example.com/" + "a" * 100_000, None), ("uri:space", "https://ads example.com/", True),
    ("uri:file", "file:///etc/passwd", None), ("uri:nul", "https://ads.example.com/a\x00.m3u8", True),
    ("uri:esc", "https://ads.example.com/\x1b[2J", True), ("uri:tab", "https://ads.example.com/\ta", True),
    ("uri:quote", 'https://ads.example.com/a".m3u8', True), ("uri:unicode", "https://ads.example.com/ü🎬.m3u8", None),
]

BAD_IDS = [
    ("id:upper", "BRK-1", True), ("id:65", "a" * 65, True), ("id:dots", "../x", True), ("id:space", "a b", True),
    ("id:empty", "", True), ("id:unicode", "brk-ü", True), ("id:nul", "brk\x00x", True), ("id:slash", "a/b", True),
    ("id:scte", "scte35-1", None), ("id:lead-dash", "-x", None), ("id:num", 42, True), ("id:crlf", "a\r\nb", True),
]


def now_ms():
    return int(time.time() * 1000)


def iso(ms, offset_minutes=0, frac=3, z=True):
    t = ms / 1000 + offset_minutes * 60
    base = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(int(t)))
    f = f"{int(ms % 1000):03d}".ljust(frac, "0")[:frac] if frac else ""
    s = base + ("." + f if frac else "")
    if offset_minutes == 0 and z:
        return s + "Z"
    sign = "+" if offset_minutes >= 0 else "-"
    return s + f"{sign}{abs(offset_minutes) // 60:02d}:{abs(offset_minutes) % 60:02d}"


def instants(rng):
    """(tag, value, bad) start instants, valid and not."""
    ahead = now_ms() + rng.randint(20, 200) * 1000
    return [
        ("t:ok", iso(ahead), False), ("t:offset", iso(ahead, offset_minutes=rng.choice([120, -300, 14 * 60, -(23 * 60 + 59)])), False),
        ("t:nanos", iso(ahead, frac=9), False), ("t:past", iso(now_ms() - 3600_000), None),
        ("t:year0", "0000-01-01T00:00:00.000Z", True), ("t:year1", "0001-01-01T00:00:00Z", True),
        ("t:year9999", "9999-12-31T23:59:59.999Z", True), ("t:year9999-2359", "9999-12-31T23:59:59.999-23:59", True),
        ("t:year10000", "10000-01-01T00:00:00.000Z", True), ("t:plus-year", "+10000-01-01T00:00:00Z", True),
        ("t:leap", "2026-12-31T23:59:60Z", True), ("t:feb30", "2027-02-30T10:00:00Z", True),
        ("t:nozone", iso(ahead)[:-1], True), ("t:lower", iso(ahead).lower(), None), ("t:offset99", iso(ahead)[:-1] + "+99:99", True),
        ("t:space", iso(ahead).replace("T", " "), None), ("t:empty", "", True), ("t:num", Raw(str(ahead)), True),
        ("t:year2100", "2100-01-01T00:00:00Z", True), ("t:garbage", "tomorrow", True),
    ]


# ---------------------------------------------------------------------------------------------------------------
# SCTE-35: a writer for splice_insert and time_signal sections, CRC-32/MPEG-2, and the standard's samples.

SCTE_SAMPLES = [
    "/DA0AAAAAAAA///wBQb+cr0AUAAeAhxDVUVJSAAAjn/PAAGlmbAICAAAAAAsoKGKNAIAmsnRfg==",
    "/DAvAAAAAAAA///wFAVIAACPf+/+c2nALv4AUsz1AAAAAAAKAAhDVUVJAAABNWLbowo=",
    "/DAvAAAAAAAA///wBQb+dGKQoAAZAhdDVUVJSAAAjn+fCAgAAAAALKChijUCAKnMZ1g=",
    "/DA4AAAAAAAA///wBQb+AAAAAAAiAiBDVUVJAAAAA3//AAApPWwDDEFCQ0QwMTIzNDU2SBAAAGgCL9A=",
    "/DAgAAAAAAAAAP/wDwUAAAABf//+AFJlwAABAAAAAMOOklg=",
]


def crc32_mpeg2(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte << 24
        for _ in range(8):
            crc = ((crc << 1) ^ 0x04C11DB7) & 0xFFFFFFFF if crc & 0x80000000 else (crc << 1) & 0xFFFFFFFF
    return crc


class Bits:
    def __init__(self):
        self.v, self.n = 0, 0

    def put(self, value, width):
        self.v = (self.v << width) | (value & ((1 << width) - 1))
        self.n += width

    def bytes(self):
        assert self.n % 8 == 0
        return self.v.to_bytes(self.n // 8, "big")


def section(command_type, command, descriptors=b""):
    """A splice_info_section around a splice command, with section_length and CRC right."""
    body = Bits()
    body.put(0, 8)          # protocol_version
    body.put(0, 1); body.put(0, 6); body.put(0, 33)  # encrypted, algorithm, pts_adjustment
    body.put(0, 8)          # cw_index
    body.put(0xFFF, 12)     # tier
    body.put(len(command), 12)
    body.put(command_type, 8)
    rest = body.bytes() + command + len(descriptors).to_bytes(2, "big") + descriptors
    length = len(rest) + 4
    head = bytes([0xFC, 0x30 | (length >> 8), length & 0xFF])
    data = head + rest
    return data + crc32_mpeg2(data).to_bytes(4, "big")


def splice_insert(event_id, out, duration_seconds=None, cancel=False):
    b = Bits()
    b.put(event_id, 32)
    b.put(1 if cancel else 0, 1); b.put(0x7F, 7)
    if not cancel:
        b.put(1 if out else 0, 1); b.put(1, 1); b.put(1 if duration_seconds is not None else 0, 1); b.put(1, 1); b.put(0xF, 4)
        if duration_seconds is not None:
            b.put(0, 1); b.put(0x3F, 6); b.put(int(duration_seconds * 90000), 33)
        b.put(1, 16); b.put(0, 8); b.put(0, 8)
    return section(5, b.bytes())


def fix_section(data):
    """Sets section_length and the CRC of a mutated section, so the field parsers see it."""
    if len(data) < 7:
        return data
    length = len(data) - 3
    d = bytearray(data)
    d[1] = (d[1] & 0xF0) | ((length >> 8) & 0x0F)
    d[2] = length & 0xFF
    body = bytes(d[:-4])
    return body + crc32_mpeg2(body).to_bytes(4, "big")


# ---------------------------------------------------------------------------------------------------------------


class Req:
    """One generated request and what the harness knows about it."""
    __slots__ = ("id", "method", "path", "headers", "body", "route", "tags", "bad", "bad_field", "kind", "channel",
                 "key", "marker", "token", "raw", "t0", "t1", "resp", "note", "expect_auth", "stream")

    def __init__(self, method, path, route, kind, headers=None, body=None, tags=None, token=None):
        self.id = 0
        self.method, self.path, self.route, self.kind = method, path, route, kind
        self.headers = list(headers or [])
        self.body = body
        self.tags = list(tags or [])
        self.bad = False
        self.bad_field = None
        self.channel = None
        self.key = None
        self.marker = None
        self.token = token
        self.raw = None
        self.t0 = self.t1 = 0.0
        self.resp = None
        self.note = None
        self.expect_auth = None
        self.stream = False

    def describe(self, limit=600):
        def short(x):
            if x is None:
                return ""
            if isinstance(x, bytes):
                x = x.decode("utf-8", "backslashreplace")
            x = x.encode("unicode_escape").decode("ascii")
            return x if len(x) <= limit else x[:limit] + f"…(+{len(x) - limit} chars)"
        hs = " ".join(f"-H {short(k)}:{short(v if k.lower() != 'authorization' else redact(v))}" for k, v in self.headers)
        return f"{self.method} {short(self.path)} {hs} {('body=' + short(self.body)) if self.body is not None else ''}".strip()


TOKEN_NAMES = {}


def redact(value):
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    for name, secret in TOKEN_NAMES.items():
        if secret and secret in value:
            return value.replace(secret, f"<{name} token>")
    return value if len(value) < 80 else value[:60] + "…"


class Fuzzer:
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

    # -- generators -------------------------------------------------------------------------------------------

    def marker(self, rng):
        return f"fz-{rng.getrandbits(48):012x}"

    def valid_place(self, rng, channel):
        body = {"command": "place_break", "id": f"b{rng.getrandbits(40):010x}", "duration": rng.choice([2, 4, 6, 10, 20])}
        start_kind = rng.random()
        if start_kind < 0.8:
            body["in"] = (rng.choice([0, 1, 2, 3, 5, 8, 12]) if rng.random() < 0.4 else rng.randint(60, 20000)) + round(rng.random(), 3)
        else:
            body["start"] = iso(now_ms() + rng.randint(3, 20000) * 1000, offset_minutes=rng.choice([0, 0, 60, -120]))
        a = rng.random()
        if a < 0.55:
            body["asset_uri"] = "https://ads.example.com/" + rng.choice(["a", "b", "pod"]) + ".m3u8"
        elif a < 0.75:
            body["asset_list"] = "https://ads.example.com/decide?slot=" + str(rng.randint(1, 99))
        else:
            body["pod"] = [{"uri": f"https://ads.example.com/p{i}.m3u8", "duration": rng.choice([2, 5, 10])} for i in range(rng.randint(1, 4))]
        if rng.random() < 0.3:
            body["restrict"] = rng.sample(["skip", "jump"], rng.randint(1, 2))
        if rng.random() < 0.2:
            body["snap"] = rng.sample(["out", "in"], rng.randint(1, 2))
        if rng.random() < 0.2:
            body["cue"] = rng.sample(["pre", "post", "once"], 1)
        if rng.random() < 0.2:
            body["attributes"] = {"X-COM-EXAMPLE-AD": f"v{rng.randint(1, 999)}"}
        return body

    def known_break(self, rng, channel):
        ids = self.breaks.get(channel) or []
        if ids and rng.random() < 0.85:
            return rng.choice(ids[-20:])
        return f"b{rng.getrandbits(40):010x}"

    def command_body(self, rng, channel):
        """A command body (dict), its tags, and the field made bad (None: meant to be valid, '': bad, field unknown)."""
        kind = rng.random()
        tags, bad_field, bad = [], None, False
        if kind < 0.5:
            body = self.valid_place(rng, channel)
            tags.append("place_break")
        elif kind < 0.68:
            body = {"command": "set_playout_limit", "id": self.known_break(rng, channel), "playout_limit": rng.choice([0, 1, 2.5, 4, 8, 30])}
            tags.append("set_playout_limit")
        elif kind < 0.85:
            body = {"command": "cancel_current_event"}
            tags.append("cancel_current_event")
        else:
            body = {"command": "cancel_break", "id": self.known_break(rng, channel)}
            tags.append("cancel_break")
        if rng.random() < 0.45:
            # One mutation at a time, so the answer can be judged against it.
            field, tag, isbad = self.mutate(rng, body)
            tags.append(tag)
            if isbad:
                bad, bad_field = True, field
        return body, tags, bad, bad_field

    def mutate(self, rng, body):
        """Corrupts one field of a command body in place; returns (field, tag, bad)."""
        cmd = body.get("command")
        r = rng.random()
        numeric = [f for f in ("in", "duration", "playout_limit") if f in body]
        if r < 0.28 and (numeric or cmd == "place_break"):
            field = rng.choice(numeric or ["in"])
            tag, value, bad = rng.choice(NUMBERS)
            if field == "in" and "start" in body:
                del body["start"]
            body[field] = value
            if bad is None:  # a bound: bad only where the field's bound is lower
                bad = (field == "duration" and tag in ("num:86400", "num:3600.5", "num:0")) or (tag == "num:86400" and False)
            return field, f"{field}={tag}", bad
        if r < 0.40 and cmd == "place_break":
            tag, value, bad = rng.choice(instants(rng))
            body.pop("in", None)
            body["start"] = value
            return "start", f"start={tag}", bad
        if r < 0.55 and cmd == "place_break":
            field = rng.choice(["asset_uri", "asset_list", "pod"])
            for f in ("asset_uri", "asset_list", "pod"):
                body.pop(f, None)
            tag, value, bad = rng.choice(URIS)
            if field == "pod":
                body["pod"] = [{"uri": value, "duration": 5}]
            else:
                body[field] = value
            return field, f"{field}={tag}", bad
        if r < 0.70:
            field = rng.choice(["reason", "actor", "reason", "attributes"] + (["id"] if "id" in body else []))
            tag, value = rng.choice(STRINGS + STRINGS[:6])
            if field == "attributes":
                if rng.random() < 0.5:
                    body["attributes"] = {"X-COM-EXAMPLE-AD": value}
                else:
                    body["attributes"] = {value or "x": "v"}
                # Control characters, quotes and empty names cannot be written into a DATERANGE attribute.
                return field, f"{field}={tag}", None
            body[field] = value
            if field == "id":
                return field, f"id={tag}", True
            return field, f"{field}={tag}", None
        if r < 0.78 and "id" in body:
            tag, value, bad = rng.choice(BAD_IDS)
            body["id"] = value
            return "id", f"id={tag}", bad
        if r < 0.86:
            # wrong JSON types for list / enum fields
            field = rng.choice(["restrict", "snap", "cue", "command", "pod", "attributes"])
            value = rng.choice([Raw("42"), "skip", ["SKIP", "nope"], {"a": 1}, [None], Raw("null"), [["skip"]], "PLACE_BREAK", ""])
            body[field] = value
            if cmd != "place_break" and field != "command":
                return field, f"{field}=wrongtype-unused", None
            if value is None or value == Raw("null"):
                return field, f"{field}=null", None if field in ("restrict", "snap", "cue", "attributes", "pod") else True
            return field, f"{field}=wrongtype", True
        if r < 0.93:
            required = {"place_break": ["duration", "in", "asset_uri", "asset_list", "pod", "start"],
                        "set_playout_limit": ["id", "playout_limit"], "cancel_break": ["id"]}.get(cmd, ["command"])
            field = rng.choice(required)
            present = [f for f in required if f in body]
            if field not in body and present:
                field = rng.choice(present)
            body.pop(field, None)
            if cmd == "place_break" and field in ("in", "start"):
                return "start", "missing:start", True
            if cmd == "place_break" and field in ("asset_uri", "asset_list", "pod"):
                return "asset_uri", "missing:asset", True
            return field, f"missing:{field}", True
        body[rng.choice(["extra", "IN", "Duration", "playoutLimit", "__proto__"])] = rng.choice([1, "x", None])
        return None, "extra-field", None

    def gen_command(self, rng):
        channel = rng.choice(list(self.channels) + (["nope-channel", "UPPER", "a" * 70] if rng.random() < 0.05 else []))
        body, tags, bad, bad_field = self.command_body(rng, channel)
        who = self.pick_token(rng, channel)
        marker = self.marker(rng)
        if "reason" not in body and rng.random() < 0.9:
            body["reason"] = marker
        headers = [("Content-Type", "application/json")] + self.auth_header(who)
        key = None
        r = rng.random()
        if r < 0.55:
            key = f"k-{rng.getrandbits(64):016x}"
        elif r < 0.62:
            tag, value = rng.choice(STRINGS[:14])
            key = value
            tags.append(f"key={tag}")
        elif r < 0.66:
            key = "k" * rng.choice([200, 201, 5000])
            tags.append("key=long")
        if key is not None:
            headers.append(("Idempotency-Key", key))
        if rng.random() < 0.25:
            v = rng.choice([str(self.versions.get(channel, 1)), str(self.versions.get(channel, 1) - 1), f'"{self.versions.get(channel, 1)}"',
                            f'W/"{self.versions.get(channel, 1)}"', "abc", "-1", "99999999999999999999", "*", "", "1 2"])
            headers.append(("If-Match", v))
            tags.append("if-match")
        raw = body_bytes(body, rng)
        req = Req("POST", f"/channels/{channel}/commands", "POST /channels/{channel}/commands", "command", headers, raw, tags, who)
        req.channel, req.key, req.marker = channel, key, marker
        req.bad, req.bad_field = bad, bad_field
        req.expect_auth = self.expect_command_auth(who, channel, body.get("command") if isinstance(body.get("command"), str) else None)
        return req

    def expect_command_auth(self, who, channel, command):
        if who in ("none", "invalid", "revoked", "basic", "bearer-empty", "huge"):
            return "401"
        if who == "viewer":
            return "403"
        if command in ("place_break", "set_playout_limit", "cancel_current_event", "cancel_break") and channel in self.channels:
            return None if self.may_command(who, channel, command) else "403"
        return None

    def gen_broken_body(self, rng):
        """Bodies that are not a command at all: truncated, nested, wrong top-level type, not UTF-8, huge."""
        channel = rng.choice(list(self.channels))
        valid = body_bytes(self.valid_place(rng, channel), rng)
        choices = [
            ("truncated", valid[: rng.randint(0, len(valid) - 1)]),
            ("deep-array", b"[" * 100000 + b"]" * 100000),
            ("deep-object", b'{"command":' * 20000 + b'"x"' + b"}" * 20000),
            ("deep-pod", b'{"command":"place_break","in":5,"duration":5,"pod":' + b"[" * 5000 + b"]" * 5000 + b"}"),
            ("toplevel-array", b'[{"command":"cancel_current_event"}]'),
            ("toplevel-string", b'"cancel_current_event"'), ("empty", b""), ("null", b"null"),
            ("not-utf8", b'{"command":"place_break","reason":"\xff\xfe\xc3\x28","in":5,"duration":5,"asset_uri":"https://a.example/a.m3u8"}'),
            ("utf16", '{"command":"cancel_current_event"}'.encode("utf-16")),
            ("bom", b"\xef\xbb\xbf" + b'{"command":"cancel_current_event"}'),
            ("trailing", valid + b"garbage"), ("two-objects", valid + valid),
            ("dup-keys", b'{"command":"cancel_break","command":"place_break","in":5,"duration":5,"asset_uri":"https://a.example/a.m3u8"}'),
            ("huge-body", b'{"command":"cancel_current_event","reason":"' + b"x" * 200_000 + b'"}'),
            ("comments", b'{"command":"cancel_current_event" /* hi */}'),
            ("single-quotes", b"{'command':'cancel_current_event'}"),
            ("lone-surrogate", b'{"command":"cancel_current_event","reason":"\\udc00"}'),
            ("nul-raw", b'{"command":"cancel_current_event","reason":"a\x00b"}'),
        ]
        tag, body = rng.choice(choices)
        who = rng.choice(["operator", "operator", "viewer", "none"])
        headers = [("Content-Type", rng.choice(["application/json", "text/plain", "application/x-www-form-urlencoded"]))] + self.auth_header(who)
        path = rng.choice([f"/channels/{channel}/commands", f"/channels/{channel}/scte35"])
        route = "POST /channels/{channel}/commands" if path.endswith("commands") else "POST /channels/{channel}/scte35"
        req = Req("POST", path, route, "command" if path.endswith("commands") else "scte35", headers, body, [f"body={tag}"], who)
        req.channel = channel
        # Broken bodies that still decode (duplicate keys, a BOM) may be valid; the rest must be 4xx. A body sent as
        # anything but application/json is refused naming Content-Type, whatever it holds.
        req.bad = tag not in ("dup-keys", "bom", "lone-surrogate", "nul-raw", "utf16", "toplevel-array", "two-objects", "trailing")
        req.bad_field = "body" if req.bad else None
        if headers[0][1] != "application/json":
            req.bad, req.bad_field = True, "Content-Type"
        if who == "none":
            req.expect_auth = "401"
        return req

    def gen_scte35(self, rng):
        channel = rng.choice(list(self.channels))
        tags, bad, bad_field = [], False, None
        r = rng.random()
        self.next_event_id += 1
        eid = self.next_event_id
        if r < 0.3:
            data = splice_insert(eid, True, rng.choice([None, 4, 8, 15]))
            tags.append("scte:out")
            with self.lock:
                self.scte_sent.append((time.time(), channel, data, eid))
        elif r < 0.42 and self.scte_sent:
            with self.lock:
                _, ch, out_bytes, old = rng.choice(self.scte_sent[-30:])
            channel = ch
            kind = rng.random()
            if kind < 0.4:
                data = splice_insert(old, False)
                tags.append("scte:in")
            elif kind < 0.6:
                data = splice_insert(old, False, cancel=True)
                tags.append("scte:cancel")
            else:
                data = out_bytes
                tags.append("scte:resend")
        elif r < 0.55:
            data = base64.b64decode(rng.choice(SCTE_SAMPLES))
            tags.append("scte:sample")
        elif r < 0.85:
            base = bytearray(base64.b64decode(rng.choice(SCTE_SAMPLES)) if rng.random() < 0.6 else splice_insert(eid, rng.random() < 0.7, rng.choice([None, 5, 1e6])))
            for _ in range(rng.randint(1, 6)):
                op = rng.random()
                i = rng.randrange(len(base))
                if op < 0.5:
                    base[i] ^= 1 << rng.randrange(8)
                elif op < 0.65:
                    base[i] = rng.choice([0, 0xFF, 0x7F, 0x80])
                elif op < 0.8 and len(base) > 4:
                    del base[i]
                else:
                    base[i:i] = bytes([rng.randrange(256)])
            data = bytes(base)
            if rng.random() < 0.7:
                data = fix_section(data)
                tags.append("scte:mutated-fixed")
            else:
                tags.append("scte:mutated")
                bad = crc32_mpeg2(data) != 0  # a mutation that kept the CRC right is not bad input
        else:
            data = bytes(rng.randrange(256) for _ in range(rng.randint(0, 300)))
            tags.append("scte:random")
            bad = True
        e = rng.random()
        if e < 0.5:
            text = base64.b64encode(data).decode()
        elif e < 0.75:
            text = data.hex()
        elif e < 0.82:
            text = "0x" + data.hex().upper()
        elif e < 0.87:
            text = base64.urlsafe_b64encode(data).decode()
            tags.append("enc:base64url")
        elif e < 0.92:
            text = " ".join(data.hex()[i:i + 8] for i in range(0, len(data.hex()), 8))
            tags.append("enc:spaced-hex")
        elif e < 0.96:
            text = base64.b64encode(data).decode().rstrip("=")
            tags.append("enc:unpadded")
        else:
            text = rng.choice(["", "0x", "====", "zz", "AAAA", "0x" + "00" * 5000, "\x00", "0x" + data.hex() + "\x00"])
            tags.append("enc:junk")
            bad = True
        if bad:
            bad_field = "section"
        body = {"section": text}
        a = rng.random()
        if a < 0.6:
            body["asset_uri"] = "https://ads.example.com/scte.m3u8"
        elif a < 0.85:
            body["asset_list"] = "https://ads.example.com/decide"
        elif a < 0.93:
            t, v, _ = rng.choice(URIS)
            body["asset_uri"] = v
            tags.append(f"asset_uri={t}")
        if rng.random() < 0.3:
            t, v, isbad = rng.choice(NUMBERS)
            body["duration"] = v
            tags.append(f"duration={t}")
        elif rng.random() < 0.3:
            body["duration"] = rng.choice([5, 10, 30])
        marker = self.marker(rng)
        body["reason"] = marker
        if rng.random() < 0.1:
            t, v = rng.choice(STRINGS)
            body["reason"] = v
            tags.append(f"reason={t}")
        who = self.pick_token(rng, channel)
        headers = [("Content-Type", "application/json")] + self.auth_header(who)
        key = None
        if rng.random() < 0.3:
            key = f"s-{rng.getrandbits(64):016x}"
            headers.append(("Idempotency-Key", key))
        req = Req("POST", f"/channels/{channel}/scte35", "POST /channels/{channel}/scte35", "scte35", headers, body_bytes(body, rng), tags, who)
        req.channel, req.marker = channel, body["reason"] if body["reason"] == marker else None
        req.key = key or "scte35:%s:%s" % (channel, hashlib.sha256(data).hexdigest())
        req.bad, req.bad_field = bad, bad_field
        if who in ("none", "invalid", "revoked", "basic", "bearer-empty", "huge"):
            req.expect_auth = "401"
        elif who == "viewer":
            req.expect_auth = "403-or-4xx"
        elif who in ("automation", "automation2") and not self.may_read(who, channel):
            req.expect_auth = "403-or-4xx"
        return req

    def gen_hook(self, rng):
        name = rng.choice(list(self.hooks) + (["nope"] if rng.random() < 0.05 else []))
        secret = self.hooks.get(name, "x" * 32)
        tags = []
        r = rng.random()
        marker = self.marker(rng)
        if r < 0.25:
            payload = {"event": "goal", "reason": marker}
            tags.append("hook:goal")
        elif r < 0.55:
            payload = {"event": "timeout", "team": "home", "break": f"h{rng.getrandbits(32):08x}", "seconds": rng.choice([3, 5, 10]), "reason": marker}
            tags.append("hook:timeout")
        elif r < 0.85:
            payload = {"event": "custom", "break": f"h{rng.getrandbits(32):08x}", "in": rng.choice([1, 5, 20]), "seconds": 5,
                       "uri": "https://ads.example.com/h.m3u8", "reason": marker}
            t = rng.random()
            if t < 0.3:
                tag, v, _ = rng.choice(NUMBERS)
                payload[rng.choice(["in", "seconds"])] = v
                tags.append(f"hook:num:{tag}")
            elif t < 0.55:
                tag, v = rng.choice(STRINGS)
                payload["reason"] = v
                tags.append(f"hook:reason:{tag}")
            elif t < 0.75:
                tag, v, _ = rng.choice(URIS)
                payload["uri"] = v
                tags.append(f"hook:uri:{tag}")
            elif t < 0.85:
                del payload[rng.choice(["in", "seconds", "uri", "break"])]
                tags.append("hook:missing")
            else:
                tags.append("hook:custom")
        else:
            payload = rng.choice([{"event": "unknown"}, {"event": {"nested": True}}, [1, 2], "x", {"event": "limit", "break": "x", "limit": Raw("1e300")}])
            tags.append("hook:other")
        body = body_bytes(payload, rng)
        now = int(time.time())
        s = rng.random()
        ts = str(now)
        sign = True
        if s < 0.55:
            tags.append("sig:good")
        elif s < 0.62:
            ts = str(now - 100000)
            tags.append("sig:expired")
        elif s < 0.66:
            ts = str(now + 100000)
            tags.append("sig:future")
        elif s < 0.70:
            ts = rng.choice(["9223372036854775807", "-9223372036854775808", "9223372036854775", "99999999999999999999", "1e10", " 1", "", "0x10"])
            tags.append(f"sig:ts:{ts or 'empty'}")
        elif s < 0.76:
            sign = False
            tags.append("sig:none")
        elif s < 0.82:
            secret = "another-secret-of-enough-length"
            tags.append("sig:wrong-secret")
        elif s < 0.86:
            tags.append("sig:tampered")
        elif s < 1.0 and self.hook_deliveries:
            with self.lock:
                d = rng.choice(self.hook_deliveries[-20:])
            name, ts, body, sig = d
            tags.append("sig:replay")
            headers = [("Content-Type", "application/json"), ("X-Cueline-Timestamp", ts), ("X-Cueline-Signature", sig)]
            if rng.random() < 0.5:
                headers.append(("Idempotency-Key", f"hk-{rng.getrandbits(48):x}"))
                tags.append("replay:new-key")
            req = Req("POST", f"/hooks/{name}", "POST /hooks/{name}", "hook", headers, body, tags)
            req.marker = None
            req.key = None
            req.note = (name, ts, body, sig)
            return req
        headers = [("Content-Type", "application/json")]
        sig = None
        if sign:
            mac = hmac.new(secret.encode(), ts.encode() + b"." + body, hashlib.sha256).hexdigest()
            sig = "sha256=" + (mac if rng.random() > 0.05 else mac.upper())
            headers += [("X-Cueline-Timestamp", ts), ("X-Cueline-Signature", sig)]
        if "sig:tampered" in tags:
            body = body.replace(b"5", b"6", 1) if b"5" in body else body + b" "
        key = None
        if rng.random() < 0.2:
            key = f"hk-{rng.getrandbits(48):x}"
            headers.append(("Idempotency-Key", key))
        req = Req("POST", f"/hooks/{name}", "POST /hooks/{name}", "hook", headers, body, tags)
        req.marker = marker
        req.key = None
        req.note = (name, ts, body, sig)
        if "sig:good" in tags and name in self.hooks:
            with self.lock:
                self.hook_deliveries.append((name, ts, body, sig))
        return req

    QUERY_VALUES = ["YES", "v2", "9223372036854775807", "-9223372036854775808", "1e300", "1e309", "NaN", "-0", "-1", "0", "1", "abc", "",
                    "%00", "%0d%0aX-Injected:%201", "9.3e15", "99999999999999999999", "0.5", "1000000", "../../etc/passwd",
                    "0000-01-01T00:00:00Z", "9999-12-31T23:59:59.999-23:59", "10000-01-01T00:00:00Z", "2026-11-23T10:00:00Z",
                    "%F0%9F%8E%AC", "%ff%fe", "a" * 5000, "csv", "json", "xml", "720p", "360p", "nope"]
    QUERY_NAMES = ["_HLS_start_offset", "_HLS_primary_id", "after", "limit", "at", "from", "to", "format", "rendition",
                   "multivariant", "stream", "_HLS_msn", "_HLS_part", "_HLS_skip", "x"]

    def gen_get(self, rng):
        template = rng.choice(self.get_paths)
        channel = rng.choice(list(self.channels) + (["nope", "UPPER", "..", "%2e%2e", "a" * 300] if rng.random() < 0.1 else []))
        path = template.replace("{channel}", channel)
        if "{rendition}" in path:
            path = path.replace("{rendition}", rng.choice(self.channels.get(channel, ["720p"]) + ["nope", "..%2f..%2fetc%2fpasswd", "master"]))
        if "{id}" in path:
            path = path.replace("{id}", self.known_break(rng, channel) if channel in self.channels else "x")
        if "{name}" in path:
            path = path.replace("{name}", rng.choice(list(self.hooks) + ["nope"]))
        path = re.sub(r"\{[^}]+\}", "x", path)
        tags = []
        q = []
        documented = self.query_params.get(template, [])
        for _ in range(rng.choice([0, 1, 1, 2, 3])):
            # Mostly the route's own documented parameters, sometimes any.
            n = rng.choice(documented) if documented and rng.random() < 0.75 else rng.choice(self.QUERY_NAMES)
            v = rng.choice(self.QUERY_VALUES)
            if n in ("at", "from", "to") and rng.random() < 0.5:
                v = iso(now_ms() - rng.randint(0, 30) * 1000)
            q.append(f"{n}={v}")
            tags.append(f"q:{n}={v[:24]}")
        if q:
            path += "?" + "&".join(q)
        who = rng.choice(["operator", "viewer", "automation", "automation2", "none", "invalid", "revoked"])
        headers = self.auth_header(who)
        stream = False
        if template.endswith("/events") and rng.random() < 0.1:
            headers.append(("Accept", "text/event-stream"))
            if rng.random() < 0.5:
                headers.append(("Last-Event-ID", rng.choice(["1", "-1", "abc", "9223372036854775807", ""])))
            stream = True
            tags.append("sse")
        method = "GET" if rng.random() < 0.92 else "HEAD"
        req = Req(method, path, f"{'GET' if method == 'GET' else 'HEAD'} {template}", "read", headers, None, tags, who)
        req.channel = channel
        req.stream = stream
        needs_token = any(template.endswith(s) for s in ("/schedule", "/events", "/replay", "/as-run", "/refusals")) or template == "/channels"
        if needs_token and channel in self.channels and method == "GET":
            if who in ("none", "invalid", "revoked"):
                req.expect_auth = "401"
            elif template != "/channels" and not self.may_read(who, channel):
                req.expect_auth = "403"
        return req

    def gen_odd(self, rng):
        channel = rng.choice(list(self.channels))
        rend = self.channels[channel][0]
        paths = [
            f"//channels/{channel}/{rend}.m3u8", f"/channels//{channel}/{rend}.m3u8", f"/channels/{channel}/../{channel}/{rend}.m3u8",
            f"/channels/{channel}/%2e%2e/%2e%2e/etc/passwd", f"/channels/{channel}/{rend}.m3u8%00", f"/channels/{channel}%00/master.m3u8",
            "/" + "a" * 9000, f"/channels/{channel}/" + "b" * 70000 + ".m3u8", "/media//x", "/media/../../etc/passwd", "/media/%2e%2e/x",
            "/media/outside-link", "/media/inside.txt", "/media//inside.txt", "*", "http://evil.example/", "/channels?x=" + "%" * 10,
            f"/channels/{channel}/breaks/../../../healthz", f"/channels/{channel}/commands/", f"/hooks/", "/hooks//feed", "/openapi.json/..",
            "/healthz?" + "&".join(f"a{i}=b" for i in range(2000)), f"/channels/{channel}/master.m3u8#frag", "/\u00e9", "/%ff",
            # The operator console's static files and session (not in openapi.json).
            "/console", "/console/", "/console/session", "/console/console.js", "/console/../../etc/passwd", "/console/%2e%2e/%2e%2e/x",
            "/console/" + "c" * 5000 + ".js", "/console/console.js%00", "/console//console.js",
        ]
        if rng.random() < 0.25:
            paths = [p.replace("{channel}", channel).replace("{name}", "feed") for p in self.post_paths]
        path = rng.choice(paths)
        methods = ["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "CONNECT", "PROPFIND", "get", "G\x00T", "HEAD"]
        method = rng.choice(methods) if rng.random() < 0.5 else "GET"
        who = rng.choice(["operator", "viewer", "none"])
        headers = self.auth_header(who)
        extra = rng.random()
        tags = [f"odd:{path[:40]}", f"method:{method}"]
        body = None
        if method in ("POST", "PUT", "PATCH") or rng.random() < 0.1:
            body = b'{"command":"cancel_current_event"}'
        if extra < 0.1:
            headers.append(("X-Long", "v" * 70000))
            tags.append("hdr:70k")
        elif extra < 0.15:
            headers += [(f"X-H{i}", "v") for i in range(500)]
            tags.append("hdr:500")
        elif extra < 0.2:
            headers.append(("Content-Length", "-1"))
            tags.append("hdr:cl-neg")
        req = Req(method, path, "odd path/method", "odd", headers, body, tags, who)
        req.channel = channel
        return req

    # -- kept-alive connections ------------------------------------------------------------------------------

    def gen_pipeline(self, rng):
        """One kept-alive connection as a player keeps it (the server reads such requests on raw bytes until one it does
        not take, then hands the connection to its HTTP codec): 2-7 requests, media playlist GETs and HEADs (plain, with
        an Origin, with odd but valid header values, with delivery directives) mixed with the multivariant playlist,
        /healthz and heads the raw path must leave to the codec, all sent at once but in random chunks with pauses.
        Invariant 7: exactly one answer per request, in order, each of the kind asked for."""
        with self.lock:
            channel = rng.choice(list(self.channels))
            rend = rng.choice(self.channels[channel])
            deaths = len(self.deaths)
        playlist = f"/channels/{channel}/{rend}.m3u8"
        reqs = []
        for _ in range(rng.randint(2, 7)):
            k = rng.random()
            if k < 0.35:
                reqs.append(("GET", playlist, [("Origin", "https://player.example")] if rng.random() < 0.3 else [], "media"))
            elif k < 0.45:
                reqs.append(("HEAD", playlist, [], "head"))
            elif k < 0.55:
                reqs.append(("GET", playlist, [("X-Odd", "a\tb  "), ("connection", "Keep-Alive"), ("ORIGIN", "x")], "media"))
            elif k < 0.62:
                reqs.append(("GET", playlist + rng.choice(["?_HLS_msn=1", "?_HLS_skip=YES", "?_HLS_msn=x", "?a=b", "?"]), [], "any"))
            elif k < 0.72:
                reqs.append(("GET", f"/channels/{channel}/master.m3u8", [], "master"))
            elif k < 0.82:
                reqs.append(("GET", "/healthz", [], "health"))
            else:
                # Heads the raw path leaves to the codec, which answers them and keeps the connection (a request with an
                # empty or chunked body, llhttp's Proxy-Connection).
                odd = rng.choice([[("Content-Length", "0")], [("Transfer-Encoding", "chunked")], [("Proxy-Connection", "keep-alive")]])
                reqs.append(("GET", playlist, odd, "media-chunked" if odd[0][0] == "Transfer-Encoding" else "media"))
        data = b""
        for method, path, headers, kind in reqs:
            data += f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n".encode()
            for name, value in headers:
                data += name.encode("utf-8") + b": " + value.encode("utf-8") + b"\r\n"
            data += b"\r\n" + (b"0\r\n\r\n" if kind == "media-chunked" else b"")
        example = data.decode("utf-8", "replace")[:800]
        answers, error = [], None
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=10) as sock:
                at = 0
                while at < len(data):
                    step = rng.choice([1, 3, 17, 64, len(data)])
                    sock.sendall(data[at:at + step])
                    at += step
                    if rng.random() < 0.3:
                        time.sleep(rng.random() * 0.005)
                buf, deadline = b"", time.monotonic() + 10
                while len(answers) < len(reqs) and error is None:
                    while b"\r\n\r\n" not in buf:
                        sock.settimeout(max(0.01, deadline - time.monotonic()))
                        chunk = sock.recv(65536)
                        if not chunk:
                            error = f"closed after {len(answers)} of {len(reqs)} answers"
                            break
                        buf += chunk
                    if error:
                        break
                    head, buf = buf.split(b"\r\n\r\n", 1)
                    lines = head.split(b"\r\n")
                    status = int(lines[0].split(b" ", 2)[1])
                    fields = {l.split(b":", 1)[0].strip().lower(): l.split(b":", 1)[1].strip() for l in lines[1:] if b":" in l}
                    n = 0 if reqs[len(answers)][0] == "HEAD" or status in (204, 304) else int(fields.get(b"content-length", b"0"))
                    while len(buf) < n:
                        sock.settimeout(max(0.01, deadline - time.monotonic()))
                        chunk = sock.recv(65536)
                        if not chunk:
                            error = "closed in a body"
                            break
                        buf += chunk
                    answers.append((status, buf[:n], fields))
                    buf = buf[n:]
                if error is None:
                    # Nothing more: one answer per request.
                    sock.settimeout(0.2)
                    try:
                        extra = sock.recv(65536)
                    except socket.timeout:
                        extra = b""
                    if extra:
                        error = f"{len(extra)} bytes after the last answer: {extra[:120]!r}"
        except (OSError, ValueError, IndexError) as e:
            error = f"{type(e).__name__}: {e}"
        with self.lock:
            self.pipelines += 1
        if error is None:
            for (method, path, headers, kind), (status, body, fields) in zip(reqs, answers):
                ok = {
                    "media": status == 200 and body.startswith(b"#EXTM3U") and b"#EXT-X-TARGETDURATION" in body,
                    "media-chunked": status in (200, 400) and (status != 200 or b"#EXT-X-TARGETDURATION" in body),
                    # A HEAD answer has the GET's headers (its length) and no body: a body would be read as the next answer.
                    "head": status == 200 and int(fields.get(b"content-length", b"0")) > 0,
                    "master": status == 200 and b"#EXT-X-STREAM-INF" in body,
                    "health": status == 200 and b"#EXTM3U" not in body,
                    "any": status in (200, 400, 417) and (status != 200 or b"#EXT-X-TARGETDURATION" in body),
                }[kind]
                if not ok:
                    error = f"{method} {path} ({kind}) answered {status}: {body[:100]!r}"
                    break
        # Not the server's doing: it died or was restarted meanwhile (invariant 1 reports that), or the channel was
        # retired or replaced while the connection was open.
        with self.lock:
            unchanged = len(self.deaths) == deaths and channel in self.channels
        if error and unchanged and self.running.is_set() and not self.server_dead():
            self.violation(7, "a kept-alive connection's requests not answered once each, in order", f"{error}\n{example}")

    # -- racers and retries -----------------------------------------------------------------------------------

    def gen_race(self, rng):
        """Two requests sent at the same moment: same key same body, same key different body, or competing commands."""
        channel = rng.choice(list(self.channels))
        kind = rng.choice(["same-key-same-body", "same-key-diff-body", "cancel-current", "limit", "cross-channel-key"])
        who = "operator"
        reqs = []
        key = f"race-{rng.getrandbits(48):x}"
        if kind in ("same-key-same-body", "same-key-diff-body"):
            b1 = self.valid_place(rng, channel)
            b1["reason"] = self.marker(rng)
            b2 = dict(b1) if kind == "same-key-same-body" else dict(self.valid_place(rng, channel), reason=b1["reason"] + "-2")
            bodies, keys, chans = [b1, b2], [key, key], [channel, channel]
        elif kind == "cancel-current":
            bodies = [{"command": "cancel_current_event", "reason": self.marker(rng)} for _ in range(2)]
            keys, chans = [None, None], [channel, channel]
        elif kind == "limit":
            bid = self.known_break(rng, channel)
            bodies = [{"command": "set_playout_limit", "id": bid, "playout_limit": rng.choice([1, 2, 3]), "reason": self.marker(rng)} for _ in range(2)]
            keys, chans = [f"{key}-a", f"{key}-b"], [channel, channel]
        else:
            # One channel's token must not block another channel's command with the same key (issue 11, defect 13).
            other = [c for c in list(self.channels) if c != self.auto_channel][0]
            b1 = self.valid_place(rng, other)
            b2 = self.valid_place(rng, self.auto_channel)
            b1["reason"], b2["reason"] = self.marker(rng), self.marker(rng)
            bodies, keys, chans = [b1, b2], [key, key], [other, self.auto_channel]
        for i, (b, k, c) in enumerate(zip(bodies, keys, chans)):
            tok = "automation" if kind == "cross-channel-key" and i == 1 else who
            headers = [("Content-Type", "application/json")] + self.auth_header(tok)
            if k:
                headers.append(("Idempotency-Key", k))
            req = Req("POST", f"/channels/{c}/commands", "POST /channels/{channel}/commands", "command", headers, body_bytes(b, rng), [f"race:{kind}", b["command"]], tok)
            req.channel, req.key, req.marker = c, k, b.get("reason")
            reqs.append(req)
        threads = [threading.Thread(target=self.send, args=(r,)) for r in reqs]
        if kind == "cross-channel-key":
            self.send(reqs[0])
            threads = threads[1:]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for r in reqs:
            self.after(r)
        if kind == "cross-channel-key" and reqs[0].resp.status == 201 and reqs[1].resp.status == 409:
            self.finding("Idempotency-Keys are global: a key used on one channel by one token makes another channel's command 409 (issue 11, defect 13)",
                         f"{reqs[0].describe(200)} → 201, then {reqs[1].describe(200)} → 409 {short_body(reqs[1].resp)}")

    def gen_retry(self, rng):
        with self.lock:
            if not self.sent_keys:
                return None
            channel, who, key, body = rng.choice(self.sent_keys[-50:])
        same = rng.random() < 0.7
        if not same:
            try:
                obj = json.loads(body)
                obj["reason"] = (obj.get("reason") or "") + "-changed" if isinstance(obj, dict) else obj
                body = json.dumps(obj).encode()
            except Exception:
                body = body + b" "
        headers = [("Content-Type", "application/json"), ("Idempotency-Key", key)] + self.auth_header(who)
        req = Req("POST", f"/channels/{channel}/commands", "POST /channels/{channel}/commands", "command", headers, body,
                  ["retry:same" if same else "retry:different"], who)
        req.channel, req.key = channel, key
        return req

    # -- checks on each answer --------------------------------------------------------------------------------

    def after(self, req):
        try:
            self.judge(req)
        finally:
            self.trim(req)

    @staticmethod
    def trim(req):
        """Keeps what the checks after the run need (a 201's events in full), not 100 KB bodies for a long run."""
        if req.resp.error:
            return  # a crash candidate: its bytes are replayed
        req.raw = None
        if req.body is not None and len(req.body) > 4096:
            req.body = req.body[:4096]
        if req.resp.status != 201 and len(req.resp.body) > 4096:
            req.resp.body = req.resp.body[:4096]

    def judge(self, req):
        r = req.resp
        if r.error:
            with self.lock:
                self.errors.append(req)
            return
        st = r.status
        if st >= 500 and st != 503:
            self.violation(1, f"a {st} answer", f"{req.describe()} → {st} {short_body(r)}")
        # Beyond the audit-read limit (replay, as-run, event pages) a 503 with Retry-After is the documented answer.
        if st == 503 and req.kind in ("read",) and not any(s in r.body.decode("utf-8", "replace") for s in ("has not started", "audit reads")):
            self.finding(f"503 on a read while the database is up: {req.route}", f"{req.describe()} → 503 {short_body(r)}")
        if st == 503 and req.kind in ("command", "scte35", "hook"):
            self.finding(f"503 to a command while the database is up: {req.route}", f"{req.describe()} → 503 {short_body(r)}")
            if req.channel in self.channels:
                with self.lock:
                    self.blocked[req.channel] += 1
                    retire = self.blocked[req.channel] == 10
                if retire:
                    self.retire(req.channel)
        j = r.json() if r.headers.get("content-type", "").startswith("application/json") else None
        if st == 201 and req.kind in ("command", "scte35", "hook") and isinstance(j, dict):
            for e in j.get("events") or []:
                if e.get("type") == "BreakPlaced":
                    try:
                        bid = json.loads(e["payload"]).get("id")
                    except Exception:
                        bid = None
                    if bid and e.get("channel") in self.breaks:
                        with self.lock:
                            self.breaks[e["channel"]].append(bid)
                ch = e.get("channel")
                if ch in self.versions:
                    with self.lock:
                        self.versions[ch] = max(self.versions[ch], e.get("version", 0))
            if req.kind == "command" and req.key and req.channel in self.channels:
                with self.lock:
                    self.sent_keys.append((req.channel, req.token, req.key, req.body))
        # Authorization expectations.
        http_level = st in (400, 413, 431) and not r.body.strip()
        if req.expect_auth == "401" and st != 401 and st < 500 and not http_level:
            self.finding(f"{req.route}: a request without a valid token was not answered 401", f"{req.describe(300)} → {st} {short_body(r)}")
        elif req.expect_auth == "403" and st in (200, 201):
            self.finding(f"{req.route}: a token was allowed what its role/channel/command types forbid", f"{req.describe(300)} → {st} {short_body(r)}")
        elif req.expect_auth == "403-or-4xx" and st in (200, 201):
            text = r.body.decode("utf-8", "replace")
            if re.search(r"break scte35-|splice event", text):
                self.finding(f"{req.route}: a token not allowed to send commands on the channel is told about its breaks (cross-tenant, issue 11 defect 13)",
                             f"{req.describe(300)} → {st} {short_body(r)}")
            else:
                self.finding(f"{req.route}: a token not allowed to send commands on the channel is answered {st}, not 403 (the section is mapped before the caller is authorized; issue 11 defect 2)",
                             f"{req.describe(300)} → {st} {short_body(r)}")
        # Invariant 6: bad input → 4xx naming the field.
        if req.bad and not req.expect_auth:
            if st in (200, 201):
                tag = next((t for t in req.tags if "=" in t or t.startswith(("missing", "body=", "scte:", "enc:"))), req.tags[-1] if req.tags else "?")
                self.finding(f"bad input accepted ({st}): {req.route} {tag}", f"{req.describe()} → {st} {short_body(r)}")
            elif 400 <= st < 500:
                if isinstance(j, dict) and "error" in j and req.bad_field and not j.get("field") and st not in (401, 403, 404, 409, 413):
                    self.finding(f"4xx to a bad field without naming it: {req.route} ({req.bad_field})", f"{req.describe()} → {st} {short_body(r)}")
        if 400 <= st < 500 and req.kind in ("command", "scte35", "hook", "read") and req.method != "HEAD" and not (r.headers.get("content-type", "").startswith("application/json") and isinstance(j, dict) and "error" in j):
            if http_level:
                self.finding(f"the HTTP layer answers {st} with an empty body, not the API's JSON error", f"{req.describe(300)} → {st} {short_body(r)}")
            else:
                self.finding(f"a {st} from {req.route} without a JSON error body", f"{req.describe(300)} → {st} {short_body(r)}")
        if req.method == "HEAD" and st == 404 and req.kind == "read":
            self.finding("HEAD on a GET route answers 404", f"{req.describe(200)} → 404")
        # Issue 11 defect 9: cancel_current_event picks a break that already ended.
        if req.kind == "command" and st == 409 and b"cancel_current_event" in (req.body or b"") and b"already has a playout limit" in r.body:
            sched = self.read_json(f"/channels/{req.channel}/schedule")
            if isinstance(sched, dict) and any(b.get("state") == "on-air" and b.get("playout_limit") is None for b in sched.get("breaks", [])):
                self.finding("cancel_current_event refused with 'already has a playout limit' while another break is on air with none (issue 11 defect 9)",
                             f"{req.describe(200)} → 409 {short_body(r)}")
        # Issue 11 defect 5: a captured signed delivery sent again (with a new Idempotency-Key) must not be decided again.
        if req.kind == "hook" and req.note and req.note[3]:
            with self.lock:
                first = self.hook_first.setdefault(req.note, (req, st, isinstance(j, dict) and j.get("replayed")))
            if first[0] is not req and first[1] == 201 and not (st == 201 and isinstance(j, dict) and j.get("replayed")) and st not in (401, 404):
                self.finding("a signed hook delivery sent again with a different Idempotency-Key is decided again, not recognized as the same delivery (issue 11 defect 5)",
                             f"{first[0].describe(300)} → 201, then the same delivery with {req.describe(300)} → {st} {short_body(r)}")
        if req.kind == "scte35" and st == 422 and b"already on air" in r.body:
            self.finding("an SCTE-35 in/cancel for a break that started within the current segment is refused 422 'already on air' "
                         "(the cue is mapped by the live edge, decided by the arrival time)", f"{req.describe(300)} → 422 {short_body(r)}")
        # Issue 11 defect 10: a repeated SCTE-35 out after its break aired.
        if req.kind == "scte35" and st == 409 and ("already used" in r.body.decode("utf-8", "replace") or "was used" in r.body.decode("utf-8", "replace")) and not any(k == "Idempotency-Key" for k, _ in req.headers):
            self.finding("an SCTE-35 cue sent again after its break is answered 409 'command id … already used' (issue 11 defect 10)",
                         f"{req.describe(300)} → 409 {short_body(r)}")
        # Issue 11 defect 14: /media//x redirects to a protocol-relative URL; symlinks out of the media directory.
        loc = r.headers.get("location", "")
        if loc.startswith("//"):
            self.finding("a redirect to a protocol-relative Location (open redirect; issue 11 defect 14)", f"{req.describe(200)} → {st} Location: {loc}")
        if req.path.startswith("/media/outside-link") and st == 200:
            self.finding("a symlink out of the media directory is followed (issue 11 defect 14)", f"{req.describe(200)} → 200 {r.body[:60]!r}")
        if st == 200 and req.method == "GET" and req.route.endswith(".m3u8"):
            self.check_playlist_bytes(req, r.body)

    def check_playlist_bytes(self, req, body):
        # The draft puts a TAB between the ids of RECENTLY-REMOVED-DATERANGES (an LL-HLS delta update): allowed there only.
        body = b"\n".join(l for l in body.split(b"\n") if not l.startswith(b"#EXT-X-SKIP:"))
        bad = sorted({c for c in body if (c < 0x20 and c not in (0x0A,)) or c == 0x7F})
        if bad:
            self.finding("control characters served in a playlist (issue 11 defect 11)",
                         f"GET {req.path} → bytes {', '.join(f'0x{c:02x}' for c in bad[:8])} in: {snippet_around(body, bad[0])}")

    def retire(self, channel):
        """A channel that answers every command 503 with the database up is stuck (issue 11 defect 3): fuzz a fresh one
        in its place, so the rest of the run is not spent on it. It is still checked after the run."""
        with self.lock:
            renditions = self.channels.pop(channel, None)
            if renditions is None:
                return
            self.retired[channel] = renditions
            new = f"fz{len(self.channels) + len(self.retired) + 1}"
        args = [a.replace("{channel}", new) for a in self.cfg["channel_create"]]
        out = subprocess.run(args, capture_output=True, text=True, env=dict(os.environ, DATABASE_URL=self.cfg["database_url"]))
        self.finding("a channel stopped taking commands: every command answered 503 with the database up (issue 11 defect 3); "
                     "the harness fuzzes a new channel in its place", f"channel {channel}: 10 commands answered 503; replaced by {new}")
        if out.returncode == 0:
            with self.lock:
                self.breaks[new], self.versions[new] = [], 1
                self.channels[new] = renditions

    def all_channels(self):
        return list(self.channels) + list(self.retired)

    def read_json(self, path, who="operator"):
        raw = build_raw(self.port, "GET", path, self.auth_header(who))
        r = send_raw(self.port, raw, timeout=10)
        return r.json() if r.status == 200 else None

    # -- the workers ------------------------------------------------------------------------------------------

    def generate(self, rng):
        r = rng.random()
        if r < 0.34:
            return self.gen_command(rng)
        if r < 0.40:
            return self.gen_broken_body(rng)
        if r < 0.52:
            return self.gen_scte35(rng)
        if r < 0.62:
            return self.gen_hook(rng)
        if r < 0.86:
            return self.gen_get(rng)
        if r < 0.93:
            return self.gen_odd(rng)
        if r < 0.95:
            return self.gen_retry(rng)
        if r < 0.97:
            return "pipeline"
        return "race"

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

    # -- invariants after the run -----------------------------------------------------------------------------

    def read_log(self, channel):
        """Every event of the channel, through GET …/events with the operator token (pages of 1000)."""
        events, after = [], 0
        while True:
            raw = build_raw(self.port, "GET", f"/channels/{channel}/events?after={after}&limit=1000", self.auth_header("operator"))
            r = send_raw(self.port, raw, timeout=30)
            if r.status != 200:
                return None, f"GET /channels/{channel}/events?after={after} → {r.status} {r.error or short_body(r)}"
            page = r.json()
            batch = page.get("events") or []
            events += batch
            if len(batch) < 1000:
                return events, None
            after = batch[-1]["version"]

    def read_log_sql(self, channel):
        q = ("SELECT coalesce(json_agg(json_build_object('position', position, 'version', version, 'type', type, "
             "'command_id', command_id, 'reason', reason, 'actor', actor) ORDER BY position), '[]') FROM cueline_events WHERE channel = $$%s$$" % channel)
        out = subprocess.run(["psql", self.cfg["database_url"], "-Atc", q], capture_output=True, text=True)
        return json.loads(out.stdout) if out.returncode == 0 and out.stdout.strip() else []

    def check(self):
        if self.server_dead():
            self.handle_crash()  # it died at the very end: name the request and restart, to read the log back
        health = send_raw(self.port, build_raw(self.port, "GET", "/healthz"), timeout=5)
        if health.status != 200:
            self.violation(1, "the server does not answer /healthz at the end", f"/healthz → {health.status} {health.error or ''}")
        time.sleep(0.5)
        logs, http_ok = {}, {}
        for channel in self.all_channels():
            events, err = self.read_log(channel)
            if events is None:
                self.violation(2, "a channel's log cannot be read back over HTTP", err)
                events = self.read_log_sql(channel)
                http_ok[channel] = False
            else:
                http_ok[channel] = True
            logs[channel] = events
        by_position = {e["position"]: (c, e) for c, evs in logs.items() for e in evs}
        by_command = collections.defaultdict(set)
        for c, evs in logs.items():
            for e in evs:
                by_command[(c, e.get("command_id"))].add(e["position"])
        # Invariant 2.
        acked = 0
        ack_sets = collections.defaultdict(set)
        for req in self.records:
            r = req.resp
            if r is None or r.status != 201 or req.kind not in ("command", "scte35", "hook"):
                continue
            j = r.json()
            if not isinstance(j, dict) or not isinstance(j.get("events"), list) or not j["events"]:
                self.violation(2, "a 201 without events", f"{req.describe()} → {short_body(r)}")
                continue
            for e in j["events"]:
                acked += 1
                pos = e.get("position")
                ack_sets[(e.get("channel"), e.get("command_id"))].add(pos)
                found = by_position.get(pos)
                if found is None:
                    self.violation(2, "an acknowledged event is not in the log", f"{req.describe(300)} → 201 event at position {pos}: {short_json(e)}")
                    continue
                channel, stored = found
                if not http_ok.get(channel):
                    continue
                diffs = [f for f in ("position", "channel", "version", "type", "schema_version", "payload", "actor", "source", "reason", "command_id", "decided_at", "hash")
                         if e.get(f) != stored.get(f)]
                if diffs:
                    f = diffs[0]
                    self.violation(2, f"the log differs from what was acknowledged ({', '.join(diffs)})",
                                   f"{req.describe(300)} → 201 acknowledged {f}={short_json(e.get(f))}, the log holds {f}={short_json(stored.get(f))} at position {pos}")
        for (channel, cid), positions in ack_sets.items():
            logged = by_command.get((channel, cid), set())
            if logged != positions:
                self.violation(2, "a command's events in the log are not exactly the acknowledged ones (applied twice, or a partial write)",
                               f"channel {channel}, command_id {short_json(cid)}: acknowledged positions {sorted(positions)}, log {sorted(logged)}")
        self.acked_events = acked
        # Invariant 3.
        acked_positions = {p for positions in ack_sets.values() for p in positions}
        # Events no 201 acknowledged: a 503 (or a request cut off by a crash) may only be behind those.
        all_events = [(c, e) for c, evs in logs.items() for e in evs if e["position"] not in acked_positions]
        n503 = 0
        for req in self.records:
            if not req.resp or req.resp.status != 503 or req.kind not in ("command", "scte35", "hook"):
                continue
            n503 += 1
            hits = []
            for c, e in all_events:
                cid, reason = e.get("command_id") or "", e.get("reason") or ""
                if req.marker and req.marker == reason:
                    hits.append(e)
                elif req.key and (cid == req.key or (len(req.key) >= 8 and req.key in cid)):
                    hits.append(e)
            if hits:
                e = hits[0]
                self.violation(3, "a 503 ('nothing was written') wrote events",
                               f"{req.describe(300)} → 503 {short_body(req.resp)}; the log holds position {e.get('position')} {e.get('type')} command_id={short_json(e.get('command_id'))} reason={short_json(e.get('reason'))}")
        self.n503 = n503
        # Requests left without an answer while the server was alive (not cut off by a crash).
        for req in self.errors:
            if any(d - 25 <= req.t1 <= d + 2 for d in self.deaths) or req.resp.error.startswith("ConnectionRefused"):
                continue
            kind = "no answer within 10 s" if "within" in req.resp.error else "the connection closed without an answer"
            self.finding(f"{kind} while the server was alive: {req.route}", f"{req.describe(300)} → ({req.resp.error})")
        # Invariant 4, and the harness's own recomputation of the chain (a finding when it differs).
        self.verify_out = {}
        for channel in self.all_channels():
            v = subprocess.run([self.cfg["cueline"], "verify", channel], capture_output=True, text=True, errors="replace",
                               env=dict(os.environ, DATABASE_URL=self.cfg["database_url"]))
            self.verify_out[channel] = v.returncode
            if v.returncode != 0:
                self.violation(4, "cueline verify fails", f"cueline verify {channel} → exit {v.returncode}: {(v.stdout + v.stderr).strip()[:500]}")
            if http_ok.get(channel):
                bad = chain_break(channel, logs[channel])
                if bad:
                    self.finding("the hash chain recomputed from GET …/events does not match", bad)

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


def chain_break(channel, events):
    def quoted(text):
        out = ['"']
        for ch in text:
            o = ord(ch)
            if ch == '"':
                out.append('\\"')
            elif ch == "\\":
                out.append("\\\\")
            elif o < 0x20:
                out.append("\\u" + format(o, "x").rjust(4, "0"))
            else:
                out.append(ch)
        out.append('"')
        return "".join(out)
    previous = hashlib.sha256(("cueline-chain-v1:" + channel).encode()).hexdigest()
    started = False
    for e in sorted(events, key=lambda e: e["version"]):
        if e.get("hash") is None:
            if started:
                return f"position {e['position']} has no hash after hashed events"
            continue
        started = True
        fields = [quoted(e["channel"]), str(e["version"]), quoted(e["type"]), str(e["schema_version"]), quoted(e["payload"]),
                  quoted(e["decided_at"]), quoted(e["actor"]), quoted(e["source"]), quoted(e["command_id"]),
                  quoted(e["reason"]) if e.get("reason") is not None else "null"]
        text = previous + "\n[" + ",".join(fields) + "]"
        expected = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        if expected != e["hash"]:
            return f"channel {channel} position {e['position']} ({e['type']}, reason {short_json(e.get('reason'))}): stored {e['hash'][:16]}, recomputed {expected[:16]}"
        previous = e["hash"]
    return None


def short_body(r, limit=240):
    if r is None:
        return ""
    if r.error:
        return f"({r.error})"
    t = r.body.decode("utf-8", "backslashreplace").strip()
    return t if len(t) <= limit else t[:limit] + "…"


def short_json(v, limit=160):
    t = json.dumps(v)
    return t if len(t) <= limit else t[:limit] + "…"


def snippet_around(body, byte):
    i = body.find(bytes([byte]))
    return repr(body[max(0, i - 60):i + 30])


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
