#!/usr/bin/env python3
"""bench/fuzz_dirs_mutate.py: aimed damage for bench/fuzz_dirs.sh.
  fuzz_dirs_mutate.py map IMAGE               print the image's map
  fuzz_dirs_mutate.py mutate IMAGE MAP SEED I CLASS
The map names, once per base image, what the mutations aim at: the block
size, the inode count, each directory (inode, whether it is indexed, its
blocks in logical order) and the journal's blocks. It is read from the
image itself (superblock, group descriptors, inode table, block maps), so
no debugfs run is needed per case.
CLASS is dir (dirent fields, '.'/'..', names, block tails), htree (dx_root
info, count/limit, keys and block pointers at both levels, the index
flag) or jsb (every journal superblock field; descriptor, commit and
revoke blocks of a committed log). Case I of seed S always makes the same
damage (one to three changes); the changes made are printed on one line.
"""
import random, struct, sys


def u32(b, o): return struct.unpack_from('<I', b, o)[0]
def u16(b, o): return struct.unpack_from('<H', b, o)[0]


class Image:
    def __init__(self, path):
        self.f = open(path, 'r+b')
        sb = self.read(1024, 1024)
        self.bs = 1024 << u32(sb, 24)
        self.ninodes = u32(sb, 0)
        self.nblocks = u32(sb, 4)
        self.first = u32(sb, 20)
        self.ipg = u32(sb, 40)
        self.isz = u16(sb, 88) if u32(sb, 76) >= 1 else 128
        self.jino = u32(sb, 224)
        self.ngroups = (self.ninodes + self.ipg - 1) // self.ipg

    def read(self, off, n):
        self.f.seek(off)
        return self.f.read(n)

    def write(self, off, data):
        self.f.seek(off)
        self.f.write(data)

    def inode_off(self, ino):
        g, i = divmod(ino - 1, self.ipg)
        gd = self.read((self.first + 1) * self.bs + 32 * g, 32)
        return u32(gd, 8) * self.bs + i * self.isz

    def inode(self, ino):
        return self.read(self.inode_off(ino), 128)

    def blocks(self, ino):
        """physical blocks of a block-mapped inode, in logical order"""
        ino_b = self.inode(ino)
        n = (u32(ino_b, 4) + self.bs - 1) // self.bs
        ptrs = [u32(ino_b, 40 + 4 * k) for k in range(15)]
        per = self.bs // 4
        out = ptrs[:12]

        def ind(b, depth):
            if b == 0 or b >= self.nblocks:
                return [0] * (per ** depth)
            tab = struct.unpack('<%dI' % per, self.read(b * self.bs, self.bs))
            if depth == 1:
                return list(tab)
            res = []
            for t in tab:
                res += ind(t, depth - 1)
                if len(out) + len(res) >= n:
                    break
            return res
        if n > 12:
            out += ind(ptrs[12], 1)
        if n > 12 + per:
            out += ind(ptrs[13], 2)
        return out[:n]


def make_map(img):
    print('bs', img.bs, 'ninodes', img.ninodes, 'jino', img.jino)
    for ino in range(2, img.ninodes + 1):
        ib = img.inode(ino)
        mode, links = u16(ib, 0), u16(ib, 26)
        if links == 0 or u32(ib, 20) != 0:
            continue
        if mode & 0xf000 == 0x4000:
            idx = 1 if u32(ib, 32) & 0x1000 else 0
            print('dir', ino, idx, *img.blocks(ino))
    if img.jino:
        print('journal', *img.blocks(img.jino)[:64])


# ---- directories ---------------------------------------------------------

def entries(blk, bs, start=0):
    """(offset, inode, rec_len, name_len, type) of a block's entries, as
    far as the rec_len chain holds"""
    out, off = [], start
    while off + 8 <= bs:
        rl = u16(blk, off + 4)
        out.append((off, u32(blk, off), rl, blk[off + 6], blk[off + 7]))
        if rl < 8 or rl % 4 or off + rl > bs:
            break
        off += rl
    return out


def mut_dirent(r, img, dirs):
    ino, idx, blks = r.choice(dirs)
    lb = r.randrange(len(blks))
    if idx and lb == 0 and r.random() < 0.7:
        lb = r.randrange(len(blks))     # leaves mostly, not the root
    pb = blks[lb]
    if not pb:
        return 'dir %d lblk %d: hole' % (ino, lb)
    base = pb * img.bs
    blk = bytearray(img.read(base, img.bs))
    ents = entries(blk, img.bs)
    # in a dx node the only "entry" is the fake one over the whole block
    e = r.choice(ents)
    off, einode, rl, nl, ft = e
    others = [x for x in ents if x is not e and x[1]]
    what = 'dir %d lblk %d off %d ' % (ino, lb, off)
    k = r.randrange(12)
    if k == 0:      # the inode number
        v = r.choice([0, 1, 2, 7, 8, 11, img.ninodes, img.ninodes + 1,
                      0xffffffff, ino, r.randrange(1, img.ninodes + 1)]
                     + [x[1] for x in others[:3]])
        struct.pack_into('<I', blk, off, v)
        what += 'inode %d->%d' % (einode, v)
    elif k == 1:    # rec_len
        v = r.choice([0, 4, 8, 12, rl + 1, rl + 2, rl + 3, rl - 4, rl + 4,
                      rl - 1, 0xffff, img.bs, img.bs + 4, img.bs - off,
                      img.bs - off + 4, 8 + nl - 1, r.randrange(0x10000)])
        v &= 0xffff
        struct.pack_into('<H', blk, off + 4, v)
        what += 'rec_len %d->%d' % (rl, v)
    elif k == 2:    # name_len
        v = r.choice([0, 1, 255, nl + 1, nl - 1, rl - 8, rl - 7,
                      r.randrange(256)]) & 0xff
        blk[off + 6] = v
        what += 'name_len %d->%d' % (nl, v)
    elif k == 3:    # file_type
        v = r.choice([0, 1, 2, 3, 4, 5, 6, 7, 8, 0x80, 0xff])
        blk[off + 7] = v
        what += 'file_type %d->%d' % (ft, v)
    elif k == 4 and nl:     # '/' or NUL in the name
        c = r.choice([b'/', b'\0'])
        blk[off + 8 + r.randrange(nl)] = c[0]
        what += 'name char %r' % c
    elif k == 5 and nl:     # the name made '.', '..' or another's name
        if others and r.random() < 0.5:
            o = r.choice(others)
            if o[3] <= rl - 8:
                blk[off + 8:off + 8 + o[3]] = blk[o[0] + 8:o[0] + 8 + o[3]]
                blk[off + 6] = o[3]
                what += 'name = entry at %d' % o[0]
                return what, base, blk
        dots = r.choice([b'.', b'..'])
        blk[off + 8:off + 8 + len(dots)] = dots
        blk[off + 6] = len(dots)
        what += 'name -> %r' % dots
    elif k == 6 and lb == 0 and not idx:    # '.' and '..'
        j = r.randrange(6)
        if j == 0:
            struct.pack_into('<I', blk, 0, r.choice([0, 2, 11, ino + 1]))
        elif j == 1:
            struct.pack_into('<I', blk, 12, r.choice([0, ino, 1, 11, img.ninodes + 5]))
        elif j == 2:
            blk[8] = r.choice([b'x'[0], 0, b'/'[0]])
        elif j == 3:
            struct.pack_into('<H', blk, 4, r.choice([0, 8, 16, 13, 24]))
        elif j == 4:
            blk[6] = r.choice([0, 2, 255])
        else:
            blk[18] = r.choice([1, 3, 0])
        what += 'dots %d' % j
    elif k == 7:    # the block's tail after this entry zeroed or random
        tail = off + 8 + ((nl + 3) & ~3)
        if tail < img.bs:
            if r.random() < 0.5:
                blk[tail:] = bytes(img.bs - tail)
            else:
                blk[tail:] = bytes(r.randrange(256) for _ in range(img.bs - tail))
        what += 'tail from %d' % tail
    elif k == 8:    # the whole block
        j = r.randrange(3)
        if j == 0:
            blk[:] = bytes(img.bs)
        elif j == 1:
            blk[:] = bytes(r.randrange(256) for _ in range(img.bs))
        else:
            blk[:] = blk[:img.bs // 2] + bytes(img.bs - img.bs // 2)
        what += 'block %d' % j
    elif k == 9:    # bit flips in the entry's header
        for _ in range(r.randint(1, 4)):
            b = off + r.randrange(8)
            blk[b] ^= 1 << r.randrange(8)
        what += 'flips'
    elif k == 10:   # the last 12 bytes of the block (a csum tail's place)
        t = img.bs - 12
        blk[t:] = bytes(r.randrange(256) for _ in range(12))
        what += 'last 12'
    else:           # the directory inode's size or the index flag
        io = img.inode_off(ino)
        ib = bytearray(img.read(io, 128))
        j = r.randrange(3)
        if j == 0:
            struct.pack_into('<I', ib, 4, (u32(ib, 4) + r.choice([-img.bs, img.bs, 1, -1])) & 0xffffffff)
        elif j == 1:
            struct.pack_into('<I', ib, 32, u32(ib, 32) ^ 0x1000)
        else:
            struct.pack_into('<H', ib, 26, r.choice([0, 1, 2, 65000]))
        img.write(io, bytes(ib))
        return what + 'dir inode %d' % j, None, None
    return what, base, blk


# ---- htree ---------------------------------------------------------------

def dx_entries_at(img, blk, lb, is_root):
    """offset of count/limit in an index block, or None"""
    if is_root:
        return 24 + blk[24 + 5]
    return 8


def mut_htree(r, img, dirs):
    ix = [d for d in dirs if d[1]]
    if not ix:
        return mut_dirent(r, img, dirs)
    ino, _, blks = r.choice(ix)
    root = bytearray(img.read(blks[0] * img.bs, img.bs))
    levels = root[24 + 6]
    cl = 24 + root[24 + 5]
    # the node: the root, or (2-level) one of its children
    target, lb, is_root = root, 0, True
    if levels >= 1 and r.random() < 0.5:
        cnt = u16(root, cl + 2)
        i = r.randrange(max(1, min(cnt, (img.bs - cl) // 8)))
        lb = (u32(root, cl + 4) if i == 0 else u32(root, cl + 8 * i + 4)) & 0x0fffffff
        if 0 < lb < len(blks) and blks[lb]:
            target = bytearray(img.read(blks[lb] * img.bs, img.bs))
            is_root = False
        else:
            lb = 0
    blk = target
    base = blks[lb] * img.bs
    what = 'htree %d %s ' % (ino, 'root' if is_root else 'node lblk %d' % lb)
    c = dx_entries_at(img, blk, lb, is_root)
    if c + 4 > img.bs:
        c = 32 if is_root else 8
    limit, count = u16(blk, c), u16(blk, c + 2)
    n = max(1, min(count, (img.bs - c) // 8))
    k = r.randrange(10 if is_root else 7)
    if k == 0:      # count
        v = r.choice([0, 1, count - 1, count + 1, limit, limit + 1, 0xffff])
        struct.pack_into('<H', blk, c + 2, v & 0xffff)
        what += 'count %d->%d' % (count, v & 0xffff)
    elif k == 1:    # limit
        v = r.choice([0, 1, count - 1, limit - 1, limit + 1, 0xffff])
        struct.pack_into('<H', blk, c, v & 0xffff)
        what += 'limit %d->%d' % (limit, v & 0xffff)
    elif k == 2:    # a key
        i = r.randrange(1, n) if n > 1 else 1
        o = c + 8 * i
        if o + 8 > img.bs:
            return what + 'no key', None, None
        old = u32(blk, o)
        nxt = u32(blk, o + 8) if i + 1 < n else 0xffffffff
        prv = u32(blk, o - 8) if i > 1 else 0
        v = r.choice([0, 1, 0xffffffff, old + 2, old - 2, nxt - 2, nxt + 2,
                      prv, r.randrange(1 << 32)]) & 0xffffffff
        struct.pack_into('<I', blk, o, v)
        what += 'key %d %08x->%08x' % (i, old, v)
    elif k == 3:    # a block pointer
        i = r.randrange(n)
        o = c + 4 if i == 0 else c + 8 * i + 4
        old = u32(blk, o)
        v = r.choice([0, lb, len(blks), len(blks) + 1, 0x0fffffff,
                      old + 1, old ^ 0x10000000, r.randrange(len(blks))])
        struct.pack_into('<I', blk, o, v & 0xffffffff)
        what += 'ptr %d %d->%d' % (i, old, v)
    elif k == 4:    # two entries swapped
        if n >= 3:
            i = r.randrange(1, n - 1)
            a, b = c + 8 * i, c + 8 * (i + 1)
            blk[a:a + 8], blk[b:b + 8] = blk[b:b + 8], blk[a:a + 8]
        what += 'swap'
    elif k == 5:    # the node's fake dirent (root: '..' rec_len)
        if is_root:
            struct.pack_into('<H', blk, 16, r.choice([12, img.bs - 8, img.bs - 12 + 4, 0]))
        else:
            j = r.randrange(3)
            if j == 0:
                struct.pack_into('<I', blk, 0, r.choice([1, 2, 11]))
            elif j == 1:
                struct.pack_into('<H', blk, 4, r.choice([0, 8, img.bs - 4, 12]))
            else:
                blk[6] = r.choice([1, 4, 255])
        what += 'fake dirent'
    elif k == 6:    # bit flips among the entries
        for _ in range(r.randint(1, 6)):
            b = c + r.randrange(min(img.bs - c, 8 * n + 8))
            blk[b] ^= 1 << r.randrange(8)
        what += 'flips'
    elif k == 7:    # dx_root_info: hash version, info length, levels, flags
        j = r.randrange(5)
        if j == 0:
            v = r.choice([0, 2, 3, 4, 5, 6, 0x7f, 0xff]); blk[28] = v
        elif j == 1:
            v = r.choice([0, 4, 7, 9, 12, 16, 255]); blk[29] = v
        elif j == 2:
            v = r.choice([0, 1, 2, 3, 8, 255]); blk[30] = v
        elif j == 3:
            v = r.choice([1, 0x80, 0xff]); blk[31] = v
        else:
            v = r.choice([1, 0xffffffff]); struct.pack_into('<I', blk, 24, v)
        what += 'info %d=%d' % (j, v)
    elif k == 8:    # the index flag or the hash seed / default hash
        io = img.inode_off(ino)
        ib = bytearray(img.read(io, 128))
        struct.pack_into('<I', ib, 32, u32(ib, 32) ^ 0x1000)
        img.write(io, bytes(ib))
        return what + 'index flag off', None, None
    else:           # a level lost or made up: the root says 0 or 1 more
        blk[30] = (levels + r.choice([1, -1 if levels else 2])) & 0xff
        what += 'levels %d->%d' % (levels, blk[30])
    return what, base, blk


# ---- the journal -----------------------------------------------------------

JSB_FIELDS = [  # (name, offset, size) in the big-endian JBD2 superblock
    ('magic', 0, 4), ('blocktype', 4, 4), ('hsequence', 8, 4),
    ('blocksize', 12, 4), ('maxlen', 16, 4), ('first', 20, 4),
    ('sequence', 24, 4), ('start', 28, 4), ('errno', 32, 4),
    ('compat', 36, 4), ('incompat', 40, 4), ('rocompat', 44, 4),
    ('uuid', 48, 4), ('nr_users', 64, 4), ('dynsuper', 68, 4),
    ('max_trans', 72, 4), ('max_trans_data', 76, 4), ('csum_type', 80, 1),
    ('num_fc_blks', 84, 4), ('users', 256, 4), ('checksum', 252, 4)]


def mut_jsb(r, img, jblocks):
    if not jblocks:
        return 'no journal', None, None
    if r.random() < 0.25 and len(jblocks) > 1:
        return mut_jlog(r, img, jblocks)
    base = jblocks[0] * img.bs
    blk = bytearray(img.read(base, img.bs))
    name, o, sz = r.choice(JSB_FIELDS)
    fmt = '>I' if sz == 4 else '>B'
    old = struct.unpack_from(fmt, blk, o)[0]
    maxlen = struct.unpack_from('>I', blk, 16)[0]
    cands = [0, 1, 2, 0xffffffff, 0x7fffffff, old + 1, old - 1,
             maxlen, maxlen + 1, maxlen - 1, r.randrange(1 << 32)]
    if name == 'blocktype':
        cands += [1, 2, 3, 4, 5, 6]
    if name in ('compat', 'incompat', 'rocompat'):
        cands += [old | (1 << r.randrange(32)), old ^ 1, old | 2, old | 4,
                  old | 8, old | 0x10, old | 0x20]
    if name == 'nr_users':
        cands += [2, 48, 49, 1000]
    if name == 'errno':
        cands += [0xffffffff - 4, 0xfffffffb, 5]
    if name == 'blocksize':
        cands += [512, 1024, 2048, 4096, 8192, 65536]
    if name == 'start':
        cands += [struct.unpack_from('>I', blk, 20)[0] - 1]
    v = r.choice(cands) & (0xffffffff if sz == 4 else 0xff)
    struct.pack_into(fmt, blk, o, v)
    return 'jsb %s %d->%d' % (name, old, v), base, blk


def mut_jlog(r, img, jblocks):
    """a block of the committed log: descriptor tags, commit, revoke"""
    sb = img.read(jblocks[0] * img.bs, 1024)
    first, start = struct.unpack_from('>I', sb, 20)[0], struct.unpack_from('>I', sb, 28)[0]
    lo = start if start else first
    cands = []
    for lb in range(lo, min(len(jblocks), lo + 40)):
        h = img.read(jblocks[lb] * img.bs, 12)
        if struct.unpack_from('>I', h, 0)[0] == 0xc03b3998:
            cands.append((lb, struct.unpack_from('>I', h, 4)[0]))
    if not cands:
        return 'jlog: no log', None, None
    lb, bt = r.choice(cands)
    base = jblocks[lb] * img.bs
    blk = bytearray(img.read(base, img.bs))
    what = 'jlog lblk %d type %d ' % (lb, bt)
    k = r.randrange(5)
    if k == 0:
        struct.pack_into('>I', blk, 4, r.choice([0, 1, 2, 3, 4, 5, 9]))
        what += 'blocktype'
    elif k == 1:
        seq = struct.unpack_from('>I', blk, 8)[0]
        struct.pack_into('>I', blk, 8, seq + r.choice([1, -1, 100]) & 0xffffffff)
        what += 'sequence'
    elif bt == 1:       # descriptor: a tag's target block or flags
        o = 12 + 8 * r.randrange(4)
        if k == 2:
            struct.pack_into('>I', blk, o, r.choice([0, 1, 2, img.nblocks, img.nblocks + 7,
                                                     0xffffffff, jblocks[0]]))
            what += 'tag block at %d' % o
        elif k == 3:
            struct.pack_into('>H', blk, o + 6, r.choice([0, 1, 2, 8, 0xffff]))
            what += 'tag flags at %d' % o
        else:
            for _ in range(r.randint(1, 8)):
                blk[12 + r.randrange(img.bs - 12)] ^= 1 << r.randrange(8)
            what += 'flips'
    elif bt == 5:       # revoke: r_count and the records
        if k == 2:
            struct.pack_into('>I', blk, 12, r.choice([0, 4, 15, 16 + 4, img.bs, img.bs + 4,
                                                    0xffffffff]))
            what += 'r_count'
        else:
            o = 16 + 4 * r.randrange(4)
            struct.pack_into('>I', blk, o, r.choice([0, 1, img.nblocks + 3, 0xffffffff]))
            what += 'record'
    else:               # commit and others: flips in the header area
        for _ in range(r.randint(1, 6)):
            blk[12 + r.randrange(64)] ^= 1 << r.randrange(8)
        what += 'flips'
    return what, base, blk


def main():
    if sys.argv[1] == 'map':
        make_map(Image(sys.argv[2]))
        return
    _, _, path, mapf, seed, i, cls = sys.argv
    img = Image(path)
    dirs, jblocks = [], []
    with open(mapf) as mf:
        for line in mf:
            w = line.split()
            if w[0] == 'dir':
                dirs.append((int(w[1]), int(w[2]), [int(x) for x in w[3:]]))
            elif w[0] == 'journal':
                jblocks = [int(x) for x in w[1:]]
    r = random.Random(int(seed) * 1000003 + int(i))
    fn = {'dir': lambda: mut_dirent(r, img, dirs),
          'htree': lambda: mut_htree(r, img, dirs),
          'jsb': lambda: mut_jsb(r, img, jblocks)}[cls]
    done = []
    for _ in range(r.choice([1, 1, 1, 2, 3])):
        what, off, data = fn()
        if data is not None:
            img.write(off, bytes(data))
        done.append(what)
    print('; '.join(done))


main()
