#!/usr/bin/env python3
"""LL-HLS clients for scripts/bench/bench-ll.sh: N clients over C channels, each blocking on the next part as a player
does (`_HLS_msn` / `_HLS_part` from the preload hint), on kept HTTP/1.1 connections. Records, for every answer, how long
after its part's boundary it arrived (the part boundary is epoch + (msn * parts + part + 1) * part duration), and, for
the early-return trials, how long after the command was sent a client blocked on its channel held the augmenting tag.
Prints one JSON object."""
import asyncio, json, re, sys, time, urllib.request

host, port = sys.argv[1], int(sys.argv[2])
channels, clients, seconds = int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
epoch_ms, part_ms, parts = int(sys.argv[6]), int(sys.argv[7]), int(sys.argv[8])
token, trials = sys.argv[9], int(sys.argv[10])
HINT = re.compile(rb'PRELOAD-HINT:TYPE=PART,URI="[^"]*seg(\d+)\.(\d+)\.m4s"')
lateness, errors = [], []
holding = {}  # channel -> (time the playlist with X-PLAYOUT-LIMIT for the trial break first arrived)

async def request(reader, writer, path):
    writer.write(f"GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))
    body = await reader.readexactly(length)
    return status, body

first_client = int(sys.argv[11]) if len(sys.argv) > 11 else 0

async def client(index, stop):
    channel = f"ll-{(first_client + index) % channels}"
    path = f"/channels/{channel}/720p.m3u8"
    reader, writer = await asyncio.open_connection(host, port)
    status, body = await request(reader, writer, path)
    while time.time() < stop:
        m = HINT.search(body)
        if not m:
            errors.append(f"no hint ({status})"); break
        msn, part = int(m.group(1)), int(m.group(2))
        status, body = await request(reader, writer, f"{path}?_HLS_msn={msn}&_HLS_part={part}")
        now = time.time() * 1000
        if status != 200:
            errors.append(str(status)); continue
        boundary = epoch_ms + (msn * parts + part + 1) * part_ms
        lateness.append(now - boundary)
        if b"brk-trial" in body and b"X-PLAYOUT-LIMIT" in body and channel not in holding:
            holding[channel] = now
    writer.close()

def post(channel, command):
    request = urllib.request.Request(
        f"http://{host}:{port}/channels/{channel}/commands", data=json.dumps(command).encode(), method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        return answer.status

async def trials_run(stop):
    """On channels ll-0 .. ll-(trials-1): a break on air, then cancel_current_event; the time from sending it to the
    first blocked client of that channel holding the augmenting tag."""
    loop = asyncio.get_running_loop()
    sent = {}
    await asyncio.sleep(2)
    for t in range(trials):
        channel = f"ll-{t}"
        await loop.run_in_executor(None, post, channel, {"command": "place_break", "id": "brk-trial", "in": 1, "duration": 30, "asset_list": "https://ads.example.com/list.json"})
    await asyncio.sleep(3)  # every trial break on air
    for t in range(trials):
        channel = f"ll-{t}"
        # Spread over part phases: each command at a different point of a part.
        await asyncio.sleep(0.137)
        sent[channel] = time.time() * 1000
        await loop.run_in_executor(None, post, channel, {"command": "cancel_current_event"})
    return sent

async def main():
    stop = time.time() + seconds
    tasks = [asyncio.create_task(client(i, stop)) for i in range(clients)]
    sent = await trials_run(stop) if trials else {}
    await asyncio.gather(*tasks, return_exceptions=True)
    lateness.sort()
    def pct(values, p): return round(values[min(len(values) - 1, int(len(values) * p))], 1) if values else None
    delays = sorted(holding[c] - sent[c] for c in sent if c in holding)
    print(json.dumps({
        "answers": len(lateness), "errors": len(errors), "error_kinds": sorted(set(errors))[:5],
        "late_p50_ms": pct(lateness, 0.5), "late_p99_ms": pct(lateness, 0.99), "late_max_ms": round(lateness[-1], 1) if lateness else None,
        "trials": len(sent), "trials_seen": len(delays),
        "command_to_client_p50_ms": pct(delays, 0.5), "command_to_client_p99_ms": pct(delays, 0.99),
        "command_to_client_max_ms": round(delays[-1], 1) if delays else None,
        "lateness_ms": [round(x, 2) for x in lateness], "delays_ms": [round(x, 1) for x in delays]}))

asyncio.run(main())
