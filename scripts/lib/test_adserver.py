#!/usr/bin/env python3
"""A test ad decision server: what Cueline meets when it asks an ad server for a break's assets (stdlib only).

    test_adserver.py --port 0 --media-base URL [--host 127.0.0.1] [--verbose]
    test_adserver.py --self-test

Prints "listening PORT" once ready, then nothing more on stdout. Creatives point at the demo's VOD HLS ads under
--media-base: creative i of a pod at ad/pod{((i-1)%5)+1}.m3u8 (6 s); with dur=6|12|30 at ad/ad6|ad12|ad.m3u8.
Answers are written as real ad servers write IAB VAST 4.1/4.2 (4.0 and 3.0 on request) and VMAP 1.0(.1); the
spec sections each endpoint follows are named by their titles:
- /vast/inline?ads=N&dur=S&version=4.1|4.0|3.0&skip=OFFSET: an ad pod (VAST 4.1 "Ad Pods", "InLine", "Creative",
  "Linear" with skipoffset, Duration HH:MM:SS.mmm, "Tracking Events" with a progress offset, "Media Files": a
  progressive mp4 that 404s first, then the streaming HLS one; UniversalAdId in 4.x only (4.0 with idValue);
  VAST 3.0 spells the Creative attribute AdID). URLs mix CDATA and &amp;-escaped text with whitespace to trim;
  Error URLs carry the [ERRORCODE] macro ("Macros"). hold_ms=M on any /vast or /vmap endpoint holds the answer.
- /vast/standalone?ads=N: an ad buffet ("Ad Buffets", no sequence); /vast/mixed: a pod listed out of order plus
  a standalone ad (players order a pod by sequence; a standalone ad is not part of it).
- /vast/wrapper?depth=K: a chain of "Wrapper" ads (VASTAdTagURI), each with its own Impression and Linear tracking
  to merge with the InLine's; /vast/wrapper-loop (points at itself), /vast/wrapper-dead (points at a 404).
- /vmap?breaks=B: VMAP 1.0 vmap:AdBreak (timeOffset, breakType, breakId), vmap:AdSource with vmap:VASTAdData
  (inline VAST) or vmap:AdTagURI, vmap:TrackingEvents breakStart/breakEnd; plus one nonlinear AdBreak to skip.
- /vast/empty, /vast/empty-error: the "No Ad Response" (a bare root, optionally with a root Error URL the player
  calls with error 303, VAST 3.0 2.4.2.4); /vast/no-hls: mp4/webm only; /vast/long?ads=N&dur=30: ads that
  overflow a short break.
- hostile: /vast/malformed, /vast/not-xml, /vast/billion-laughs, /vast/external-entity, /vast/slow?ms=M,
  /vast/drip, /vast/huge?mb=X&chunked=0|1, /vast/redirect?n=N, /vast/redirect-loop, /vast/status?code=C,
  /vast/wrong-type (valid VAST as text/html), /vast/bom (UTF-8 BOM and XML declaration).
- /track/<event>?...: 204, recorded (macros such as [ERRORCODE] are recorded as the client sent them).
- GET /stats: {"requests", "max_in_flight", "in_flight", "tracking", "log"}; POST or GET /reset clears it.
Every request is recorded with its path, query (extra parameters too), time and User-Agent.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import math
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, Iterator

VAST_NS = "http://www.iab.com/VAST"
VMAP_NS = "http://www.iab.net/videosuite/vmap"
XML_TYPE = "application/xml; charset=utf-8"
MEDIA_BY_DUR = {6: "ad6.m3u8", 12: "ad12.m3u8", 30: "ad.m3u8"}
MIXED = (("pod-2", 2, 2), ("pod-1", 1, 1), ("standalone-1", 3, None))  # (ad id, pod index, sequence)


class State:
    """Everything the server remembers, behind one lock."""

    def __init__(self, media_base: str, verbose: bool = False) -> None:
        self.media_base = media_base.rstrip("/")
        self.verbose = verbose
        self.lock = threading.Lock()
        self.in_flight = 0
        self.reset()

    def reset(self) -> None:
        with self.lock:
            self.requests: collections.Counter[str] = collections.Counter()
            self.tracking: collections.deque[dict] = collections.deque(maxlen=10000)
            self.log: collections.deque[dict] = collections.deque(maxlen=200)
            self.max_in_flight = self.in_flight

    def record(self, method: str, path: str, query: dict, raw: str, user_agent: str) -> None:
        with self.lock:
            self.requests[path] += 1
            self.log.append({"method": method, "path": path, "query": query, "raw_query": raw, "t": time.time(),
                             "user_agent": user_agent})

    def track(self, event: str, query: dict) -> None:
        with self.lock:
            self.tracking.append({"event": event, "query": query, "t": time.time()})

    @contextlib.contextmanager
    def flight(self) -> Iterator[None]:
        with self.lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            yield
        finally:
            with self.lock:
                self.in_flight -= 1

    def snapshot(self) -> dict:
        with self.lock:
            return {"requests": dict(self.requests), "max_in_flight": self.max_in_flight,
                    "in_flight": self.in_flight, "tracking": list(self.tracking), "log": list(self.log)}


# --- documents -------------------------------------------------------------------------------------------------

@dataclass
class Doc:
    """What one answer's documents share: where tracking goes, where media is, which VAST version."""
    origin: str
    media_base: str
    version: str = "4.1"
    turn: int = 0

    @property
    def v4(self) -> bool:
        return self.version.startswith("4")

    def u(self, url: str) -> str:
        """URL text, cycling through the spellings real servers use: CDATA, padded CDATA, &amp;-escaped lines."""
        self.turn += 1
        if self.turn % 3 == 0:
            return f"<![CDATA[{url}]]>"
        if self.turn % 3 == 1:
            return f"\n            <![CDATA[  {url}  ]]>\n          "
        return "\n            " + url.replace("&", "&amp;") + "\n          "


def fmt_duration(seconds: float) -> str:
    ms = int(round(seconds * 1000))
    return f"{ms // 3600000:02d}:{ms // 60000 % 60:02d}:{ms // 1000 % 60:02d}.{ms % 1000:03d}"


def vast_doc(d: Doc, body: str, declaration: bool = True) -> str:
    ns = f' xmlns="{VAST_NS}"' if d.v4 else ""
    head = '<?xml version="1.0" encoding="UTF-8"?>\n' if declaration else ""
    return f'{head}<VAST version="{d.version}"{ns}>\n{body}</VAST>\n'


def media_files(d: Doc, ad_id: str, index: int, dur: int | None, hls: bool) -> str:
    mp4 = (f'<MediaFile id="{ad_id}-mp4" delivery="progressive" type="video/mp4" width="1280" height="720" '
           f'bitrate="2000" codec="avc1.64001f" maintainAspectRatio="true">{d.u(f"{d.origin}/media/{ad_id}.mp4")}'
           f'</MediaFile>')
    if not hls:
        webm = (f'<MediaFile id="{ad_id}-webm" delivery="progressive" type="video/webm" width="1280" height="720" '
                f'bitrate="1500">{d.u(f"{d.origin}/media/{ad_id}.webm")}</MediaFile>')
        return f"            {mp4}\n            {webm}\n"
    name = MEDIA_BY_DUR.get(dur, "ad.m3u8") if dur else f"pod{(index - 1) % 5 + 1}.m3u8"
    mime = "application/vnd.apple.mpegurl" if index % 2 == 0 else "application/x-mpegURL"
    stream = (f'<MediaFile id="{ad_id}-hls" delivery="streaming" type="{mime}" width="1280" height="720" '
              f'bitrate="1800" minBitrate="800" maxBitrate="2800">{d.u(f"{d.media_base}/ad/{name}")}</MediaFile>')
    return f"            {mp4}\n            {stream}\n"


def tracking_events(d: Doc, events: list[str], query: str, progress: bool) -> str:
    lines = [f'<Tracking event="{e}">{d.u(f"{d.origin}/track/{e}?{query}")}</Tracking>' for e in events]
    if progress:
        lines.append(f'<Tracking event="progress" offset="00:00:03">{d.u(f"{d.origin}/track/progress?{query}")}'
                     f'</Tracking>')
    return "".join(f"            {line}\n" for line in lines)


def inline_ad(d: Doc, ad_id: str, index: int, seq: int | None, dur: int | None = None,
              skip: str | None = None, hls: bool = True) -> str:
    """One <Ad><InLine> with a single linear creative (VAST 4.1 §3.4, §3.8)."""
    o, u = d.origin, d.u
    seq_attr = f' sequence="{seq}"' if seq is not None else ""
    skip_attr = f' skipoffset="{skip}"' if skip else ""
    ad_attr = f'adId="{ad_id}-creative"' if d.v4 else f'AdID="{ad_id}-creative"'
    value = f' idValue="CUE{index:04d}"' if d.version == "4.0" else ""  # 4.1 moved the value into the text
    uaid = f'        <UniversalAdId idRegistry="ad-id.org"{value}>CUE{index:04d}</UniversalAdId>\n' if d.v4 else ""
    serving = f"    <AdServingId>{uuid.uuid4()}</AdServingId>\n" if d.v4 else ""
    events = ["start", "firstQuartile", "midpoint", "thirdQuartile", "complete"]
    click = f"https://advertiser.example/landing?ad={ad_id}&src=cueline"
    return (f'<Ad id="{ad_id}"{seq_attr}>\n  <InLine>\n'
            f'    <AdSystem version="1.0">Cueline test ad server</AdSystem>\n'
            f'    <Error>{u(f"{o}/track/error?ad={ad_id}&code=[ERRORCODE]")}</Error>\n'
            f'    <Impression id="{ad_id}-imp1">{u(f"{o}/track/impression?ad={ad_id}&n=1")}</Impression>\n'
            f'    <Impression id="{ad_id}-imp2">{u(f"{o}/track/impression?ad={ad_id}&n=2")}</Impression>\n'
            f'{serving}    <AdTitle>Test ad {ad_id}</AdTitle>\n    <Creatives>\n'
            f'      <Creative id="{ad_id}-c1" sequence="1" {ad_attr}>\n{uaid}'
            f'        <Linear{skip_attr}>\n          <TrackingEvents>\n'
            f'{tracking_events(d, events, f"ad={ad_id}", True)}          </TrackingEvents>\n'
            f'          <Duration>{fmt_duration(dur or 6)}</Duration>\n          <MediaFiles>\n'
            f'{media_files(d, ad_id, index, dur, hls)}          </MediaFiles>\n'
            f'          <VideoClicks><ClickThrough id="{ad_id}-click">{u(click)}</ClickThrough></VideoClicks>\n'
            f'        </Linear>\n      </Creative>\n    </Creatives>\n  </InLine>\n</Ad>\n')


def pod(d: Doc, prefix: str, ads: int, dur: int | None, skip: str | None, sequenced: bool = True) -> str:
    return "".join(inline_ad(d, f"{prefix}{i}", i, i if sequenced else None, dur, skip) for i in range(1, ads + 1))


def wrapper_ad(d: Doc, level: int, tag_url: str) -> str:
    """One <Ad><Wrapper> (VAST 4.1 §3.5): its own Impression and Linear tracking, then the next tag."""
    o, u = d.origin, d.u
    tag = f"    <VASTAdTagURI><![CDATA[{tag_url}]]></VASTAdTagURI>\n"
    return (f'<Ad id="wrapper-{level}">\n  <Wrapper followAdditionalWrappers="true" allowMultipleAds="true" '
            f'fallbackOnNoAd="false">\n    <AdSystem version="1.0">Cueline test wrapper</AdSystem>\n'
            f'{"" if d.v4 else tag}'
            f'    <Error>{u(f"{o}/track/error?wrapper={level}&code=[ERRORCODE]")}</Error>\n'
            f'    <Impression id="wrapper-{level}-imp">{u(f"{o}/track/impression?wrapper={level}")}</Impression>\n'
            f'    <Creatives>\n      <Creative id="wrapper-{level}-c1">\n        <Linear>\n          <TrackingEvents>\n'
            f'{tracking_events(d, ["start", "complete"], f"wrapper={level}", False)}'
            f'          </TrackingEvents>\n        </Linear>\n      </Creative>\n    </Creatives>\n'
            f'{tag if d.v4 else ""}  </Wrapper>\n</Ad>\n')


def vmap_doc(d: Doc, breaks: int) -> str:
    """VMAP 1.0: a preroll then a linear break every 10 minutes, sources alternating inline VAST and a tag URI,
    then one nonlinear break 5 minutes after the last (document order is time order)."""
    out = [f'<?xml version="1.0" encoding="UTF-8"?>\n<vmap:VMAP xmlns:vmap="{VMAP_NS}" version="1.0">\n']
    for k in range(breaks):
        bid = "preroll" if k == 0 else f"midroll-{k}"
        offset = "start" if k == 0 else fmt_duration(k * 600)
        if k % 2 == 0:
            v4 = Doc(d.origin, d.media_base, "4.1")
            vast = vast_doc(v4, inline_ad(v4, f"{bid}-ad", 1, None), False)
            source = (f'<vmap:AdSource id="{bid}-source" allowMultipleAds="false" followRedirects="true">\n'
                      f'<vmap:VASTAdData>\n{vast}</vmap:VASTAdData>\n</vmap:AdSource>')
        else:
            source = (f'<vmap:AdSource id="{bid}-source" allowMultipleAds="true" followRedirects="true">\n'
                      f'<vmap:AdTagURI templateType="vast4"><![CDATA[{d.origin}/vast/inline?ads=2&break={bid}]]>'
                      f'</vmap:AdTagURI>\n</vmap:AdSource>')
        out.append(adbreak(d, bid, offset, "linear", source))
    tag = (f'<vmap:AdSource id="overlay-1-source"><vmap:AdTagURI templateType="vast4">'
           f'<![CDATA[{d.origin}/vast/inline?ads=1&break=overlay-1]]></vmap:AdTagURI></vmap:AdSource>')
    out.append(adbreak(d, "overlay-1", fmt_duration(max(breaks - 1, 0) * 600 + 300), "nonlinear", tag))
    out.append("</vmap:VMAP>\n")
    return "".join(out)


def adbreak(d: Doc, bid: str, offset: str, kind: str, source: str) -> str:
    events = "".join(f'<vmap:Tracking event="{e}"><![CDATA[{d.origin}/track/{e}?break={bid}]]></vmap:Tracking>'
                     for e in ("breakStart", "breakEnd"))
    return (f'<vmap:AdBreak timeOffset="{offset}" breakType="{kind}" breakId="{bid}">\n{source}\n'
            f'<vmap:TrackingEvents>{events}</vmap:TrackingEvents>\n</vmap:AdBreak>\n')


def huge_doc(d: Doc, size: int) -> bytes:
    """A well-formed VAST of `size` bytes: a pod of up to 200 ads filling half, a comment the rest."""
    ads: list[str] = []
    total = 0
    while len(ads) < 200 and total < size // 2:
        ads.append(inline_ad(d, f"huge-{len(ads) + 1}", len(ads) + 1, len(ads) + 1))
        total += len(ads[-1])
    doc = vast_doc(d, "".join(ads) + "@PAD@")
    room = size - (len(doc) - len("@PAD@")) - len("<!--  -->\n")
    text = ("padding so the document is as large as asked " * (room // 45 + 1))[:max(room, 0)]
    return doc.replace("@PAD@", f"<!-- {text} -->\n" if room > 0 else "").encode()


def billion_laughs() -> str:
    lines = ['<!ENTITY lol0 "lol">'] + [f'<!ENTITY lol{k} "{f"&lol{k - 1};" * 10}">' for k in range(1, 10)]
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE VAST [\n  ' + "\n  ".join(lines) + "\n]>\n"
            f'<VAST version="4.1" xmlns="{VAST_NS}"><Ad id="lol"><InLine><AdSystem>lol</AdSystem>'
            "<AdTitle>&lol9;</AdTitle></InLine></Ad></VAST>\n")


NOT_XML = (b"<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title></head>\n<body><h1>Bad Gateway</h1>"
           b"<p>The upstream ad server timed&nbsp;out.<br></p><hr><center>nginx</center></body></html>\n")


# --- HTTP ------------------------------------------------------------------------------------------------------

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "CuelineTestAdServer/1.0"
    timeout = 90

    @property
    def state(self) -> State:
        return self.server.state  # type: ignore[attr-defined]

    def log_message(self, format: str, *args: object) -> None:
        if self.state.verbose:
            sys.stderr.write("adserver: " + format % args + "\n")

    def do_GET(self) -> None:
        self.dispatch()

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.dispatch()

    def dispatch(self) -> None:
        parts = urllib.parse.urlsplit(self.path)
        self.q = {k: v[0] for k, v in urllib.parse.parse_qs(parts.query, keep_blank_values=True).items()}
        self.origin = "http://" + (self.headers.get("Host") or "%s:%d" % self.server.server_address[:2])
        self.doc = Doc(self.origin, self.state.media_base, self.q.get("version", "4.1"))
        self.state.record(self.command, parts.path, self.q, parts.query, self.headers.get("User-Agent", ""))
        try:
            self.route(parts.path)
        except (BrokenPipeError, ConnectionResetError, TimeoutError):
            self.close_connection = True

    def route(self, path: str) -> None:
        if path.startswith("/track/"):
            self.state.track(path[len("/track/"):], self.q)
            return self.send(204, b"", "text/plain")
        if path == "/stats":
            return self.send(200, json.dumps(self.state.snapshot()).encode(), "application/json")
        if path == "/reset":
            self.state.reset()
            return self.send(200, b'{"ok": true}\n', "application/json")
        document = self.documents().get(path)
        method = getattr(self, "ep_" + path.strip("/").replace("/", "_").replace("-", "_"), None)
        if document is None and (method is None or not path.startswith("/vast/")):
            return self.send(404, b"not found\n", "text/plain")
        with self.state.flight():
            time.sleep(self.num("hold_ms", 0) / 1000)
            if document:
                return self.xml(document())
            method()

    def num(self, name: str, default: float) -> float:
        try:
            value = float(self.q.get(name, default))
        except ValueError:
            return default
        return max(0.0, value) if math.isfinite(value) else default

    def count(self, name: str, default: int, top: int = 500) -> int:
        return max(0, min(top, int(self.num(name, default))))

    def send(self, code: int, body: bytes, ctype: str, headers: dict[str, str] | None = None) -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def xml(self, text: str | bytes, ctype: str = XML_TYPE) -> None:
        self.send(200, text.encode() if isinstance(text, str) else text, ctype)

    def rest(self, drop: str) -> str:
        return urllib.parse.urlencode({k: v for k, v in self.q.items() if k != drop})

    def inline_vast(self) -> str:
        dur = int(self.num("dur", 0)) or None
        return vast_doc(self.doc, pod(self.doc, "ad-", self.count("ads", 1), dur, self.q.get("skip")))

    def documents(self) -> dict[str, Callable[[], str | bytes]]:
        """The endpoints that answer one XML document as application/xml, by path."""
        d, n, o = self.doc, self.count, self.origin
        empty = f'<?xml version="1.0" encoding="UTF-8"?>\n<VAST version="4.1" xmlns="{VAST_NS}"/>\n'
        no_ad = f"<Error><![CDATA[{o}/track/error?code=[ERRORCODE]&reason=no-ad]]></Error>\n"
        return {
            "/vast/inline": self.inline_vast,
            "/vast/standalone": lambda: vast_doc(d, pod(d, "buffet-", n("ads", 3), None, None, sequenced=False)),
            "/vast/mixed": lambda: vast_doc(d, "".join(inline_ad(d, k, i, q) for k, i, q in MIXED)),
            "/vast/long": lambda: vast_doc(d, pod(d, "long-", n("ads", 2), n("dur", 30, 3600) or 30, None)),
            "/vast/no-hls": lambda: vast_doc(d, inline_ad(d, "nohls-1", 1, None, hls=False)),
            "/vast/empty": lambda: empty,
            "/vast/empty-error": lambda: vast_doc(d, no_ad),
            "/vast/wrapper": self.wrapper,
            "/vast/wrapper-loop": lambda: vast_doc(d, wrapper_ad(d, 1, f"{o}/vast/wrapper-loop")),
            "/vast/wrapper-dead": lambda: vast_doc(d, wrapper_ad(d, 1, f"{o}/vast/gone?from=wrapper-dead")),
            "/vmap": lambda: vmap_doc(d, n("breaks", 3, 100)),
            "/vast/malformed": lambda: (t := self.inline_vast())[:t.index("<MediaFiles>") + 6],
            "/vast/billion-laughs": billion_laughs,
            "/vast/external-entity": self.external_entity,
            "/vast/bom": lambda: b"\xef\xbb\xbf" + self.inline_vast().encode(),
        }

    def wrapper(self) -> str:
        depth, rest = max(1, self.count("depth", 1, 50)), self.rest("depth")
        nxt = f"/vast/wrapper?depth={depth - 1}&{rest}" if depth > 1 else f"/vast/inline?{rest}"
        return vast_doc(self.doc, wrapper_ad(self.doc, depth, self.origin + nxt.rstrip("?&")))

    def external_entity(self) -> str:
        text = self.inline_vast().replace(
            "<Impression ", f'<Impression id="xxe"><![CDATA[{self.origin}/track/impression?leak=]]>&xxe;'
                            '</Impression>\n    <Impression ', 1)
        decl = '<?xml version="1.0" encoding="UTF-8"?>\n'
        return text.replace(decl, decl + '<!DOCTYPE VAST [\n  <!ENTITY xxe SYSTEM "file:///etc/passwd">\n]>\n', 1)

    # answers that are more than a document

    def ep_vast_not_xml(self) -> None:
        self.send(200, NOT_XML, "text/html; charset=utf-8")

    def ep_vast_slow(self) -> None:
        time.sleep(self.num("ms", 3000) / 1000)
        self.xml(self.inline_vast())

    def ep_vast_drip(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", XML_TYPE)
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        data = self.inline_vast().encode()
        end = time.monotonic() + self.num("secs", 60)
        i = 0
        while time.monotonic() < end:
            time.sleep(max(10.0, self.num("interval_ms", 500)) / 1000)
            self.wfile.write(data[i:i + 1] if i < len(data) else b" ")
            self.wfile.flush()
            i += 1

    def ep_vast_huge(self) -> None:
        body = huge_doc(self.doc, int(min(max(self.num("mb", 10), 0.001), 512) * 1024 * 1024))
        if self.q.get("chunked", "0") != "1":
            return self.xml(body)
        self.send_response(200)
        self.send_header("Content-Type", XML_TYPE)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for off in range(0, len(body), 65536):
            chunk = body[off:off + 65536]
            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        self.wfile.write(b"0\r\n\r\n")

    def ep_vast_redirect(self) -> None:
        n, rest = self.count("n", 1, 100), self.rest("n")
        if n == 0:
            return self.xml(self.inline_vast())
        nxt = f"/vast/redirect?n={n - 1}&{rest}" if n > 1 else f"/vast/inline?{rest}"
        self.send(302, b"moved\n", "text/plain", {"Location": self.origin + nxt.rstrip("?&")})

    def ep_vast_redirect_loop(self) -> None:
        self.send(302, b"moved\n", "text/plain", {"Location": f"{self.origin}/vast/redirect-loop"})

    def ep_vast_status(self) -> None:
        code = max(200, min(599, int(self.num("code", 500))))
        body = b"" if code in (204, 304) else f"status {code}\n".encode()
        self.send(code, body, "text/plain", {"Retry-After": "1"} if code in (429, 503) else None)

    def ep_vast_wrong_type(self) -> None:
        self.xml(self.inline_vast(), "text/html; charset=utf-8")


class AdServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, host: str, port: int, state: State) -> None:
        super().__init__((host, port), Handler)
        self.state = state


# --- self-test -------------------------------------------------------------------------------------------------

class Checker:
    """Counts the checks that held; raises AssertionError naming the first that did not."""

    def __init__(self) -> None:
        self.n = 0

    def __call__(self, name: str, ok: bool, detail: object = "") -> None:
        if not ok:
            raise AssertionError(name + (f" ({detail})" if detail != "" else ""))
        self.n += 1


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


def get(url: str, follow: bool = True, timeout: float = 5.0) -> tuple[int, dict, bytes]:
    req = urllib.request.Request(url, headers={"User-Agent": "cueline-selftest/1"})
    opener = urllib.request.build_opener(*([] if follow else [NoRedirect()]))
    try:
        with opener.open(req, timeout=timeout) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def parse(body: bytes) -> ET.Element:
    """Parse and drop namespaces from tags, so finds read plainly."""
    root = ET.fromstring(body)
    for el in root.iter():
        el.tag = el.tag.split("}")[-1]
    return root


def vast_checks(ck: Checker, name: str, body: bytes, ads: int, seqs: list[str | None] | None = None,
                dur: str = "00:00:06.000") -> ET.Element:
    root = parse(body)
    found = root.findall("Ad")
    ck(f"{name}: {ads} ads", len(found) == ads, len(found))
    if seqs is not None:
        ck(f"{name}: sequences", [a.get("sequence") for a in found] == seqs, [a.get("sequence") for a in found])
    for i, ad in enumerate(found, 1):
        ck(f"{name}: ad {i} duration", ad.findtext(".//Duration") == dur, ad.findtext(".//Duration"))
        files = ad.findall(".//MediaFile")
        first = (files[0].get("delivery"), files[0].get("type"))
        ck(f"{name}: ad {i} mp4 first", first == ("progressive", "video/mp4"), first)
        ck(f"{name}: ad {i} HLS streaming second", files[1].get("delivery") == "streaming"
           and files[1].get("type", "").lower() in ("application/x-mpegurl", "application/vnd.apple.mpegurl"))
        ck(f"{name}: ad {i} HLS url", (files[1].text or "").strip().endswith(".m3u8"), files[1].text)
        ck(f"{name}: ad {i} two impressions", len(ad.findall("InLine/Impression")) == 2)
    return root


def selftest_documents(base: str, ck: Checker) -> None:
    status, headers, body = get(f"{base}/vast/inline?ads=3&primary_id=abc")
    root = vast_checks(ck, "inline", body, 3, ["1", "2", "3"])
    ck("inline: VAST 4.1 namespace", body.count(f'<VAST version="4.1" xmlns="{VAST_NS}">'.encode()) == 1)
    ck("inline: CDATA and &amp; URLs", b"<![CDATA[" in body and b"&amp;" in body)
    ck("inline: UniversalAdId", len(root.findall(".//UniversalAdId")) == 3)
    ck("inline: no skipoffset", root.find(".//Linear").get("skipoffset") is None)
    types = [a.findall(".//MediaFile")[1].get("type") for a in root.findall("Ad")]
    ck("inline: HLS type spellings alternate", types[0] != types[1] and types[0] == types[2], types)
    imp = (root.find(".//Impression").text or "").strip()
    ck("inline: impression URL trims", imp.startswith(base + "/track/impression?ad="), imp)
    ck("inline: progress offset", root.find(".//Tracking[@event='progress']").get("offset") == "00:00:03")
    _, _, body = get(f"{base}/vast/inline?ads=1&version=3.0&skip=00:00:05&dur=12")
    root = vast_checks(ck, "inline 3.0", body, 1, ["1"], "00:00:12.000")
    ck("inline 3.0: no namespace", b'<VAST version="3.0">' in body and b"xmlns=" not in body)
    ck("inline 3.0: no UniversalAdId", root.find(".//UniversalAdId") is None)
    ck("inline 3.0: skipoffset", root.find(".//Linear").get("skipoffset") == "00:00:05")
    ck("inline 3.0: ad12.m3u8", root.findall(".//MediaFile")[1].text.strip().endswith("/ad/ad12.m3u8"))
    for path, seqs in (("standalone?ads=2", [None, None]), ("mixed", ["2", "1", None]), ("bom", ["1"])):
        vast_checks(ck, path, get(f"{base}/vast/{path}")[2], len(seqs), seqs)
    root = vast_checks(ck, "long", get(f"{base}/vast/long?ads=2&dur=30")[2], 2, ["1", "2"], "00:00:30.000")
    ck("long: ad.m3u8", root.findall(".//MediaFile")[1].text.strip().endswith("/ad/ad.m3u8"))
    ck("empty: no Ad", parse(get(f"{base}/vast/empty")[2]).find("Ad") is None)
    root = parse(get(f"{base}/vast/empty-error")[2])
    ck("empty-error: Error, no Ad", root.find("Ad") is None and "[ERRORCODE]" in (root.findtext("Error") or ""))
    root = parse(get(f"{base}/vast/no-hls")[2])
    kinds = [f.get("type") for f in root.findall(".//MediaFile")]
    ck("no-hls: mp4 and webm only", kinds == ["video/mp4", "video/webm"], kinds)
    status, headers, body = get(f"{base}/vast/wrong-type")
    ck("wrong-type: text/html", headers.get("Content-Type", "").startswith("text/html"))
    vast_checks(ck, "wrong-type", body, 1, ["1"])
    body = get(f"{base}/vast/bom")[2]
    ck("bom: BOM and declaration", body.startswith(b'\xef\xbb\xbf<?xml version="1.0" encoding="UTF-8"?>'))


def selftest_wrappers(base: str, ck: Checker) -> None:
    url, depth, wrapper_tracking = f"{base}/vast/wrapper?depth=3&ads=2&gdpr=1", 0, set()
    while True:
        root = parse(get(url)[2])
        wrapper = root.find("Ad/Wrapper")
        if wrapper is None:
            break
        depth += 1
        ck(f"wrapper {depth}: impression", "wrapper=" in (wrapper.findtext("Impression") or ""))
        wrapper_tracking |= {t.get("event") for t in wrapper.findall(".//Tracking")}
        url = (wrapper.findtext("VASTAdTagURI") or "").strip()
        ck(f"wrapper {depth}: params passed on", "gdpr=1" in url and "ads=2" in url, url)
    ck("wrapper: chain depth 3", depth == 3, depth)
    ck("wrapper: start/complete tracking", wrapper_tracking == {"start", "complete"}, wrapper_tracking)
    vast_checks(ck, "wrapper: inline at the end", ET.tostring(root), 2, ["1", "2"])
    loop = parse(get(f"{base}/vast/wrapper-loop")[2]).findtext("Ad/Wrapper/VASTAdTagURI").strip()
    ck("wrapper-loop: points at itself", loop == f"{base}/vast/wrapper-loop", loop)
    dead = parse(get(f"{base}/vast/wrapper-dead")[2]).findtext("Ad/Wrapper/VASTAdTagURI").strip()
    ck("wrapper-dead: target 404s", get(dead)[0] == 404)
    body = get(f"{base}/vmap?breaks=4")[2]
    ck("vmap: root", body.count(f'<vmap:VMAP xmlns:vmap="{VMAP_NS}" version="1.0">'.encode()) == 1)
    breaks = ET.fromstring(body).findall(f"{{{VMAP_NS}}}AdBreak")
    linear = [b for b in breaks if b.get("breakType") == "linear"]
    ck("vmap: 4 linear breaks + 1 nonlinear", linear == breaks[:4] and len(breaks) == 5, len(breaks))
    last = (breaks[4].get("breakType"), breaks[4].get("timeOffset"))
    ck("vmap: nonlinear break last", last == ("nonlinear", "00:35:00.000"), last)
    ck("vmap: offsets", [b.get("timeOffset") for b in linear][:2] == ["start", "00:10:00.000"])
    ck("vmap: VASTAdData inline", linear[0].find(f".//{{{VMAP_NS}}}VASTAdData/{{{VAST_NS}}}VAST") is not None)
    tag = linear[1].find(f".//{{{VMAP_NS}}}AdTagURI")
    ck("vmap: AdTagURI vast4", tag is not None and tag.get("templateType") == "vast4")
    vast_checks(ck, "vmap: AdTagURI target", get(tag.text.strip())[2], 2, ["1", "2"])


def selftest_hostile(base: str, ck: Checker) -> None:
    for path in ("malformed", "not-xml"):
        status, headers, body = get(f"{base}/vast/{path}")
        ck(f"{path}: 200", status == 200)
        try:
            ET.fromstring(body)
            ck(f"{path}: does not parse", False)
        except ET.ParseError:
            ck(f"{path}: does not parse", True)
    ck("not-xml: text/html", get(f"{base}/vast/not-xml")[1].get("Content-Type", "").startswith("text/html"))
    for path in ("billion-laughs", "external-entity"):
        body = get(f"{base}/vast/{path}")[2]
        ck(f"{path}: DOCTYPE", b"<!DOCTYPE VAST [" in body and b"<!ENTITY" in body)
    ck("billion-laughs: small on the wire", len(get(f"{base}/vast/billion-laughs")[2]) < 2048)
    ck("external-entity: SYSTEM file", b'SYSTEM "file:///etc/passwd"' in get(f"{base}/vast/external-entity")[2])
    t = time.monotonic()
    vast_checks(ck, "slow", get(f"{base}/vast/slow?ms=300")[2], 1, ["1"])
    ck("slow: waited", time.monotonic() - t >= 0.3)
    for chunked in ("0", "1"):
        status, headers, body = get(f"{base}/vast/huge?mb=2&chunked={chunked}", timeout=10)
        ck(f"huge chunked={chunked}: size", abs(len(body) - 2 * 1024 * 1024) <= 0.05 * 2 * 1024 * 1024, len(body))
        framing = headers.get("Transfer-Encoding") == "chunked" if chunked == "1" else "Content-Length" in headers
        ck(f"huge chunked={chunked}: framing", framing, headers)
        ck(f"huge chunked={chunked}: well-formed", len(parse(body).findall("Ad")) > 1)
    get(f"{base}/reset")
    vast_checks(ck, "redirect", get(f"{base}/vast/redirect?n=3&ads=2")[2], 2, ["1", "2"])
    counts = json.loads(get(f"{base}/stats")[2])["requests"]
    ck("redirect: 3 hops", counts.get("/vast/redirect") == 3 and counts.get("/vast/inline") == 1, counts)
    status, headers, _ = get(f"{base}/vast/redirect-loop", follow=False)
    ck("redirect-loop: 302 to itself", status == 302 and headers.get("Location") == f"{base}/vast/redirect-loop")
    ck("status: 503", get(f"{base}/vast/status?code=503")[0] == 503)
    ck("status: 404 unknown path", get(f"{base}/nope")[0] == 404)
    t = time.monotonic()
    with urllib.request.urlopen(f"{base}/vast/drip", timeout=3) as r:
        ck("drip: 200 without length", r.status == 200 and r.headers.get("Content-Length") is None)
        ck("drip: bytes trickle", r.read(2) == b"<?" and time.monotonic() - t >= 0.9)


def selftest_stats(base: str, ck: Checker) -> None:
    get(f"{base}/reset")
    t = time.monotonic()
    with ThreadPoolExecutor(3) as pool:
        list(pool.map(get, [f"{base}/vast/inline?ads=1&hold_ms=500"] * 3))
    stats = json.loads(get(f"{base}/stats")[2])
    ck("hold_ms: concurrent", time.monotonic() - t < 1.4)
    ck("stats: max_in_flight 3", stats["max_in_flight"] == 3, stats["max_in_flight"])
    ck("stats: in_flight 0", stats["in_flight"] == 0)
    ck("track: 204", get(f"{base}/track/impression?ad=ad-1&n=1")[0] == 204)
    get(f"{base}/vast/inline?ads=1&primary_id=xyz&gdpr=1")
    stats = json.loads(get(f"{base}/stats")[2])
    hit = stats["tracking"][-1]
    ck("track: recorded", hit["event"] == "impression" and hit["query"] == {"ad": "ad-1", "n": "1"}, hit)
    ck("stats: request counts", stats["requests"].get("/vast/inline") == 4, stats["requests"])
    entry = [e for e in stats["log"] if e["query"].get("primary_id") == "xyz"]
    ck("stats: extra params and User-Agent logged",
       len(entry) == 1 and entry[0]["query"]["gdpr"] == "1" and entry[0]["user_agent"] == "cueline-selftest/1")
    req = urllib.request.Request(f"{base}/reset", data=b"", method="POST")
    urllib.request.urlopen(req, timeout=5).read()
    stats = json.loads(get(f"{base}/stats")[2])
    ck("reset: cleared", stats["tracking"] == [] and stats["requests"] == {"/stats": 1}, stats["requests"])


def self_test() -> int:
    started = time.monotonic()
    server = AdServer("127.0.0.1", 0, State("http://media.test/demo"))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    ck = Checker()
    try:
        for step in (selftest_stats, selftest_documents, selftest_wrappers, selftest_hostile):
            step(base, ck)
        ck("self-test under 10 s", time.monotonic() - started < 10, f"{time.monotonic() - started:.1f} s")
    except AssertionError as e:
        print(f"self-test: FAILED: {e}", flush=True)
        return 1
    except Exception as e:  # an unexpected answer is a failure too
        print(f"self-test: FAILED after {ck.n} checks: {type(e).__name__}: {e}", flush=True)
        return 1
    finally:
        server.shutdown()
        server.server_close()
    print(f"self-test: ok ({ck.n} checks)", flush=True)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--media-base", help="base URL of the demo media (ad/pod1.m3u8 ... under it)")
    ap.add_argument("--verbose", action="store_true", help="log requests to stderr")
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    if not args.media_base:
        ap.error("--media-base is required")
    server = AdServer(args.host, args.port, State(args.media_base, args.verbose))
    print(f"listening {server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
