#!/usr/bin/env python3
"""age.py: the aging workload bench/age.sh runs on a mounted ext3 volume.

Deterministic for a seed: cycles of fill (files created and grown in
interleaved streams; mounted as ext3, without delayed allocation, the
kernel allocates each append's blocks at the write, between the other
streams'), rewrites, and deletes, until
the volume is about FILL full after the last fill. What servers' volumes
collect over years, in minutes. Besides regular files of a wide spread of
sizes (a few above 64 MiB when the volume is big enough), it leaves what
a defragmenter must keep: hard links, fast and slow symlinks, FIFOs, a
socket, device nodes, in-inode and EA-block xattrs, sparse files and
times with nanoseconds.

usage: age.py MOUNTPOINT SEED FILL_PERCENT
"""
import os
import random
import socket
import stat
import sys

root, seed, fill = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]) / 100.0
rng = random.Random(seed)
# contents: one random buffer, read at a seeded offset, so files differ
BUF = random.Random(seed ^ 0x5eed).randbytes(4 << 20)


def chunk(n):
    off = rng.randrange(0, len(BUF) - min(n, len(BUF) // 2))
    out = b""
    while len(out) < n:
        out += BUF[off:off + n - len(out)]
        off = 0
    return out


def used_frac():
    s = os.statvfs(root)
    return 1.0 - s.f_bfree / s.f_blocks


def size_pick(cap):
    # log-uniform: most files 1 KiB..1 MiB, one in twenty up to cap
    if rng.random() < 0.05:
        return min(cap, int(2 ** rng.uniform(20, 26)))
    return int(2 ** rng.uniform(10, 20))


total = os.statvfs(root).f_blocks * os.statvfs(root).f_frsize
files = []          # paths of regular files alive
serial = 0


def new_path():
    global serial
    serial += 1
    d = os.path.join(root, "d%02d" % rng.randrange(10), "s%02d" % rng.randrange(4))
    os.makedirs(d, exist_ok=True)
    return os.path.join(d, "f%06d" % serial)


def fill_to(target):
    """Streams of appends: 16 files open at a time, each growing in
    random-sized appends, in turn."""
    streams = []
    while used_frac() < target:
        while len(streams) < 16:
            p = new_path()
            want = size_pick(max(1 << 16, int(total * 0.02)))
            streams.append([os.open(p, os.O_WRONLY | os.O_CREAT, 0o644), p, want, 0])
        s = streams[rng.randrange(len(streams))]
        n = min(s[2] - s[3], rng.choice([4096, 4096, 8192, 16384, 65536]))
        try:
            os.write(s[0], chunk(n))
        except OSError:
            break               # full: stop this fill
        s[3] += n
        if s[3] >= s[2]:
            os.close(s[0])
            files.append(s[1])
            streams.remove(s)
    for s in streams:
        os.close(s[0])
        files.append(s[1])


def delete_some(frac):
    rng.shuffle(files)
    k = int(len(files) * frac)
    for p in files[:k]:
        os.unlink(p)
    del files[:k]


def rewrite_some(frac):
    for p in rng.sample(files, int(len(files) * frac)):
        sz = os.path.getsize(p)
        with open(p, "r+b") as f:      # in place: same blocks
            f.seek(rng.randrange(0, max(1, sz)))
            f.write(chunk(min(65536, max(1, sz // 4))))
        if rng.random() < 0.5:         # or truncated and grown again
            with open(p, "r+b") as f:
                f.truncate(sz // 2)
                f.seek(sz // 2)
                f.write(chunk(sz - sz // 2))


def big_files():
    """Files above 64 MiB, grown side by side in 1 MiB appends."""
    if total < (1 << 30):
        return
    fds = []
    for i in range(2):
        p = os.path.join(root, "big%d" % i)
        fds.append((os.open(p, os.O_WRONLY | os.O_CREAT, 0o644), p))
    for _ in range(80):
        for fd, _p in fds:
            os.write(fd, chunk(1 << 20))
    for fd, p in fds:
        os.close(fd)


def specials():
    d = os.path.join(root, "special")
    os.makedirs(d, exist_ok=True)
    keep = sorted(files)[:20]
    for i, p in enumerate(keep[:10]):
        os.link(p, os.path.join(d, "hard%d" % i))
    os.symlink("../" + os.path.relpath(keep[0], root), os.path.join(d, "fast"))
    os.symlink("x" * 200 + "/target", os.path.join(d, "slow"))
    os.mkfifo(os.path.join(d, "fifo"))
    s = socket.socket(socket.AF_UNIX)
    s.bind(os.path.join(d, "sock"))
    s.close()
    os.mknod(os.path.join(d, "null"), 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    os.mknod(os.path.join(d, "loop"), 0o660 | stat.S_IFBLK, os.makedev(7, 0))
    for i, p in enumerate(keep[10:20]):
        os.setxattr(p, "user.small", b"v%d" % i)            # in the inode
        os.setxattr(p, "user.big", b"y" * 1500)             # its EA block
    for i in range(5):
        p = os.path.join(d, "sparse%d" % i)
        with open(p, "wb") as f:
            f.write(chunk(40000))
            f.seek(5 << 20)
            f.write(chunk(30000))
            f.truncate(12 << 20)
    for i, p in enumerate(sorted(files)):
        if i % 7 == 0:
            ns = 1_600_000_000_000_000_000 + rng.randrange(10 ** 15)
            os.utime(p, ns=(ns + 123_456_789, ns + 987_654_321))


big_files()
for cycle, (target, dele) in enumerate([(fill * 0.9, 0.5), (fill, 0.35),
                                        (fill, 0.3), (fill, 0.0)]):
    fill_to(target)
    rewrite_some(0.05)
    if dele:
        delete_some(dele)
specials()
print("age.py: %d files, %.1f%% used" % (len(files), 100 * used_frac()))
