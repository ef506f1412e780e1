#!/usr/bin/env python3
"""An upstream that behaves like a real LL-HLS packager, for relay channels with parts (tests, no GPAC here).

Each rendition's live media playlist is at /<rendition>/index.m3u8: segments of --segment seconds made of parts of
--part seconds, the first segment of the clock starting --lead seconds before the server started, on a whole second.
As a packager does it:
- a part appears at its end on the wall clock, the segment when its last part has;
- parts are listed for the segments within 3 target durations of the end, then the parts of the segment in progress;
- EXT-X-PRELOAD-HINT names the next part; EXT-X-RENDITION-REPORT reports every other rendition (relative URIs);
- EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES: _HLS_msn/_HLS_part hold the request until that part exists
  (400 for a segment more than two ahead, 503 after 3 target durations);
- an upstream interstitial date range of its own, which the relay must drop.

GET /stats answers {"blocking": n, "plain": n}: how many playlist requests held or not (did the relay block?).
Prints "listening PORT EPOCH" on its first line of output (EPOCH: when segment 0 started, in Unix seconds).
"""

import argparse
import datetime
import http.server
import json
import math
import signal
import socket
import sys
import threading
import time
import urllib.parse


def iso(seconds):
    moment = datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (round(seconds * 1000) % 1000)


class Packager:
    def __init__(self, args):
        self.segment = args.segment
        self.part = args.part
        self.parts_per_segment = round(args.segment / args.part)
        self.window = args.window
        self.renditions = args.renditions.split(",")
        self.epoch = math.floor(time.time()) - args.lead
        self.target = math.ceil(args.segment)
        self.lock = threading.Lock()
        self.stats = {"blocking": 0, "plain": 0}

    def completed_parts(self, now):
        return int((now - self.epoch) // self.part)

    def boundary(self, parts):
        return self.epoch + parts * self.part

    def playlist(self, rendition, completed):
        pps = self.parts_per_segment
        segments, partial = divmod(completed, pps)
        first = max(0, segments - self.window)
        end = self.boundary(completed)
        lines = [
            "#EXTM3U",
            "#EXT-X-VERSION:6",
            "#EXT-X-TARGETDURATION:%d" % self.target,
            "#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,PART-HOLD-BACK=%.3f" % (3 * self.part),
            "#EXT-X-PART-INF:PART-TARGET=%.3f" % self.part,
            "#EXT-X-MEDIA-SEQUENCE:%d" % first,
            '#EXT-X-MAP:URI="init.mp4"',
        ]

        def parts(n, count):
            for p in range(count):
                independent = ",INDEPENDENT=YES" if p == 0 else ""
                lines.append('#EXT-X-PART:DURATION=%.3f,URI="seg%d.%d.m4s"%s' % (self.part, n, p, independent))

        for n in range(first, segments):
            start = self.epoch + n * self.segment
            lines.append("#EXT-X-PROGRAM-DATE-TIME:" + iso(start))
            if n == first:
                # The packager's own ad marker: a relay channel's schedule owns interstitials, so this one is dropped.
                lines.append(
                    '#EXT-X-DATERANGE:ID="upstream-ad-%d",CLASS="com.apple.hls.interstitial",START-DATE="%s",'
                    'DURATION=1.0,X-ASSET-URI="https://upstream.example/ad.m3u8"' % (n, iso(start)))
            if start >= end - 3 * self.target:
                parts(n, pps)
            lines.append("#EXTINF:%.5f," % self.segment)
            lines.append("seg%d.m4s" % n)
        parts(segments, partial)
        lines.append('#EXT-X-PRELOAD-HINT:TYPE=PART,URI="seg%d.%d.m4s"' % (segments, partial))
        last_msn, last_part = (segments, partial - 1) if partial > 0 else (segments - 1, pps - 1)
        for other in self.renditions:
            if other != rendition:
                lines.append('#EXT-X-RENDITION-REPORT:URI="../%s/index.m3u8",LAST-MSN=%d,LAST-PART=%d' % (other, last_msn, last_part))
        return "\n".join(lines) + "\n"


def make_handler(packager):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def setup(self):
            super().setup()
            # Headers and body are two writes: without this, Nagle holds the body for the client's delayed ACK (40 ms).
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def send(self, status, body, content_type):
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Cache-Control", "no-cache")
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            url = urllib.parse.urlsplit(self.path)
            if url.path == "/stats":
                with packager.lock:
                    return self.send(200, json.dumps(packager.stats), "application/json")
            parts = url.path.strip("/").split("/")
            if len(parts) == 2 and parts[0] in packager.renditions and parts[1] == "index.m3u8":
                return self.playlist(parts[0], urllib.parse.parse_qs(url.query))
            if len(parts) == 2 and parts[0] in packager.renditions:
                return self.send(200, "media", "video/mp4")
            self.send(404, "not found", "text/plain")

        def playlist(self, rendition, query):
            pps = packager.parts_per_segment
            now = time.time()
            completed = packager.completed_parts(now)
            if "_HLS_msn" not in query:
                with packager.lock:
                    packager.stats["plain"] += 1
                return self.send(200, packager.playlist(rendition, completed), "application/vnd.apple.mpegurl")
            msn = int(query["_HLS_msn"][0])
            part = int(query["_HLS_part"][0]) if "_HLS_part" in query else None
            if msn > completed // pps - 1 + 2:
                return self.send(400, "_HLS_msn too far ahead", "text/plain")
            target = msn * pps + (pps - 1 if part is None else min(part, pps)) + 1
            with packager.lock:
                packager.stats["blocking"] += 1
            ready = packager.boundary(target)
            if ready - now > 3 * packager.target:
                return self.send(503, "not within 3 target durations", "text/plain")
            if ready > now:
                time.sleep(ready - now)
            completed = max(target, packager.completed_parts(time.time()))
            self.send(200, packager.playlist(rendition, completed), "application/vnd.apple.mpegurl")

    return Handler


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--segment", type=float, default=1.0)
    parser.add_argument("--part", type=float, default=0.25)
    parser.add_argument("--window", type=int, default=8)
    parser.add_argument("--lead", type=int, default=20, help="seconds of segments before the start")
    parser.add_argument("--renditions", default="720p,480p")
    args = parser.parse_args()
    # A parent may have SIGTERM blocked or ignored (a test runner): stop on it anyway.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    packager = Packager(args)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), make_handler(packager))
    server.daemon_threads = True
    print("listening %d %d" % (server.server_address[1], packager.epoch), flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
