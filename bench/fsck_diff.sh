#!/usr/bin/env bash
# bench/fsck_diff.sh: differential check against e2fsck. Damages images
# at random and compares e3fsck -n's verdict with e2fsck -fn's on each:
# clean (exit 0), errors (exit 4 or 12) or failed (8: could not check).
# "missed" = e2fsck finds errors, e3fsck calls it clean; "extra" = the
# reverse; "other" = any other disagreement (one of them failed). Prints
# each disagreement with both tools' first lines, then the agreement in
# per cent. Each disagreeing image is kept in DIR for a look.
#
# Damage, one kind per case (the kind is drawn from the seed):
#   flip   1-4 bits flipped in metadata blocks (superblock and
#          descriptors, bitmaps, inode tables, directory blocks);
#   inode  one field of a reserved inode (1, 3-10) or of a file set to
#          random garbage (mode, blocks, block[0..14], flags, file_acl,
#          links, size, dtime);
#   bad    a block planted in the bad-block inode: random, metadata, a
#          file's, beyond the end;
#   sb     the primary superblock or a descriptor block zeroed, or one
#          group's bitmap or inode table pointed elsewhere.
# Images: with --all (the default without --image), four bases — 1 KiB
# and 4 KiB blocks, ext2 and ext3, with files, an htree directory,
# symlinks, a FIFO, devices and EAs — used in turn.
# With --repair, every case where both find errors is also repaired by
# each tool on its own copy (e3fsck -y, e2fsck -fy): "unclean" = e2fsck
# -fn still finds errors after e3fsck -y; "deleted more" = fewer inodes
# in use after e3fsck -y than after e2fsck -fy. The repair functions
# are apart from the verdict loop (repair_* below).
#   bench/fsck_diff.sh [--cases N] [--seed S] [--image IMG] [--dir DIR] [--repair]
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
export PATH=/sbin:/usr/sbin:$PATH
cases=200 seed=1 image= dir=/tmp/fsck-diff repair=0
while [ $# -gt 0 ]; do
	case $1 in
	--repair) repair=1; shift ;;
	--cases) cases=$2; shift 2 ;;
	--seed) seed=$2; shift 2 ;;
	--image) image=$2; shift 2 ;;
	--dir) dir=$2; shift 2 ;;
	*) echo "usage: $0 [--cases N] [--seed S] [--image IMG] [--dir DIR] [--repair]" >&2; exit 16 ;;
	esac
done

# ---- repairs (--repair) ------------------------------------------------------
repaired=0 clean_after=0 deleted_more=0 e3_deleted=0 e2_deleted=0 hangs=0

# repair_used IMAGE: inodes in use by e2fsck -fn's summary ("" if none)
repair_used() {
	e2fsck -fn "$1" 2>/dev/null | tail -1 | sed -n 's|^[^:]*: \([0-9]*\)/.*|\1|p'
}

# repair_case IMAGE N: both tools repair a copy; counts and keeps the
# images of every exception
repair_case() {
	local img=$1 n=$2 r3 ra u0 u3 u2
	cp "$img" "$dir/r3.img"
	cp "$img" "$dir/r2.img"
	u0=$(repair_used "$img")
	timeout 60 "${E3FSCK:-$top/misc/e3fsck}" -y "$dir/r3.img" >"$dir/r3.out" 2>&1; r3=$?
	e2fsck -fy "$dir/r2.img" >/dev/null 2>&1
	repaired=$((repaired + 1))
	if [ $r3 -eq 124 ]; then
		hangs=$((hangs + 1)); cp "$img" "$dir/hang-$n.img"
		echo "hang $n"
		return
	fi
	e2fsck -fn "$dir/r3.img" >"$dir/ra.out" 2>&1; ra=$?
	if [ $ra -eq 0 ]; then
		clean_after=$((clean_after + 1))
	else
		cp "$img" "$dir/unclean-$n.img"
		echo "unclean $n (e3fsck -y $r3): $(grep -v '^Pass\|^e2fsck\|^$' "$dir/ra.out" | head -1)"
	fi
	u3=$(repair_used "$dir/r3.img")
	u2=$(repair_used "$dir/r2.img")
	[ -n "$u0" ] && [ -n "$u3" ] && [ -n "$u2" ] || return
	[ "$u3" -lt "$u0" ] && e3_deleted=$((e3_deleted + u0 - u3))
	[ "$u2" -lt "$u0" ] && e2_deleted=$((e2_deleted + u0 - u2))
	if [ "$u3" -lt "$u2" ]; then
		deleted_more=$((deleted_more + 1)); cp "$img" "$dir/deleted-$n.img"
		echo "deleted more $n: $((u2 - u3)) inodes more than e2fsck -fy"
	fi
}

repair_summary() {
	local pct=100
	[ "$repaired" -gt 0 ] && pct=$(awk -v c="$clean_after" -v n="$repaired" 'BEGIN { printf "%.1f", 100 * c / n }')
	echo "repaired $repaired clean-after $clean_after ($pct%) deleted-more $deleted_more hangs $hangs inodes-deleted e3fsck $e3_deleted e2fsck $e2_deleted"
}
mkdir -p "$dir"
e3fsck=${E3FSCK:-$top/misc/e3fsck}

# make_bases: the four base images, each clean to e2fsck -fn
make_bases() {
	local t=$dir/tree bs type i name
	rm -rf "$t"; mkdir -p "$t/a" "$t/c/sub" "$t/h"
	for i in $(seq 1 40); do head -c $((i * 700)) /dev/urandom >"$t/a/f$i"; done
	head -c 400000 /dev/urandom >"$t/big"
	for i in $(seq 0 299); do echo "$i" >"$t/h/name-$i-$(printf 'x%.0s' $(seq 1 $((i % 40))))"; done
	echo x >"$t/c/sub/x"
	ln -s /etc/passwd "$t/sym"
	ln -s "$(printf 'l%.0s' $(seq 1 100))" "$t/longsym"
	mkfifo "$t/fifo"
	for bs in 1024 4096; do
		for type in ext2 ext3; do
			name=$dir/base-$bs-$type.img
			mke2fs -q -F -t "$type" -b "$bs" -g $((bs == 1024 ? 2048 : 1024)) \
				-N 600 -O dir_index -d "$t" "$name" 16M >/dev/null 2>&1
			debugfs -w -f - "$name" >/dev/null 2>&1 <<-EOF
			mknod cdev c 1 3
			ea_set /a/f1 user.a $(printf 'v%.0s' $(seq 1 300))
			ea_set /fifo user.a $(printf 'v%.0s' $(seq 1 300))
			ea_set /sym user.a $(printf 'v%.0s' $(seq 1 300))
			ea_set /cdev user.a small
			EOF
			e2fsck -fyD "$name" >/dev/null 2>&1
			e2fsck -fn "$name" >/dev/null 2>&1 ||
				{ echo "base $name is not clean" >&2; exit 8; }
			echo "$name"
		done
	done
}

# meta IMAGE OUT: the image's metadata blocks, one a line
meta() {
	local img=$1 bs
	bs=$(dumpe2fs -h "$img" 2>/dev/null | sed -n 's/^Block size: *//p')
	{
		echo $(( bs == 1024 ? 1 : 0 ))
		dumpe2fs "$img" 2>/dev/null | sed -n 's/.*Group descriptors at \([0-9]*\)-\([0-9]*\).*/\1 \2/p;
			s/.*Block bitmap at \([0-9]*\).*/\1/p; s/.*Inode bitmap at \([0-9]*\).*/\1/p;
			s/.*Inode table at \([0-9]*\)-\([0-9]*\).*/\1 \2/p' |
			awk 'NF == 1 {print} NF == 2 {for (b = $1; b <= $2; b++) print b}'
		debugfs -R "ls -p /" "$img" 2>/dev/null | awk -F/ '$3 ~ /^04/ {print $2}' | while read -r ino; do
			debugfs -R "blocks <$ino>" "$img" 2>/dev/null | tr ' ' '\n'
		done
		for d in /a /c /h; do debugfs -R "blocks $d" "$img" 2>/dev/null | tr ' ' '\n'; done
	} | grep -E '^[0-9]+$' | sort -un >"$2"
}

# verdict CODE
verdict() {
	if [ "$1" -eq 0 ]; then echo clean
	elif [ $(($1 & 4)) -ne 0 ]; then echo errors
	else echo failed
	fi
}

if [ -n "$image" ]; then
	bases=$image
else
	bases=$(make_bases) || exit 8
fi
for b in $bases; do meta "$b" "$b.meta"; done
read -r -a base_list <<<"$(echo $bases)"
nb=${#base_list[@]}
agree=0 missed=0 extra=0 other=0 needed_b=0
declare -A kinds_n kinds_bad
for i in $(seq 1 "$cases"); do
	base=${base_list[$(( (i - 1) % nb ))]}
	cp "$base" "$dir/c.img"
	kind=$(python3 - "$dir/c.img" "$base.meta" "$seed" "$i" <<'PY'
import random, struct, subprocess, sys
path, meta, seed, i = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
r = random.Random(seed * 7919 + i)
blocks = [int(x) for x in open(meta)]
with open(path, 'rb') as f:
    f.seek(1024); sb = f.read(1024)
nblocks = struct.unpack('<I', sb[4:8])[0]
first = struct.unpack('<I', sb[20:24])[0]
bs = 1024 << struct.unpack('<I', sb[24:28])[0]
bpg = struct.unpack('<I', sb[32:36])[0]
ngroups = (nblocks - first + bpg - 1) // bpg
def dbg(*cmds):
    for c in cmds:
        subprocess.run(['debugfs', '-w', '-R', c, path], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
def garbage():
    return r.choice([0, 1, r.randrange(1 << 8), r.randrange(1 << 16),
                     r.randrange(1 << 32), r.randrange(nblocks)])
kind = r.choice(['flip', 'flip', 'inode', 'bad', 'sb'])
if kind == 'flip':
    with open(path, 'r+b') as f:
        for _ in range(r.randint(1, 4)):
            off = r.choice(blocks) * bs + r.randrange(bs)
            if off < 1024:
                continue
            f.seek(off); b = f.read(1)
            f.seek(off); f.write(bytes([b[0] ^ (1 << r.randrange(8))]))
elif kind == 'inode':
    ino = r.choice([1, 3, 4, 5, 6, 7, 9, 10, 12, 13, 14, 20, 30])
    field = r.choice(['mode', 'blocks', 'block[0]', 'block[5]', 'block[IND]',
                      'block[DIND]', 'flags', 'file_acl', 'links_count',
                      'size', 'dtime', 'uid'])
    val = garbage()
    if field == 'mode':
        val = r.choice([0, 0o100644, 0o40755, 0o120777, 0o10644, 0o20644,
                        0o140755, 0o170644, val & 0xffff])
    elif field == 'flags':
        val = r.choice([0x1000, 0x10, 0x80000, 0x800, val])
    dbg(f'sif <{ino}> {field} {val}')
    kind = f'inode-{ino}-{field}'
elif kind == 'bad':
    what = r.choice(['free', 'meta', 'file', 'beyond', 'ind'])
    b = {'free': r.randrange(first + 1, nblocks), 'meta': r.choice(blocks),
         'file': r.choice(blocks[len(blocks) // 2:]), 'beyond': nblocks + r.randrange(1000),
         'ind': r.randrange(first + 1, nblocks)}[what]
    slot = 'block[IND]' if what == 'ind' else f'block[{r.randrange(12)}]'
    dbg(f'sif <1> {slot} {b}', f'sif <1> blocks {bs // 512}')
    kind = f'bad-{what}'
else:
    what = r.choice(['super', 'desc', 'bbitmap', 'ibitmap', 'itable'])
    g = r.randrange(ngroups)
    if what == 'super':
        with open(path, 'r+b') as f:
            f.seek(1024); f.write(b'\0' * 1024)
    elif what == 'desc':
        with open(path, 'r+b') as f:
            f.seek((first + 1) * bs); f.write(b'\0' * bs)
    else:
        field = {'bbitmap': 'block_bitmap', 'ibitmap': 'inode_bitmap',
                 'itable': 'inode_table'}[what]
        dbg(f'set_bg {g} {field} {garbage()}')
    kind = f'sb-{what}'
print(kind)
PY
)
	kinds_n[${kind%%-*}]=$(( ${kinds_n[${kind%%-*}]:-0} + 1 ))
	rc=0; e2fsck -fn "$dir/c.img" >"$dir/e2.out" 2>&1 || rc=$?
	a=$(verdict $rc)
	rc=0; timeout 20 "$e3fsck" -n "$dir/c.img" >"$dir/e3.out" 2>&1 || rc=$?
	b=$(verdict $rc)
	[ $rc -eq 124 ] && b=hang
	# e2fsck looks for a backup superblock only where the default group
	# size puts one; e3fsck looks further (small groups). Where e2fsck
	# gave up and e3fsck used a backup, e2fsck is asked again with -b
	# at that backup, so both judge the same superblock (counted apart)
	sb=$(sed -n 's/.*using backup superblock \([0-9]*\).*/\1/p' "$dir/e3.out" | head -1)
	if [ "$a" = failed ] && [ -n "$sb" ]; then
		for bsz in 1024 2048 4096; do
			rc=0; e2fsck -fn -b "$sb" -B "$bsz" "$dir/c.img" >"$dir/e2.out" 2>&1 || rc=$?
			[ $rc -ne 8 ] && break
		done
		a=$(verdict $rc)
		needed_b=$((needed_b + 1))
	fi
	# a running tally, so a sweep cut short still says where it stood
	[ $((i % 50)) -ne 0 ] || echo "# after $i: agree $agree missed $missed extra $extra other $other"
	[ $repair = 1 ] && [ "$a" = errors ] && [ "$b" = errors ] &&
		repair_case "$dir/c.img" "$i"
	if [ "$a" = "$b" ]; then
		agree=$((agree + 1))
		continue
	fi
	kinds_bad[${kind%%-*}]=$(( ${kinds_bad[${kind%%-*}]:-0} + 1 ))
	if [ "$a" = errors ] && [ "$b" = clean ]; then
		missed=$((missed + 1)); tag=missed
	elif [ "$a" = clean ] && [ "$b" = errors ]; then
		extra=$((extra + 1)); tag=extra
	else
		other=$((other + 1)); tag="other-$a-$b"
	fi
	cp "$dir/c.img" "$dir/$tag-$i.img"
	echo "$tag $i $(basename "$base") $kind"
	echo "    e2: $(grep -v '^Pass\|^e2fsck \|^$\|^Fix\|^Clear' "$dir/e2.out" | head -1)"
	echo "    e3: $(grep -v '^$' "$dir/e3.out" | head -1)"
done
echo "cases $cases agree $agree missed $missed extra $extra other $other (e2fsck given -b: $needed_b)"
for k in "${!kinds_n[@]}"; do
	echo "  $k: ${kinds_n[$k]} cases, ${kinds_bad[$k]:-0} disagree"
done
awk -v a="$agree" -v n="$cases" 'BEGIN { printf "verdict agreement %.1f%%\n", 100 * a / n }'
[ $repair = 1 ] && repair_summary
exit 0
