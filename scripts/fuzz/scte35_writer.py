"""SCTE-35 for the fuzzer (fuzz_http.py): a writer for splice_insert and time_signal sections, CRC-32/MPEG-2, and
the standard's samples."""

SCTE_SAMPLES = [
    "/DA0AAAAAAAA///wBQb+cr0AUAAeAhxDVUVJSAAAjn/PAAGlmbAICAAAAAAsoKGKNAIAmsnRfg==",
    "/DAvAAAAAAAA///wFAVIAACPf+/+c2nALv4AUsz1AAAAAAAKAAhDVUVJAAABNWLbowo=",
    "/DAvAAAAAAAA///wBQb+dGKQoAAZAhdDVUVJSAAAjn+fCAgAAAAALKChijUCAKnMZ1g=",
    "/DA4AAAAAAAA///wBQb+AAAAAAAiAiBDVUVJAAAAA3//AAApPWwDDEFCQ0QwMTIzNDU2SBAAAGgCL9A=",
    "/DAgAAAAAAAAAP/wDwUAAAABf//+AFJlwAABAAAAAMOOklg=",
]


def crc32_mpeg2(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte << 24
        for _ in range(8):
            crc = ((crc << 1) ^ 0x04C11DB7) & 0xFFFFFFFF if crc & 0x80000000 else (crc << 1) & 0xFFFFFFFF
    return crc


class Bits:
    def __init__(self):
        self.v, self.n = 0, 0

    def put(self, value, width):
        self.v = (self.v << width) | (value & ((1 << width) - 1))
        self.n += width

    def bytes(self):
        assert self.n % 8 == 0
        return self.v.to_bytes(self.n // 8, "big")


def section(command_type, command, descriptors=b""):
    """A splice_info_section around a splice command, with section_length and CRC right."""
    body = Bits()
    body.put(0, 8)          # protocol_version
    body.put(0, 1); body.put(0, 6); body.put(0, 33)  # encrypted, algorithm, pts_adjustment
    body.put(0, 8)          # cw_index
    body.put(0xFFF, 12)     # tier
    body.put(len(command), 12)
    body.put(command_type, 8)
    rest = body.bytes() + command + len(descriptors).to_bytes(2, "big") + descriptors
    length = len(rest) + 4
    head = bytes([0xFC, 0x30 | (length >> 8), length & 0xFF])
    data = head + rest
    return data + crc32_mpeg2(data).to_bytes(4, "big")


def splice_insert(event_id, out, duration_seconds=None, cancel=False):
    b = Bits()
    b.put(event_id, 32)
    b.put(1 if cancel else 0, 1); b.put(0x7F, 7)
    if not cancel:
        b.put(1 if out else 0, 1); b.put(1, 1); b.put(1 if duration_seconds is not None else 0, 1); b.put(1, 1); b.put(0xF, 4)
        if duration_seconds is not None:
            b.put(0, 1); b.put(0x3F, 6); b.put(int(duration_seconds * 90000), 33)
        b.put(1, 16); b.put(0, 8); b.put(0, 8)
    return section(5, b.bytes())


def fix_section(data):
    """Sets section_length and the CRC of a mutated section, so the field parsers see it."""
    if len(data) < 7:
        return data
    length = len(data) - 3
    d = bytearray(data)
    d[1] = (d[1] & 0xF0) | ((length >> 8) & 0x0F)
    d[2] = length & 0xFF
    body = bytes(d[:-4])
    return body + crc32_mpeg2(body).to_bytes(4, "big")
