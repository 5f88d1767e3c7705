#!/usr/bin/env python3
"""manifest.py: one line per inode of a mounted tree, for before/after
comparisons of e3defrag and the rebuild routes (bench/defrag.sh,
bench/defrag_kill.sh).

usage: manifest.py ROOT [--no-ino]
Each line: path, type, inode number, link count, mode, uid, gid, size,
rdev, atime/mtime/ctime in ns, sha256 of the contents (regular files) or
the target (symlinks), and the xattrs (name=sha256 of the value), sorted
by path. --no-ino leaves the inode number out (a rebuild renumbers).
"""
import hashlib
import os
import stat
import sys

root = sys.argv[1]
with_ino = "--no-ino" not in sys.argv[2:]


def digest(path, st):
    h = hashlib.sha256()
    if stat.S_ISREG(st.st_mode):
        with open(path, "rb") as f:
            for b in iter(lambda: f.read(1 << 20), b""):
                h.update(b)
    elif stat.S_ISLNK(st.st_mode):
        h.update(os.readlink(path).encode())
    else:
        return "-"
    return h.hexdigest()


def xattrs(path):
    try:
        names = sorted(os.listxattr(path, follow_symlinks=False))
    except OSError:
        return "-"
    return ",".join("%s=%s" % (n, hashlib.sha256(
        os.getxattr(path, n, follow_symlinks=False)).hexdigest()[:16])
        for n in names) or "-"


out = []
for d, dirs, names in os.walk(root):
    dirs[:] = [x for x in dirs if not (d == root and x == "lost+found")]
    for n in dirs + names:
        p = os.path.join(d, n)
        st = os.lstat(p)
        fields = [os.path.relpath(p, root), "%o" % stat.S_IFMT(st.st_mode)]
        if with_ino:
            fields.append(str(st.st_ino))
        fields += [str(st.st_nlink), "%o" % stat.S_IMODE(st.st_mode),
                   str(st.st_uid), str(st.st_gid),
                   str(st.st_size) if not stat.S_ISDIR(st.st_mode) else "-",
                   str(st.st_rdev), str(st.st_atime_ns), str(st.st_mtime_ns),
                   str(st.st_ctime_ns), digest(p, st), xattrs(p)]
        out.append(" ".join(fields))
for line in sorted(out):
    print(line)
