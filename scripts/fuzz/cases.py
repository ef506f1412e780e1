"""The fuzzer's request generators (fuzz_http.py): commands valid and broken, SCTE-35 sections, hook deliveries, GETs
on every route, odd paths and methods, kept-alive pipelines, racers and retries.

Cases is a part of fuzz_http.Fuzzer (a mixin): its methods use the fuzzer's state (channels, tokens, hooks, breaks,
versions, sent keys, the routes of openapi.json) and its send, after, finding and violation."""
import base64
import hashlib
import hmac
import json
import re
import socket
import threading
import time

from request import Req, short_body
from scte35_writer import SCTE_SAMPLES, crc32_mpeg2, fix_section, splice_insert
from values import BAD_IDS, NUMBERS, STRINGS, URIS, Raw, body_bytes, instants, iso, now_ms


class Cases:
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
