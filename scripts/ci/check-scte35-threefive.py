#!/usr/bin/env python3
"""SCTE-35 sections decoded by threefive, the independent decoder: one JSON object per section on stdout.

Usage: check-scte35-threefive.py [SECTION ...]   (hex with or without 0x, or base64; one a line on stdin when no
argument is given). Each object holds the section as given, whether threefive decoded it, threefive's own CRC_32 of
the bytes before the CRC against the stated one (threefive's decode reads the CRC without checking it), and its
decode (threefive's `Cue.get()`).
Exit 0 when every section decodes with a matching CRC; 1 otherwise; 2 when threefive is not installed.
SCTE35Tests runs this on the sections the encoder writes (SegmentationSignalThreefiveTests)."""
import base64
import json
import sys

try:
    import threefive
    from threefive.crc import crc32
except ImportError:
    print("threefive is not installed (pip install threefive; scripts/lib/common.sh ensure_threefive)", file=sys.stderr)
    sys.exit(2)


def section_bytes(text):
    text = "".join(text.split())
    body = text[2:] if text[:2] in ("0x", "0X") else text
    try:
        return bytes.fromhex(body)
    except ValueError:
        return base64.b64decode(text, validate=True)


def check(text):
    result = {"section": text}
    try:
        data = section_bytes(text)
    except ValueError as error:
        result.update(decoded=False, error=f"neither hex nor base64: {error}")
        return result
    stated = int.from_bytes(data[-4:], "big") if len(data) >= 4 else None
    computed = crc32(data[:-4]) if len(data) >= 4 else None
    result.update(crc_stated=stated, crc_computed=computed, crc_ok=stated is not None and stated == computed)
    try:
        cue = threefive.Cue(data)
        result["decoded"] = bool(cue.decode())
        result["decode"] = json.loads(json.dumps(cue.get(), default=str))
    except Exception as error:  # threefive raises many kinds on bad input: all are a refusal here
        result.update(decoded=False, error=f"{type(error).__name__}: {error}")
        return result
    return result


def main():
    sections = sys.argv[1:] or [line.strip() for line in sys.stdin if line.strip()]
    results = [check(text) for text in sections]
    for result in results:
        print(json.dumps(result, sort_keys=True))
    return 0 if all(r.get("decoded") and r.get("crc_ok") for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
