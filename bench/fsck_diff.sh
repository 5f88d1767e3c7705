#!/usr/bin/env bash
# bench/fsck_diff.sh: differential check against e2fsck. Flips a few bits
# in an image's metadata (superblock and descriptors, bitmaps, inode
# tables, directory blocks) and compares e3fsck -n with e2fsck -fn:
# "missed" = e2fsck finds errors, e3fsck calls it clean; "extra" = the
# reverse. Each case's image is kept in DIR for a look.
#   bench/fsck_diff.sh [--cases N] [--seed S] [--image IMG] [--dir DIR]
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
export PATH=/sbin:/usr/sbin:$PATH
cases=200 seed=1 image= dir=/tmp/fsck-diff
while [ $# -gt 0 ]; do
	case $1 in
	--cases) cases=$2; shift 2 ;;
	--seed) seed=$2; shift 2 ;;
	--image) image=$2; shift 2 ;;
	--dir) dir=$2; shift 2 ;;
	*) echo "usage: $0 [--cases N] [--seed S] [--image IMG] [--dir DIR]" >&2; exit 16 ;;
	esac
done
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
done
echo "cases $cases missed $missed extra $extra"
