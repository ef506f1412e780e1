#!/usr/bin/env python3
"""A notification subscriber for scripts/faults/fault-notifications.sh (stdlib only).

    notify_receiver.py PORT SECRET LOG [MODE_FILE]

Checks every delivery's X-Cueline-Signature (sha256=<HMAC-SHA256 of "<timestamp>.<body>"> under SECRET) and that
X-Cueline-Timestamp is within 300 s, and appends one JSON line per request to LOG (kept across restarts):
{"received": unix seconds, "delivery", "valid", "status", "body"}. The answer depends on MODE_FILE's first word,
read at each request: "ok" (200, the default), "fail" (500), "slow" (200 after 3 s).
"""
import hashlib
import hmac
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

port, secret, log_path = int(sys.argv[1]), sys.argv[2].encode(), sys.argv[3]
mode_path = sys.argv[4] if len(sys.argv) > 4 else None
lock = threading.Lock()


def mode():
    if not mode_path:
        return "ok"
    try:
        with open(mode_path) as f:
            return (f.read().split() or ["ok"])[0]
    except OSError:
        return "ok"


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        timestamp = self.headers.get("X-Cueline-Timestamp", "")
        signature = self.headers.get("X-Cueline-Signature", "")
        expected = "sha256=" + hmac.new(secret, timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
        fresh = timestamp.isdigit() and abs(time.time() - int(timestamp)) <= 300
        valid = hmac.compare_digest(signature, expected) and fresh
        current = mode()
        status = 500 if current == "fail" or not valid else 200
        if current == "slow":
            time.sleep(3)
        try:
            payload = json.loads(body)
        except ValueError:
            payload = None
        with lock, open(log_path, "a") as f:
            f.write(json.dumps({"received": time.time(), "delivery": self.headers.get("X-Cueline-Delivery"),
                                "valid": valid, "status": status, "body": payload}) + "\n")
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
