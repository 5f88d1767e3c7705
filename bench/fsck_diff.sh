#!/usr/bin/env bash
# bench/fsck_diff.sh: differential check against e2fsck. Flips a few bits
# in an image's metadata (superblock and descriptors, bitmaps, inode
# tables, directory blocks) and compares e3fsck -n with e2fsck -fn:
# "missed" = e2fsck finds errors, e3fsck calls it clean; "extra" = the
# reverse. Each case's image is kept in DIR for a look.
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
if [ -z "$image" ]; then
	image=$dir/base.img
	bash "$top/tests/corrupt.sh" --base "$image" >/dev/null
fi
bs=$(dumpe2fs -h "$image" 2>/dev/null | sed -n 's/^Block size: *//p')
# metadata blocks: superblock+descriptors, bitmaps, inode tables, directories
{
	echo $(( bs == 1024 ? 1 : 0 ))
	dumpe2fs "$image" 2>/dev/null | sed -n 's/.*Group descriptors at \([0-9]*\)-\([0-9]*\).*/\1 \2/p;
		s/.*Block bitmap at \([0-9]*\).*/\1/p; s/.*Inode bitmap at \([0-9]*\).*/\1/p;
		s/.*Inode table at \([0-9]*\)-\([0-9]*\).*/\1 \2/p' | awk 'NF == 1 {print} NF == 2 {for (b = $1; b <= $2; b++) print b}'
	debugfs -R "ls -p /" "$image" 2>/dev/null | awk -F/ '$3 ~ /^04/ {print $2}' | while read -r ino; do
		debugfs -R "blocks <$ino>" "$image" 2>/dev/null | tr ' ' '\n'
	done
} | grep -E '^[0-9]+$' | sort -un > "$dir/meta.txt"
missed=0 extra=0
for i in $(seq 1 "$cases"); do
	cp "$image" "$dir/c.img"
	python3 - "$dir/c.img" "$dir/meta.txt" "$bs" "$seed" "$i" <<'PY'
import random, sys
path, meta, bs, seed, i = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
blocks = [int(x) for x in open(meta)]
r = random.Random(seed * 7919 + i)
with open(path, 'r+b') as f:
    for _ in range(r.randint(1, 4)):
        off = r.choice(blocks) * bs + r.randrange(bs)
        if off < 1024:
            continue
        f.seek(off); b = f.read(1)
        f.seek(off); f.write(bytes([b[0] ^ (1 << r.randrange(8))]))
PY
	e2fsck -fn "$dir/c.img" >"$dir/e2.out" 2>&1; a=$?
	timeout 20 "${E3FSCK:-$top/misc/e3fsck}" -n "$dir/c.img" >"$dir/e3.out" 2>&1; b=$?
	if [ $a -ne 0 ] && [ $b -eq 0 ]; then
		missed=$((missed + 1)); cp "$dir/c.img" "$dir/missed-$i.img"
		echo "missed $i: $(grep -v '^Pass\|^e2fsck\|^$' "$dir/e2.out" | head -1)"
	elif [ $a -eq 0 ] && [ $b -ne 0 ]; then
		extra=$((extra + 1)); cp "$dir/c.img" "$dir/extra-$i.img"
		echo "extra $i: $(grep 'pass' "$dir/e3.out" | head -1)"
	fi
	[ $repair = 1 ] && [ $a -ne 0 ] && [ $b -ne 0 ] && repair_case "$dir/c.img" "$i"
done
echo "cases $cases missed $missed extra $extra"
[ $repair = 1 ] && repair_summary
