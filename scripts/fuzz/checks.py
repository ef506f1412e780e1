"""The fuzzer's checks (fuzz_http.py): each answer judged as it comes (status, authorization, bad input named, the
known defects of issue 11, playlist bytes), and the invariants after the run (every 201 in the log once, byte for
byte; every 503 wrote nothing; `cueline verify`; the hash chain recomputed).

Checks is a part of fuzz_http.Fuzzer (a mixin): its methods use the fuzzer's state (records, channels, breaks,
versions, errors, deaths) and its send, finding and violation."""
import collections
import hashlib
import json
import os
import re
import subprocess
import time

from raw_http import build_raw, send_raw
from request import short_body, short_json, snippet_around


class Checks:
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
