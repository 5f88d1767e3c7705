#!/usr/bin/env python3
"""bench/fuzz_mutate.py: damage an image in one random way for the fuzz
benchmarks (bench/fuzz.sh, bench/fuzz_cp.sh). Case I of seed S always makes
the same damage, so a reported case can be re-made.
  fuzz_mutate.py IMAGE SEED I [REGIONS]
Without REGIONS: bit flips, zeroed blocks, truncation or random bytes in
the image's first 600 KiB (where the metadata of a small image lives).
REGIONS is a file of "NAME START END" byte ranges (superblock, descriptors,
bitmaps, inode tables, directory and indirect blocks, journal); with it,
three more kinds aim the same damage at one named region. Prints the kind.
"""
import os, random, sys

path, seed, i = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
regions = []
if len(sys.argv) > 4:
    with open(sys.argv[4]) as rf:
        for line in rf:
            name, start, end = line.split()
            regions.append((name, int(start), int(end)))
r = random.Random(seed * 100003 + i)
size = os.path.getsize(path)
meta = min(size, 600 * 1024)        # superblock, descriptors, tables, dirs
with open(path, 'r+b') as f:
    # bench/fuzz.sh's cases depend on this draw: keep it first and the same
    kind = r.randrange(7 if regions else 4)
    if kind == 0:                   # bit flips in metadata
        for _ in range(r.randint(1, 40)):
            off = r.randrange(1024, meta)
            f.seek(off); b = f.read(1)
            f.seek(off); f.write(bytes([b[0] ^ (1 << r.randrange(8))]))
        what = 'flips'
    elif kind == 1:                 # zeroed blocks
        for _ in range(r.randint(1, 4)):
            f.seek(r.randrange(0, meta // 1024) * 1024); f.write(bytes(1024))
        what = 'zero'
    elif kind == 2:                 # truncation
        f.truncate(r.randrange(1024, size))
        what = 'truncate'
    elif kind == 3:                 # random bytes in metadata
        for _ in range(r.randint(1, 8)):
            off = r.randrange(1024, meta)
            f.seek(off); f.write(os.urandom(0) or bytes(r.randrange(256) for _ in range(r.randint(1, 64))))
        what = 'bytes'
    else:                           # the same, aimed at one region
        name, start, end = r.choice(regions)
        if kind == 4:
            for _ in range(r.randint(1, 8)):
                off = r.randrange(start, end)
                f.seek(off); b = f.read(1)
                f.seek(off); f.write(bytes([b[0] ^ (1 << r.randrange(8))]))
            what = 'flips'
        elif kind == 5:
            off = start + r.randrange(0, max(1, (end - start) // 1024)) * 1024
            f.seek(off); f.write(bytes(min(1024, end - off)))
            what = 'zero'
        else:
            off = r.randrange(start, end)
            n = min(r.randint(1, 16), end - off)
            f.seek(off); f.write(bytes(r.randrange(256) for _ in range(n)))
            what = 'bytes'
        what += '@' + name
print(what)
