#!/usr/bin/env python3
"""One attack on `cueline serve` (issue 34) while an unrelated channel's playlist is fetched from a new connection
every 50 ms and, where the attack has one, another tenant's read or command is repeated: prints their figures as one
JSON line and exits 1 when a bound is broken.

Attacks (--attack):
  held      N connections from this address each holding an LL-HLS blocking reload, sending another when answered or
            refused, reconnecting when closed (defect 1)
  bodies    N connections sending a request body at one byte a second (defect 2)
  schedule  8 loops of GET /channels/{big}/schedule with a viewer token (defect 3)
  audit     6 loops of GET /channels/{big}/as-run with one token; another token's audit reads measured (defect 5)
  lock      a psql transaction holds one channel's row in the log; commands on other channels measured (defect 4)

Bounds: the new-connection playlist GETs: >= 99 % answered 200, p99 < 100 ms; another tenant's reads: >= 99 % 200;
commands on other channels (lock): p99 < 200 ms, all 201."""
import argparse
import asyncio
import json
import resource
import subprocess
import sys
import time

soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


async def request(host, port, raw, timeout=5.0):
    """Sends `raw` on a new connection; (status, seconds, body) of the first answer, status 0 on failure."""
    started = time.monotonic()
    writer = None
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
        connected = time.monotonic() - started
        writer.write(raw)
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout)
        status = int(head.split(b" ", 2)[1])
        length = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":", 1)[1])
        body = await asyncio.wait_for(reader.readexactly(length), timeout) if length else b""
        return status, time.monotonic() - started, body, connected
    except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError, ValueError, IndexError) as error:
        return 0, time.monotonic() - started, repr(error).encode(), None
    finally:
        if writer:
            writer.close()


def get(path, token=None):
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    return f"GET {path} HTTP/1.1\r\nHost: x\r\n{auth}Connection: close\r\n\r\n".encode()


async def repeat(host, port, raw, stop, samples, every=0.05):
    while not stop.is_set():
        samples.append(await request(host, port, raw))
        await asyncio.sleep(every)


def summary(samples, ok=(200,)):
    if not samples:
        return {"count": 0}
    times = sorted(s[1] for s in samples)
    good = sum(1 for s in samples if s[0] in ok)
    statuses = {}
    for s in samples:
        statuses[str(s[0])] = statuses.get(str(s[0]), 0) + 1
    connects = sorted(s[3] for s in samples if s[3] is not None) or [0]
    return {"count": len(samples), "ok": round(good / len(samples), 4),
            "connect_p99_ms": round(connects[min(len(connects) - 1, int(len(connects) * 0.99))] * 1000, 1),
            "p50_ms": round(times[len(times) // 2] * 1000, 1),
            "p99_ms": round(times[min(len(times) - 1, int(len(times) * 0.99))] * 1000, 1),
            "max_ms": round(times[-1] * 1000, 1), "statuses": statuses}


def next_part(path, body):
    """The blocking reload a player sends next: for the part the answer hints at (the one in progress)."""
    for line in body.decode(errors="replace").splitlines():
        if line.startswith("#EXT-X-PRELOAD-HINT"):
            msn, part = (int(x) for x in line.split("seg")[-1].split(".")[:2])
            return path.split("?")[0] + f"?_HLS_msn={msn}&_HLS_part={part}"
    return path


async def holder(host, port, path, stop):
    """Holds a blocking reload, as an LL-HLS player does: once answered, asks for the part the answer hints at (held
    again until it is out); when refused, asks again after the Retry-After second; reconnects when closed."""
    while not stop.is_set():
        writer = None
        try:
            reader, writer = await asyncio.open_connection(host, port)
            while not stop.is_set():
                writer.write(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 15)
                length = next((int(l.split(b":")[1]) for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")), 0)
                body = await reader.readexactly(length)
                path = next_part(path, body)
                if b" 503 " in head.split(b"\r\n")[0]:
                    # Refused: asks again after the Retry-After second (on the same connection while it stays open,
                    # on a new one once it is closed, as the report's clients did).
                    await asyncio.sleep(1)
        except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError, ValueError):
            pass
        finally:
            if writer:
                writer.close()
        await asyncio.sleep(1)


async def dripper(host, port, stop):
    """Sends a 60,000-byte body at one byte a second; reconnects when answered or closed."""
    while not stop.is_set():
        writer = None
        try:
            reader, writer = await asyncio.open_connection(host, port)
            writer.write(b"POST /hooks/scores HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 60000\r\n\r\n")
            while not stop.is_set():
                writer.write(b"{")
                await writer.drain()
                await asyncio.sleep(1)
        except (OSError, asyncio.TimeoutError):
            await asyncio.sleep(0.1)
        finally:
            if writer:
                writer.close()


async def looper(host, port, raw, stop):
    while not stop.is_set():
        await request(host, port, raw, timeout=60)


async def attack(args, host, path):
    """The attackers alone, in a process of their own (so the measuring loop is not slowed by theirs)."""
    stop = asyncio.Event()
    if args.attack == "held":
        tasks = [asyncio.create_task(holder(host, args.port, path, stop)) for _ in range(args.connections)]
    elif args.attack == "bodies":
        tasks = [asyncio.create_task(dripper(host, args.port, stop)) for _ in range(args.connections)]
    else:
        route = "schedule" if args.attack == "schedule" else "as-run"
        raw = get(f"/channels/{args.target}/{route}", args.attacker_token)
        tasks = [asyncio.create_task(looper(host, args.port, raw, stop)) for _ in range(8 if args.attack == "schedule" else 6)]
    await asyncio.sleep(args.seconds + 5)
    stop.set()
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def main():
    p = argparse.ArgumentParser()
    p.add_argument("--attack", required=True, choices=["held", "bodies", "schedule", "audit", "lock"])
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--quiet", default="quiet", help="the unrelated channel whose playlist is measured")
    p.add_argument("--target", help="the attacked channel (LL for held, the big one for schedule/audit, locked for lock)")
    p.add_argument("--connections", type=int, default=4200)
    p.add_argument("--seconds", type=float, default=15)
    p.add_argument("--attacker-token")
    p.add_argument("--tenant-token", help="another tenant's token, whose reads (or, for lock, commands) are measured")
    p.add_argument("--tenant-path", help="what the other tenant reads")
    p.add_argument("--database-url")
    p.add_argument("--psql", default="psql")
    p.add_argument("--path", help=argparse.SUPPRESS)
    p.add_argument("--attacker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    host = "127.0.0.1"
    if args.attacker:
        return await attack(args, host, args.path)
    stop = asyncio.Event()
    result = {"attack": args.attack}
    path = None

    if args.attack == "held":
        status, _, body, _ = await request(host, args.port, get(f"/channels/{args.target}/720p.m3u8"))
        hint = [l for l in body.decode().splitlines() if l.startswith("#EXT-X-PRELOAD-HINT")]
        if status != 200 or not hint:
            sys.exit(f"the LL channel's playlist has no preload hint: {status} {body[:200]!r}")
        msn, part = (int(x) for x in hint[0].split("seg")[-1].split(".")[:2])
        path = f"/channels/{args.target}/720p.m3u8?_HLS_msn={msn + 1}&_HLS_part={part}"
    attackers = None
    if args.attack != "lock":
        attackers = subprocess.Popen([sys.executable, __file__, "--attacker", "--path", path or ""] + sys.argv[1:])
    lock = None
    if args.attack == "lock":
        # Holds the row for the whole phase, then rolls back.
        lock = subprocess.Popen([args.psql, args.database_url, "-q", "-c",
                                 f"BEGIN; SELECT 1 FROM cueline_streams WHERE channel = '{args.target}' FOR UPDATE; "
                                 f"SELECT pg_sleep({args.seconds + 3}); ROLLBACK;"], stdout=subprocess.DEVNULL)
    await asyncio.sleep(3 if args.attack in ("held", "bodies") else 1)

    playlists, tenant, commands, locked = [], [], [], []
    measures = [asyncio.create_task(repeat(host, args.port, get(f"/channels/{args.quiet}/720p.m3u8"), stop, playlists))]
    if args.tenant_path:
        measures.append(asyncio.create_task(repeat(host, args.port, get(args.tenant_path, args.tenant_token), stop, tenant, every=0.2)))
    failures = []
    if args.attack == "lock":
        counter = [0]

        async def asset_list(reader, writer):
            await reader.readuntil(b"\r\n\r\n")
            body = b'{"ASSETS":[{"URI":"http://127.0.0.1:1/ad.m3u8","DURATION":10}]}'
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body))
            await writer.drain()
            writer.close()
        list_server = await asyncio.start_server(asset_list, host, 0)
        list_url = f"http://{host}:{list_server.sockets[0].getsockname()[1]}/list.json"

        async def command(channel, into):
            while not stop.is_set():
                counter[0] += 1
                # An external asset list is not read when placed: the command is the decision and the append.
                body = json.dumps({"command": "place_break", "id": f"lock-{counter[0]}", "in": 3000 + 20 * counter[0],
                                   "duration": 10, "asset_list": list_url})
                auth = f"Authorization: Bearer {args.tenant_token}\r\n" if args.tenant_token else ""
                raw = (f"POST /channels/{channel}/commands HTTP/1.1\r\nHost: x\r\n{auth}Content-Type: application/json\r\n"
                       f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n{body}").encode()
                answer = await request(host, args.port, raw, timeout=10)
                into.append(answer)
                if answer[0] not in (201, 503) and len(failures) < 3:
                    failures.append(f"{channel}: {answer[0]} {answer[2][:300]!r}")
                await asyncio.sleep(0.1)
        measures.append(asyncio.create_task(command(args.quiet, commands)))
        measures.append(asyncio.create_task(command(args.target, locked)))
    await asyncio.sleep(args.seconds)
    stop.set()
    for task in measures:
        task.cancel()
    await asyncio.gather(*measures, return_exceptions=True)
    if attackers:
        attackers.terminate()
        attackers.wait(timeout=30)
    if lock:
        lock.wait(timeout=30)

    result["playlists"] = summary(playlists)
    failed = [f"{s[0]} after {s[1]:.3f} s: {s[2][:160]!r}" for s in playlists if s[0] != 200][:3]
    if failed:
        result["playlist_failures"] = failed
    problems = []
    bound = 100
    result["playlists"]["p99_bound_ms"] = bound
    if result["playlists"]["count"] < 20 or result["playlists"]["ok"] < 0.99 or result["playlists"]["p99_ms"] >= bound:
        problems.append("the unrelated channel's playlist from new connections")
    if args.tenant_path:
        result["tenant"] = summary(tenant)
        if result["tenant"]["count"] < 5 or result["tenant"]["ok"] < 0.99:
            problems.append("the other tenant's reads")
    if args.attack == "lock":
        result["commands"] = summary(commands, ok=(201,))
        result["locked_channel"] = summary(locked, ok=(503,))
        if result["commands"]["count"] < 10 or result["commands"]["ok"] < 1 or result["commands"]["p99_ms"] >= 200:
            problems.append("commands on other channels")
        if result["locked_channel"]["count"] == 0 or result["locked_channel"]["ok"] < 1:
            problems.append("the locked channel's commands (503, nothing written)")
    if failures:
        result["failures"] = failures
    result["problems"] = problems
    print(json.dumps(result))
    sys.exit(1 if problems else 0)


asyncio.run(main())
