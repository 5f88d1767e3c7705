#!/usr/bin/env python3
"""scripts/layers.py: the build's layering check (make layers, run by
make check).

lib/ is one folder per layer; a folder may use only folders of a LOWER
rank than its own (the table below is the one place the allowed directions
are written down), plus the public headers at lib/'s top (e3img.h,
e3_err.h, e3_mkfs.h, e3_check.h, ...), which any layer may include. Tools
(misc/, debugfs-ext/) may include only those public headers and their own
folder's; debugfs-ext/ may also use misc/'s shared tool helpers.

Two things are checked:
  includes  every `#include "..."` in lib/, misc/ and debugfs-ext/;
  calls     every undefined symbol of every lib/LAYER/*.o (nm), against
            the folder whose object defines it (skipped with --no-symbols,
            or for objects not built yet).
Exit 0 when clean, 1 listing every violation, 2 on a usage error.
--graph prints the folder-to-folder include graph instead of checking.
"""
import argparse
import os
import re
import subprocess
import sys

# rank: a folder may depend on folders of strictly lower rank only.
RANKS = {
    "util": 0,      # growth helper, thread pool: no e3img state at all
    "journal": 1,   # JBD2 format, transactions, commit, replay, faults
    "alloc": 1,     # bitmap mirror, reservation windows, libext2fs hooks
    "fs": 2,        # the open image, inodes, files, directories, xattrs
    "mkfs": 3,      # engines ...
    "inspect": 3,   # layout figures shared by check, defrag, debugfs
    "check": 4,
    "copyin": 4,    # uses mkfs (e3mkfs -d sizes through a null channel)
    "defrag": 5,    # may use check's public entry points
}
TOOLS = ("misc", "debugfs-ext")

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def folder_of(root, path):
    """The layer folder a lib/ file lives in, 'public' for lib/'s top, the
    tool folder for tools, None for anything else."""
    rel = os.path.relpath(path, root)
    parts = rel.split(os.sep)
    if parts[0] == "lib":
        return parts[1] if len(parts) > 2 else "public"
    if parts[0] in TOOLS:
        return parts[0]
    return None


def resolve(root, src, inc):
    """Where `#include "inc"` in src lands: beside src, else under lib/
    (the build's -Ilib). None when outside the tree (system headers)."""
    for base in (os.path.dirname(src), os.path.join(root, "lib")):
        p = os.path.normpath(os.path.join(base, inc))
        if os.path.exists(p):
            return p
    return None


def sources(root):
    for top in ("lib",) + TOOLS:
        for d, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if f.endswith((".c", ".h")):
                    yield os.path.join(d, f)


def allowed(src_f, dst_f):
    if dst_f == "public" or src_f == dst_f:
        return True
    if src_f == "debugfs-ext" and dst_f == "misc":
        return True         # the tools' shared helpers (exit.h, util.h)
    if src_f in TOOLS:
        return False        # tools use the public API only
    if src_f == "public":
        return False        # public headers name no internal header
    if src_f not in RANKS or dst_f not in RANKS:
        return False        # a folder missing from the table is an error
    return RANKS[dst_f] < RANKS[src_f]


def include_edges(root):
    for src in sources(root):
        sf = folder_of(root, src)
        with open(src, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        for n, line in enumerate(text.splitlines(), 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            dst = resolve(root, src, m.group(1))
            if dst is None:
                continue
            df = folder_of(root, dst)
            if df is None:
                continue
            yield src, n, m.group(1), sf, df


def nm(obj):
    out = subprocess.run(["nm", "-P", obj], capture_output=True,
                         text=True, check=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        f = line.split()
        if len(f) < 2:
            continue
        if f[1] == "U":
            undefined.add(f[0])
        elif f[1] in "TDBRVWtdbr" and f[1].isupper():
            defined.add(f[0])
    return defined, undefined


def symbol_violations(root):
    objs = []
    for d, _, files in os.walk(os.path.join(root, "lib")):
        for f in sorted(files):
            if f.endswith(".o"):
                p = os.path.join(d, f)
                objs.append((p, folder_of(root, p)))
    where = {}
    tables = {}
    for p, fo in objs:
        defined, undefined = nm(p)
        tables[p] = undefined
        for s in defined:
            where[s] = fo
    bad = []
    for p, fo in objs:
        for s in sorted(tables[p]):
            df = where.get(s)
            if df is None or allowed(fo, df):
                continue
            bad.append(f"{os.path.relpath(p, root)}: calls {s} "
                       f"(defined in lib/{df}/): {fo} may not use {df}")
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=".", help="the source tree")
    ap.add_argument("--no-symbols", action="store_true",
                    help="check includes only")
    ap.add_argument("--graph", action="store_true",
                    help="print the folder include graph")
    a = ap.parse_args()
    root = os.path.abspath(a.root)
    if not os.path.isdir(os.path.join(root, "lib")):
        print(f"layers: {root}: no lib/ folder", file=sys.stderr)
        return 2

    edges = list(include_edges(root))
    if a.graph:
        g = {}
        for _, _, _, sf, df in edges:
            if sf != df:
                g.setdefault(sf, set()).add(df)
        for sf in sorted(g, key=lambda f: (RANKS.get(f, 9), f)):
            print(f"{sf:12} -> {', '.join(sorted(g[sf]))}")
        return 0

    bad = []
    for d in sorted(os.listdir(os.path.join(root, "lib"))):
        if os.path.isdir(os.path.join(root, "lib", d)) and d not in RANKS:
            bad.append(f"lib/{d}/: a folder missing from the rank table "
                       "in scripts/layers.py")
    for src, n, inc, sf, df in edges:
        if not allowed(sf, df):
            bad.append(f"{os.path.relpath(src, root)}:{n}: includes "
                       f"\"{inc}\": {sf} may not use {df}")
    if not a.no_symbols:
        bad += symbol_violations(root)
    for b in bad:
        print(f"layers: {b}", file=sys.stderr)
    if bad:
        print(f"layers: {len(bad)} upward or sideways dependencies "
              "(allowed directions: scripts/layers.py RANKS)",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
