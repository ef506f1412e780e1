"""The fuzzer's adversarial values (fuzz_http.py): JSON written with raw tokens, and the numbers, strings, URIs, ids
and instants its generators put into requests."""
import json
import time

# ---------------------------------------------------------------------------------------------------------------
# JSON with raw tokens: numbers JSON cannot express through json.dumps (1e309, -0, NaN) go in verbatim.


class Raw(str):
    pass


def enc(v, ascii_only=True):
    if isinstance(v, Raw):
        return str(v)
    if isinstance(v, dict):
        return "{" + ",".join(json.dumps(k, ensure_ascii=ascii_only) + ":" + enc(x, ascii_only) for k, x in v.items()) + "}"
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(enc(x, ascii_only) for x in v) + "]"
    return json.dumps(v, ensure_ascii=ascii_only)


def body_bytes(obj, rng):
    return enc(obj, ascii_only=rng.random() < 0.5).encode("utf-8", "surrogatepass")


# ---------------------------------------------------------------------------------------------------------------
# Adversarial values. Each is (tag, value, bad) where bad says the value is outside what the API documents, so a
# 4xx naming the field is the right answer.

NUMBERS = [
    ("num:1e300", Raw("1e300"), True), ("num:-1e300", Raw("-1e300"), True), ("num:-0", Raw("-0"), False),
    ("num:int64max", Raw("9223372036854775807"), True), ("num:int64max+1", Raw("9223372036854775808"), True),
    ("num:int64min", Raw("-9223372036854775808"), True), ("num:1e309", Raw("1e309"), True),
    ("num:str1e309", "1e309", True), ("num:NaN", Raw("NaN"), True), ("num:Infinity", Raw("Infinity"), True),
    ("num:neg", Raw("-5"), True), ("num:tiny", Raw("1e-320"), False), ("num:86400", Raw("86400"), None),
    ("num:86400.0001", Raw("86400.0001"), True), ("num:3600.5", Raw("3600.5"), None), ("num:9.2e15", Raw("9.3e15"), True),
    ("num:str", "30", True), ("num:null", None, True), ("num:true", True, True), ("num:list", [30], True),
    ("num:obj", {"s": 30}, True), ("num:0", Raw("0"), None), ("num:frac", Raw("0.0005"), None),
    ("num:manydigits", Raw("1." + "9" * 400), None), ("num:exp", Raw("3e1"), False),
]

STRINGS = [
    ("str:nul", "before\x00after"), ("str:tab", "a\tb"), ("str:esc", "\x1b[31mred\x1b[0m"), ("str:del", "a\x7fb"),
    ("str:crlf", "a\r\nb"), ("str:endlist", "x\n#EXT-X-ENDLIST"), ("str:quote", 'a"b'), ("str:backslash", "a\\b\\"),
    ("str:unicode", "ü日本🎬\u200f\u202e"), ("str:u2028", "a\u2028b"), ("str:bom", "\ufeffx"),
    ("str:surrogate", "x\ud800y"), ("str:100k", "x" * 100_000), ("str:5k", "y" * 5000),
    ("str:sql", "'); DROP TABLE cueline_events; --"), ("str:sql2", "$$ || pg_sleep(5) || $$"), ("str:empty", ""),
    ("str:space", " "), ("str:attr", '",X-EVIL="1'), ("str:percent", "%00%0a%s%n%x"), ("str:bell", "a\x07b"),
    ("str:c1", "a\u0085b\u009bc"),
]

URIS = [
    ("uri:ok", "https://ads.example.com/a.m3u8", False), ("uri:relative", "ad/a.m3u8", None),
    ("uri:js", "javascript:alert(1)", None), ("uri:leadspace", " https://ads.example.com/a.m3u8", True),
    ("uri:newline", "https://ads.example.com/a.m3u8\n#EXT-X-ENDLIST", True), ("uri:empty", "", True),
    ("uri:huge", "https://ads.example.com/" + "a" * 100_000, None), ("uri:space", "https://ads example.com/", True),
    ("uri:file", "file:///etc/passwd", None), ("uri:nul", "https://ads.example.com/a\x00.m3u8", True),
    ("uri:esc", "https://ads.example.com/\x1b[2J", True), ("uri:tab", "https://ads.example.com/\ta", True),
    ("uri:quote", 'https://ads.example.com/a".m3u8', True), ("uri:unicode", "https://ads.example.com/ü🎬.m3u8", None),
]

BAD_IDS = [
    ("id:upper", "BRK-1", True), ("id:65", "a" * 65, True), ("id:dots", "../x", True), ("id:space", "a b", True),
    ("id:empty", "", True), ("id:unicode", "brk-ü", True), ("id:nul", "brk\x00x", True), ("id:slash", "a/b", True),
    ("id:scte", "scte35-1", None), ("id:lead-dash", "-x", None), ("id:num", 42, True), ("id:crlf", "a\r\nb", True),
]


def now_ms():
    return int(time.time() * 1000)


def iso(ms, offset_minutes=0, frac=3, z=True):
    t = ms / 1000 + offset_minutes * 60
    base = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(int(t)))
    f = f"{int(ms % 1000):03d}".ljust(frac, "0")[:frac] if frac else ""
    s = base + ("." + f if frac else "")
    if offset_minutes == 0 and z:
        return s + "Z"
    sign = "+" if offset_minutes >= 0 else "-"
    return s + f"{sign}{abs(offset_minutes) // 60:02d}:{abs(offset_minutes) % 60:02d}"


def instants(rng):
    """(tag, value, bad) start instants, valid and not."""
    ahead = now_ms() + rng.randint(20, 200) * 1000
    return [
        ("t:ok", iso(ahead), False), ("t:offset", iso(ahead, offset_minutes=rng.choice([120, -300, 14 * 60, -(23 * 60 + 59)])), False),
        ("t:nanos", iso(ahead, frac=9), False), ("t:past", iso(now_ms() - 3600_000), None),
        ("t:year0", "0000-01-01T00:00:00.000Z", True), ("t:year1", "0001-01-01T00:00:00Z", True),
        ("t:year9999", "9999-12-31T23:59:59.999Z", True), ("t:year9999-2359", "9999-12-31T23:59:59.999-23:59", True),
        ("t:year10000", "10000-01-01T00:00:00.000Z", True), ("t:plus-year", "+10000-01-01T00:00:00Z", True),
        ("t:leap", "2026-12-31T23:59:60Z", True), ("t:feb30", "2027-02-30T10:00:00Z", True),
        ("t:nozone", iso(ahead)[:-1], True), ("t:lower", iso(ahead).lower(), None), ("t:offset99", iso(ahead)[:-1] + "+99:99", True),
        ("t:space", iso(ahead).replace("T", " "), None), ("t:empty", "", True), ("t:num", Raw(str(ahead)), True),
        ("t:year2100", "2100-01-01T00:00:00Z", True), ("t:garbage", "tomorrow", True),
    ]
