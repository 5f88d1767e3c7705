#!/usr/bin/env bash
# age.sh: a realistically fragmented ext3 image, deterministic for a seed.
#
# Usage: bench/age.sh IMAGE [SIZE] [SEED] [FILL%]
#   SIZE  image size for mke2fs (default 1G), 4 KiB blocks
#   SEED  workload seed (default 1);  FILL  target fill (default 80)
#   AGE_MODE=mount|lib   force a path (default: mount as root, else lib)
#
# mount (root): mke2fs -t ext3, a loop mount by the kernel, and
#   bench/age.py: cycles of interleaved appending streams (an ext3 mount
#   has no delayed allocation: each append gets its blocks at the write,
#   between the other streams'), rewrites and deletes, until the volume is FILL% full; hard links,
#   symlinks, FIFOs, a socket, devices, xattrs, sparse files, ns times.
#   This is the fragmentation a server's volume gets.
# lib (no root): e3mkfs and rounds of e3cp --alloc=none -j4 (four writers
#   with no reservations fill the holes side by side) and debugfs rm of a
#   seeded share of the files, until FILL% full.
# Prints e2fsck's summary line (non-contiguous %) at the end.
set -eu

img=$1 size=${2:-1G} seed=${3:-1} fill=${4:-80}
here=$(cd "$(dirname "$0")" && pwd)
BIN=${E3BIN:-$here/../misc}
mode=${AGE_MODE:-$([ "$(id -u)" -eq 0 ] && echo mount || echo lib)}
work=$(mktemp -d /tmp/defrag-age-XXXXXX)
trap 'mountpoint -q "$work/mnt" 2>/dev/null && umount "$work/mnt"; rm -rf "$work"' EXIT

used_pct() {
	dumpe2fs -h "$img" 2>/dev/null | awk -F: '
		/^Block count/ {t = $2} /^Free blocks/ {f = $2}
		END {printf "%d\n", 100 * (t - f) / t}'
}

case $mode in
mount)
	rm -f "$img"
	mke2fs -q -F -t ext3 -b 4096 -E root_owner=0:0 "$img" "$size"
	mkdir "$work/mnt"
	mount -o loop -t ext3 "$img" "$work/mnt"
	python3 "$here/age.py" "$work/mnt" "$seed" "$fill"
	umount "$work/mnt"
	;;
lib)
	rm -f "$img"
	"$BIN/e3mkfs" -q -F -b 4096 "$img" "$size"
	round=0
	while [ "$(used_pct)" -lt "$fill" ] && [ $round -lt 40 ]; do
		round=$((round + 1))
		python3 - "$work/src" "$seed" "$round" <<'EOF'
import os, random, sys
d, seed, rnd = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(seed * 1000 + rnd)
buf = random.Random(seed).randbytes(1 << 22)
os.makedirs(d, exist_ok=True)
for i in range(60):
    n = min(int(2 ** rng.uniform(10, 23)), len(buf))
    o = rng.randrange(len(buf) - n + 1)
    with open(os.path.join(d, "r%03d_%03d" % (rnd, i)), "wb") as f:
        f.write(buf[o:o + n])
EOF
		free_kb=$(( $(dumpe2fs -h "$img" 2>/dev/null | awk -F: '/^Free blocks/ {print $2+0}') * 4 ))
		if [ $(( $(du -sk "$work/src" | cut -f1) + 2048 )) -gt "$free_kb" ]; then
			rm -rf "$work/src"; break
		fi
		"$BIN/e3cp" --quiet --alloc=none -j4 "$work/src" "$img:/round$round"
		rm -rf "$work/src"
		# delete a seeded third of what the earlier rounds left
		debugfs -R "ls -p /" "$img" 2>/dev/null | awk -F/ '$6 ~ /^round/ {print $6}' |
		while read -r d; do
			debugfs -R "ls -p /$d" "$img" 2>/dev/null | awk -F/ '$6 ~ /^r/ {print $6}' |
			awk -v d="$d" -v s="$seed$round" 'BEGIN {srand(s)} rand() < 0.33 {print "rm /" d "/" $0}'
		done > "$work/rm.cmds"
		debugfs -w -f "$work/rm.cmds" "$img" >/dev/null 2>&1
	done
	;;
*) echo "age.sh: AGE_MODE: mount or lib" >&2; exit 16 ;;
esac
e2fsck -fn "$img" 2>&1 | tail -1
