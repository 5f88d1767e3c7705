#!/usr/bin/env python3
"""tests/cmptree.py SRC COPY [--no-links] [--no-xattrs] [--no-owner]
   [--no-times] [--clamp EPOCH]
Compares a copied tree with its source entry by entry: type, mode bits,
owner, mtime (seconds; clamped to EPOCH when given), size and contents,
symlink targets, device numbers, link counts and xattrs. Prints every
difference and exits 1 if there is any. debugfs rdump keeps neither hard
links nor xattrs, hence the --no-* switches."""
import hashlib, os, stat, sys

def digest(path):
    h = hashlib.sha256()
    with open(path, 'rb') as f:
        while True:
            b = f.read(1 << 20)
            if not b:
                return h.hexdigest()
            h.update(b)

def xattrs(path):
    try:
        names = os.listxattr(path, follow_symlinks=False)
    except OSError:
        return {}
    out = {}
    for n in names:
        if n.startswith(('user.', 'trusted.', 'security.', 'system.posix_acl')):
            out[n] = os.getxattr(path, n, follow_symlinks=False)
    return out

def describe(root, rel, opts):
    p = os.path.join(root, rel) if rel else root
    st = os.lstat(p)
    d = {'type': stat.S_IFMT(st.st_mode), 'mode': stat.S_IMODE(st.st_mode)}
    if opts['rdump']:
        d['mode'] &= 0o777	# debugfs rdump drops set-id and sticky bits
    if opts['owner']:
        d['owner'] = (st.st_uid, st.st_gid)
    if opts['times'] and not stat.S_ISLNK(st.st_mode):
        m = int(st.st_mtime)
        if opts['clamp'] is not None:
            m = min(m, opts['clamp'])
        d['mtime'] = m
    if stat.S_ISREG(st.st_mode):
        d['size'] = st.st_size
        d['sha'] = digest(p)
        if opts['links']:
            d['nlink'] = st.st_nlink
    elif stat.S_ISLNK(st.st_mode):
        d['target'] = os.readlink(p)
    elif stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
        d['rdev'] = st.st_rdev
    if opts['xattrs']:
        d['xattrs'] = xattrs(p)
    return d

def walk(root):
    out = []
    for dp, dns, fns in os.walk(root):
        for n in dns + fns:
            out.append(os.path.relpath(os.path.join(dp, n), root))
    return set(out)

def main():
    args = sys.argv[1:]
    opts = {'links': True, 'xattrs': True, 'owner': True, 'times': True,
            'clamp': None, 'sockets': True, 'rdump': False}
    pos = []
    i = 0
    while i < len(args):
        a = args[i]
        if a.startswith('--no-'):
            opts[a[5:]] = False
        elif a == '--rdump':
            opts.update(links=False, xattrs=False, rdump=True, sockets=False)
        elif a == '--clamp':
            i += 1
            opts['clamp'] = int(args[i])
        else:
            pos.append(a)
        i += 1
    src, copy = pos
    skip = {'lost+found'}
    a, b = walk(src), walk(copy) - skip
    if not opts['sockets'] or opts['rdump']:
        def special(rel):
            m = os.lstat(os.path.join(src, rel)).st_mode
            return stat.S_ISSOCK(m) or (opts['rdump'] and (stat.S_ISFIFO(m) or
                    stat.S_ISCHR(m) or stat.S_ISBLK(m)))
        a = {r for r in a if not special(r)}
    bad = 0
    for rel in sorted(a ^ b):
        print('only in %s: %r' % (src if rel in a else copy, rel))
        bad += 1
    for rel in sorted(a & b):
        da, db = describe(src, rel, opts), describe(copy, rel, opts)
        for k in da:
            if da[k] != db.get(k):
                print('%r: %s differs: %r != %r' % (rel, k, da[k], db.get(k)))
                bad += 1
    print('%d entries compared, %d differences' % (len(a & b), bad))
    sys.exit(1 if bad else 0)

main()
