#!/usr/bin/env python3
"""Floods a `cueline serve` on loopback while another process polls an unrelated channel's playlist, and checks that
the playlist keeps being served on time and that the server holds its limits (issue 11: defects 7 and 8).

    flood.py --url http://127.0.0.1:PORT --pid SERVER_PID --busy CHANNEL --events N --quiet CHANNEL
             [--streams 200] [--slowloris 2000] [--idle 6000] [--header-timeout 5] [--max-connections 3000]

Phases, each while the playlist of --quiet is fetched every 50 ms on a new connection (request start to full body):
  baseline   no flood;
  sse        --streams Server-Sent Events subscribers with after=0 on --busy (N events each), read as fast as they
             come; every subscriber must get all N events; one more subscriber is refused with 429 and Retry-After;
  slowloris  --slowloris connections sending a request head one header line every 2 s; the server must close every
             one of them within the header timeout (plus slack);
  idle       --idle connections that send nothing, beyond --max-connections; the server's open descriptors must
             stay under the cap (plus a reserve), and the playlist served.
Exit status 0 when every bound holds; a table of the measurements is printed either way.
"""
import argparse
import asyncio
import multiprocessing
import os
import resource
import socket
import sys
import time
from urllib.parse import urlparse

# Bounds for the playlist of the unrelated channel under each flood, in milliseconds (debug build, a shared
# 2-core machine). Without the limits, the same floods stall it for seconds or for good.
# A player or CDN keeps its connection: strict bounds. A new viewer's connection waits in the kernel's accept queue
# behind whatever connections the flood opened just before it: it must be answered, within a looser bound.
BOUNDS_MS = {"keep-alive": (500, 2000), "new": (2000, 3000)}


def poll_keep_alive(host, port, path, stop, results):
    """One persistent connection (reopened once if the server closed it between two polls)."""
    import http.client
    connection = None
    while not stop.is_set():
        started = time.monotonic()
        status, error = 0, None
        for attempt in (1, 2):
            try:
                if connection is None:
                    connection = http.client.HTTPConnection(host, port, timeout=10)
                connection.request("GET", path)
                response = connection.getresponse()
                response.read()
                status = response.status
                error = None if attempt == 1 else "reconnected"
                break
            except (OSError, http.client.HTTPException) as e:
                connection.close()
                connection = None
                error = "[" + str(e) + "]"
        elapsed = (time.monotonic() - started) * 1000
        results.put((time.time(), elapsed, status, error))
        time.sleep(max(0, 0.05 - elapsed / 1000))


def poll(host, port, path, stop, results):
    """In its own process, so the flood's event loop cannot delay the measurement. A new connection every time."""
    request = f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode()
    while not stop.is_set():
        started = time.monotonic()
        status, error = 0, None
        try:
            with socket.create_connection((host, port), timeout=10) as s:
                connected = time.monotonic()
                s.sendall(request)
                data = b""
                first = None
                while True:
                    chunk = s.recv(65536)
                    first = first or time.monotonic()
                    if not chunk:
                        break
                    data += chunk
                error = f"connect {(connected - started) * 1000:.0f} first byte {((first or connected) - started) * 1000:.0f}"
            status = int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/1.1 ") else 0
        except OSError as e:
            error = "[" + str(e) + "]"
        elapsed = (time.monotonic() - started) * 1000
        results.put((time.time(), elapsed, status, error))
        time.sleep(max(0, 0.05 - elapsed / 1000))


class Poller:
    def __init__(self, host, port, path, target):
        self.results = multiprocessing.Queue()
        self.stop = multiprocessing.Event()
        self.process = multiprocessing.Process(target=target, args=(host, port, path, self.stop, self.results), daemon=True)
        self.samples = []
        self.process.start()

    def take(self):
        """The samples since the last call."""
        out = []
        while not self.results.empty():
            out.append(self.results.get())
        return out

    def close(self):
        self.stop.set()
        self.process.join(15)


def summary(samples):
    latencies = sorted(s[1] for s in samples)
    failed = [s for s in samples if s[2] != 200 or (s[3] or "").startswith("[")]
    if not latencies:
        return {"n": 0, "p50": float("inf"), "p99": float("inf"), "max": float("inf"), "failed": 0}
    pick = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))]
    return {"n": len(latencies), "p50": pick(0.5), "p99": pick(0.99), "max": latencies[-1], "failed": len(failed)}


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def open_fds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


async def subscriber(host, port, path, expected, deadline, release, finished_list):
    """Reads one event stream until it has seen `expected` events, then holds it open until `release` is set;
    returns how many events it saw and when it had them all."""
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nAccept: text/event-stream\r\n\r\n".encode())
    seen, tail = 0, b""
    try:
        while seen < expected and time.monotonic() < deadline:
            chunk = await asyncio.wait_for(reader.read(1 << 16), max(0.1, deadline - time.monotonic()))
            if not chunk:
                break
            data = tail + chunk
            seen += data.count(b"\nid: ")
            tail = data[-6:]
            # A boundary inside the tail is counted again next time: remove what was counted in it.
            seen -= tail.count(b"\nid: ")
    except (asyncio.TimeoutError, OSError):
        pass
    finished = time.monotonic()
    finished_list.append(finished)
    await release.wait()
    writer.close()
    return seen, finished


async def refused_subscriber(host, port, path):
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nAccept: text/event-stream\r\nConnection: close\r\n\r\n".encode())
    try:
        head = await asyncio.wait_for(reader.read(4096), 10)
    except (asyncio.TimeoutError, OSError) as e:
        head = f"(no answer: {e!r})".encode()
    writer.close()
    return head


async def slow_client(host, port, hold):
    """A slowloris: a request head one header line every 2 s. Returns seconds until the server closed it, or None."""
    started = time.monotonic()
    try:
        reader, writer = await asyncio.open_connection(host, port)
        writer.write(f"GET /healthz HTTP/1.1\r\nHost: {host}\r\n".encode())
        while time.monotonic() - started < hold:
            try:
                await asyncio.wait_for(reader.read(4096), 2)
                # Closed, or answered 408 and closed: what should happen.
                writer.close()
                return time.monotonic() - started
            except asyncio.TimeoutError:
                writer.write(b"X-Slow: 1\r\n")
        writer.close()
        return None
    except OSError:
        return time.monotonic() - started


async def idle_client(host, port, hold, closed):
    try:
        reader, writer = await asyncio.open_connection(host, port)
    except OSError:
        return
    try:
        await asyncio.wait_for(reader.read(4096), hold)
        closed.append(1)
    except asyncio.TimeoutError:
        pass
    except OSError:
        closed.append(1)
    writer.close()


async def pipelining_client(host, port, path, requests, hold):
    """Sends `requests` GETs of `path` in a row on one connection and never reads the answers (a 1 KiB receive
    buffer): what the server holds for such a client."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
    sock.setblocking(False)
    try:
        await asyncio.get_running_loop().sock_connect(sock, (host, port))
        reader, writer = await asyncio.open_connection(sock=sock)
        writer.write(f"GET {path} HTTP/1.1\r\nHost: flood\r\n\r\n".encode() * requests)
        # Not drained: the server stops reading once it holds answers, and the client stops sending.
        await asyncio.sleep(hold)
        writer.transport.abort()
    except OSError:
        sock.close()


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--pid", type=int, required=True)
    parser.add_argument("--busy", required=True)
    parser.add_argument("--events", type=int, required=True)
    parser.add_argument("--quiet", required=True)
    parser.add_argument("--streams", type=int, default=200)
    parser.add_argument("--slowloris", type=int, default=2000)
    parser.add_argument("--idle", type=int, default=6000)
    parser.add_argument("--header-timeout", type=float, default=5)
    parser.add_argument("--max-connections", type=int, default=3000)
    parser.add_argument("--pipelining", type=int, default=100)
    parser.add_argument("--pipelined-requests", type=int, default=int(os.environ.get("FLOOD_PIPELINED", "120")))
    parser.add_argument("--phases", default="baseline,sse,slowloris,idle,pipelined")
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    url = urlparse(args.url)
    host, port = url.hostname, url.port
    playlist = f"/channels/{args.quiet}/720p.m3u8"
    pollers = {"keep-alive": Poller(host, port, playlist, poll_keep_alive), "new": Poller(host, port, playlist, poll)}
    failures, rows = [], []

    def take():
        for poller in pollers.values():
            poller.take()

    def measure(phase, extra=""):
        for kind, poller in pollers.items():
            samples = poller.take()
            if os.environ.get("FLOOD_VERBOSE"):
                first = samples[0][0] if samples else 0
                slow = " ".join(f"{t - first:.1f}:{ms:.0f}({e})" for t, ms, _, e in samples if ms > 100 or e == "reconnected")
                print(phase, kind, slow, file=sys.stderr)
            s = summary(samples)
            s["reconnected"] = sum(1 for sample in samples if sample[3] == "reconnected")
            rows.append((phase, kind, s, rss_mb(args.pid), open_fds(args.pid), extra))
            p99, most = BOUNDS_MS[kind]
            if s["n"] == 0 or s["failed"] or s["p99"] > p99 or s["max"] > most:
                failures.append(f"{phase}: the playlist of {args.quiet} was not served on time ({kind} connection): {s}")

    phases = args.phases.split(",")
    baseline_rss = rss_mb(args.pid)
    if "baseline" in phases:
        await asyncio.sleep(3)
        measure("baseline")

    if "sse" in phases:
        take()
        path = f"/channels/{args.busy}/events?after={os.environ.get('FLOOD_AFTER', 0)}"
        started = time.monotonic()
        deadline = started + 40
        release, finished = asyncio.Event(), []
        tasks = [asyncio.create_task(subscriber(host, port, path, args.events, deadline, release, finished))
                 for _ in range(args.streams)]
        peak = rss_mb(args.pid)
        while len(finished) < args.streams:
            await asyncio.sleep(0.5)
            peak = max(peak, rss_mb(args.pid))
        # All of them still open: one more is refused.
        head = await refused_subscriber(host, port, path)
        if not head.startswith(b"HTTP/1.1 429") or b"retry-after:" not in head.lower():
            failures.append(f"sse: subscriber {args.streams + 1} was not refused with 429 and Retry-After: {head[:200]!r}")
        release.set()
        results = await asyncio.gather(*tasks)
        counts = [seen for seen, _ in results]
        took = max(finished for _, finished in results) - started
        short = [c for c in counts if c < args.events]
        measure("sse", f"{args.streams} streams x {args.events} events in {took:.1f} s; peak RSS {peak:.0f} MB")
        if peak > baseline_rss + 100:
            failures.append(f"sse: the server grew from {baseline_rss:.0f} to {peak:.0f} MB (bound: +100 MB)")
        if short:
            failures.append(f"sse: {len(short)} of {args.streams} subscribers got fewer than {args.events} events (least {min(short)})")

    if "slowloris" in phases:
        take()
        hold = args.header_timeout + 6
        results = await asyncio.gather(*(slow_client(host, port, hold) for _ in range(args.slowloris)))
        open_left = sum(1 for r in results if r is None)
        slowest = max((r for r in results if r is not None), default=0)
        measure("slowloris", f"{args.slowloris} connections; {open_left} left open after {hold:.0f} s; last closed after {slowest:.1f} s")
        if open_left:
            failures.append(f"slowloris: {open_left} of {args.slowloris} connections were still open after {hold:.0f} s")

    if "idle" in phases:
        take()
        closed = []
        peak_fds = 0
        tasks = []
        for i in range(args.idle):
            tasks.append(asyncio.create_task(idle_client(host, port, 8, closed)))
            if i % 200 == 0:
                await asyncio.sleep(0.01)
                peak_fds = max(peak_fds, open_fds(args.pid))
        while not all(t.done() for t in tasks):
            await asyncio.sleep(0.25)
            peak_fds = max(peak_fds, open_fds(args.pid))
        measure("idle", f"{args.idle} connections; server closed {len(closed)}; peak open descriptors {peak_fds}")
        if peak_fds > args.max_connections + 300:
            failures.append(f"idle: the server held {peak_fds} descriptors, above its cap of {args.max_connections} (+300)")
        # Memory taken by the flood's connections is given back within a few seconds.
        await asyncio.sleep(4)
        measure("after", "")
        if rss_mb(args.pid) > baseline_rss + 50:
            failures.append(f"after: the server holds {rss_mb(args.pid):.0f} MB, {baseline_rss:.0f} MB before the floods (bound: +50 MB)")

    if "pipelined" in phases:
        take()
        before = rss_mb(args.pid)
        tasks = [asyncio.create_task(pipelining_client(host, port, "/openapi.json", args.pipelined_requests, 6)) for _ in range(args.pipelining)]
        peak = before
        while not all(t.done() for t in tasks):
            await asyncio.sleep(0.25)
            peak = max(peak, rss_mb(args.pid))
        measure("pipelined", f"{args.pipelining} connections x {args.pipelined_requests} GET /openapi.json sent, none read; peak RSS {peak:.0f} MB")
        # Answered one at a time as the socket takes them: a connection costs its send buffer and an answer or two.
        # Answered all at once into the connection's buffer, 100 such connections took 1.3 GB here.
        if peak > before + 150:
            failures.append(f"pipelined: the server grew from {before:.0f} to {peak:.0f} MB (bound: +150 MB)")

    for poller in pollers.values():
        poller.close()
    print(f"{'phase':<10} {'poller':<10} {'polls':>5} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'failed':>6} {'reconn':>6} {'RSS MB':>7} {'fds':>6}  notes")
    for phase, kind, s, rss, fds, extra in rows:
        print(f"{phase:<10} {kind:<10} {s['n']:>5} {s['p50']:>8.1f} {s['p99']:>8.1f} {s['max']:>8.1f} {s['failed']:>6} {s['reconnected']:>6} {rss:>7.0f} {fds:>6}  {extra if kind == 'new' else ''}")
    print("bounds (p99, max ms): " + ", ".join(f"{k} {v}" for k, v in BOUNDS_MS.items()) + "; no failed poll")
    for failure in failures:
        print("FAIL:", failure, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
