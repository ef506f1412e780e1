#!/usr/bin/env python3
"""Viewers joining at once: N asset-list requests spread evenly over SPREAD seconds, each on a connection of its
own (as N players would), each timed from its send to its whole answer. Prints one JSON line:
{"viewers", "answered", "decided", "fallback", "p50_ms", "p99_ms", "max_ms", "errors"}.

    ads_join.py URL --viewers 1000 --spread 1.0 [--timeout 10]

A list is "decided" when it carries X-AD-CREATIVE-SIGNALING or more than the fallback's assets (--fallback-uri
names the fallback's asset: a list holding only it is a fallback). stdlib only (asyncio streams).
"""

import argparse
import asyncio
import json
import time
import urllib.parse


async def one(url: urllib.parse.SplitResult, path: str, delay: float, timeout: float, fallback: str) -> dict:
    await asyncio.sleep(delay)
    started = time.monotonic()
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(url.hostname, url.port or 80), timeout)
        writer.write(f"GET {path} HTTP/1.1\r\nHost: {url.netloc}\r\nConnection: close\r\n\r\n".encode())
        await writer.drain()
        body = await asyncio.wait_for(reader.read(), timeout)
        writer.close()
        elapsed = (time.monotonic() - started) * 1000
        head, _, payload = body.partition(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1]) if head else 0
        if status != 200:
            return {"ok": False, "ms": elapsed, "error": f"status {status}"}
        text = payload.decode("utf-8", "replace")
        # chunked bodies: good enough to find the markers in
        decided = "X-AD-CREATIVE-SIGNALING" in text or (fallback and fallback not in text and '"URI"' in text)
        return {"ok": True, "ms": elapsed, "decided": bool(decided)}
    except Exception as error:  # noqa: BLE001 - a viewer that got no answer, whatever the reason
        return {"ok": False, "ms": (time.monotonic() - started) * 1000, "error": type(error).__name__}


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("--viewers", type=int, default=1000)
    parser.add_argument("--spread", type=float, default=1.0)
    parser.add_argument("--timeout", type=float, default=10.0)
    parser.add_argument("--fallback-uri", default="")
    args = parser.parse_args()
    url = urllib.parse.urlsplit(args.url)
    base_path = url.path + ("?" + url.query if url.query else "")
    tasks = []
    for viewer in range(args.viewers):
        sep = "&" if "?" in base_path else "?"
        path = f"{base_path}{sep}_HLS_primary_id=viewer-{viewer}"
        tasks.append(one(url, path, args.spread * viewer / args.viewers, args.timeout, args.fallback_uri))
    results = await asyncio.gather(*tasks)
    times = sorted(r["ms"] for r in results if r["ok"])

    def pct(p: float) -> float:
        return round(times[min(len(times) - 1, int(p * len(times)))], 1) if times else -1

    errors: dict = {}
    for r in results:
        if not r["ok"]:
            errors[r["error"]] = errors.get(r["error"], 0) + 1
    print(json.dumps({
        "viewers": args.viewers, "answered": len(times),
        "decided": sum(1 for r in results if r.get("decided")),
        "fallback": sum(1 for r in results if r["ok"] and not r.get("decided")),
        "p50_ms": pct(0.5), "p99_ms": pct(0.99), "max_ms": round(times[-1], 1) if times else -1, "errors": errors,
    }))


if __name__ == "__main__":
    asyncio.run(main())
