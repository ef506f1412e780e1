"""HTTP over a raw socket for the fuzzer (fuzz_http.py): full control over the request line, headers and body
(http.client refuses most of what a hostile client sends). One connection per request, `Connection: close`."""
import json
import socket
import time


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
