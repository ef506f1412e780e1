"""One generated request and what the fuzzer knows about it (fuzz_http.py), and how requests and answers are
written in findings: tokens by name, bodies cut short."""
import json


class Req:
    """One generated request and what the harness knows about it."""
    __slots__ = ("id", "method", "path", "headers", "body", "route", "tags", "bad", "bad_field", "kind", "channel",
                 "key", "marker", "token", "raw", "t0", "t1", "resp", "note", "expect_auth", "stream")

    def __init__(self, method, path, route, kind, headers=None, body=None, tags=None, token=None):
        self.id = 0
        self.method, self.path, self.route, self.kind = method, path, route, kind
        self.headers = list(headers or [])
        self.body = body
        self.tags = list(tags or [])
        self.bad = False
        self.bad_field = None
        self.channel = None
        self.key = None
        self.marker = None
        self.token = token
        self.raw = None
        self.t0 = self.t1 = 0.0
        self.resp = None
        self.note = None
        self.expect_auth = None
        self.stream = False

    def describe(self, limit=600):
        def short(x):
            if x is None:
                return ""
            if isinstance(x, bytes):
                x = x.decode("utf-8", "backslashreplace")
            x = x.encode("unicode_escape").decode("ascii")
            return x if len(x) <= limit else x[:limit] + f"…(+{len(x) - limit} chars)"
        hs = " ".join(f"-H {short(k)}:{short(v if k.lower() != 'authorization' else redact(v))}" for k, v in self.headers)
        return f"{self.method} {short(self.path)} {hs} {('body=' + short(self.body)) if self.body is not None else ''}".strip()


TOKEN_NAMES = {}


def redact(value):
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    for name, secret in TOKEN_NAMES.items():
        if secret and secret in value:
            return value.replace(secret, f"<{name} token>")
    return value if len(value) < 80 else value[:60] + "…"


def short_body(r, limit=240):
    if r is None:
        return ""
    if r.error:
        return f"({r.error})"
    t = r.body.decode("utf-8", "backslashreplace").strip()
    return t if len(t) <= limit else t[:limit] + "…"


def short_json(v, limit=160):
    t = json.dumps(v)
    return t if len(t) <= limit else t[:limit] + "…"


def snippet_around(body, byte):
    i = body.find(bytes([byte]))
    return repr(body[max(0, i - 60):i + 30])
