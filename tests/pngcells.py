#!/usr/bin/env python3
"""tests/pngcells.py PNG: checks a block-map PNG (e3_map_png) from its
bytes — signature, chunk CRCs, IHDR (8-bit RGB, 768 wide, 10 rows a
band) — and prints its cell grid as map --text draws it: a line per band,
a character per cell (from the colour), blank for white. Exit 1 when the
file is not such a PNG."""
import struct
import sys
import zlib

CELLS, CW, CH = 256, 3, 9
COLOURS = {"f2f2f2": ".", "7f7f7f": "M", "9467bd": "J", "1f77b4": "D",
           "2ca02c": "f", "d62728": "X", "ff7f0e": "o", "ffffff": " "}


def fail(why):
    print(f"{sys.argv[1]}: {why}", file=sys.stderr)
    sys.exit(1)


def main():
    data = open(sys.argv[1], "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        fail("no PNG signature")
    pos, chunks = 8, []
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        crc, = struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])
        if zlib.crc32(kind + body) != crc:
            fail(f"bad CRC in {kind!r}")
        chunks.append((kind, body))
        pos += 12 + n
    if chunks[0][0] != b"IHDR" or chunks[-1][0] != b"IEND":
        fail("IHDR first and IEND last expected")
    w, h, depth, ctype = struct.unpack(">IIBB", chunks[0][1][:10])
    if (w, depth, ctype) != (CELLS * CW, 8, 2) or h % (CH + 1):
        fail(f"IHDR {w}x{h} depth {depth} type {ctype}")
    raw = zlib.decompress(b"".join(b for k, b in chunks if k == b"IDAT"))
    stride = 1 + 3 * w
    if len(raw) != stride * h:
        fail("pixel data of the wrong size")
    for band in range(h // (CH + 1)):
        row = raw[band * (CH + 1) * stride:][:stride]
        if row[0] != 0:
            fail("filtered row")
        line = ""
        for c in range(CELLS):
            px = row[1 + 3 * c * CW:][:3].hex()
            if px not in COLOURS:
                fail(f"colour {px}")
            line += COLOURS[px]
        print(line)


main()
