#!/usr/bin/env bash
# bench/memgrowth.sh [--quick] [--runs N] [COUNTS...]
# How e3cp's peak RSS grows with the number of source files: trees of N
# one-block files (1000 per directory) copied by `e3cp -j2` into the same
# image (same size, same inode count, so the per-image costs — bitmaps,
# the journal's bounded memory — are equal), and `mke2fs -d` beside it.
# Prints a Markdown table: median peak RSS of N runs (default 3) per
# count, the growth per file from the previous count, and e3cp's and
# mke2fs' median wall and CPU (user + sys) time with e3cp's per file, so a
# line shows whether the time stays linear in the file count; e3cp's CPU
# split into user and system time per file, and beside it the copy floor's
# CPU per file (bench/copyfloor -j2: the same walk, open, read and write,
# no metadata), so that growth in the kernel's part (a bigger tree in the
# dentry and page caches) is told from growth in ours. Source trees and
# images live on /dev/shm (removed at the end).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
export PATH="$top/misc:/sbin:/usr/sbin:$PATH"
runs=3 counts=""
while [ $# -gt 0 ]; do
	case $1 in
	--quick) counts="10000 20000 40000"; runs=1 ;;
	--runs) runs=$2; shift ;;
	[0-9]*) counts="$counts $1" ;;
	*) echo "usage: $0 [--quick] [--runs N] [COUNTS...]" >&2; exit 2 ;;
	esac
	shift
done
[ -n "$counts" ] || counts="50000 100000 200000 400000"
base=/dev/shm/e3memgrowth
rm -rf "$base"; mkdir -p "$base"
trap 'rm -rf "$base"' EXIT

max=0
for n in $counts; do [ "$n" -gt "$max" ] && max=$n; done
inodes=$(( max * 2 + 1024 ))
mib=$(( max * 5 / 256 + 256 ))

# make_tree DIR N: N files of one byte, 1000 per directory
make_tree() {
	python3 - "$1" "$2" <<'EOF'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    d = os.path.join(root, "d%04d" % (i // 1000))
    if i % 1000 == 0:
        os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "f%06d" % i), "wb") as f:
        f.write(b"x")
EOF
}

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# measure CMD...: "rss_kib wall_s cpu_s user_s sys_s", each the median
# of $runs runs
measure() {
	local r rss=() wall=() cpu=() usr=() sys=()
	for r in $(seq 1 "$runs"); do
		rm -f "$base/img"
		"$@" >/dev/null 2>&1 || { echo "failed: $*" >&2; exit 1; }
		read -r k e u s < <(tail -1 "$base/rss")
		rss+=("$k") wall+=("$e") cpu+=("$(echo "$u + $s" | bc -l)")
		usr+=("$u") sys+=("$s")
	done
	echo "$(printf '%s\n' "${rss[@]}" | median)" \
		"$(printf '%s\n' "${wall[@]}" | median)" \
		"$(printf '%s\n' "${cpu[@]}" | median)" \
		"$(printf '%s\n' "${usr[@]}" | median)" \
		"$(printf '%s\n' "${sys[@]}" | median)"
}

e3() {	# SRC
	e3mkfs -q -F -b 4096 -N $inodes "$base/img" ${mib}M &&
	/usr/bin/time -f "%M %e %U %S" -o "$base/rss" e3cp --quiet -j2 "$1" "$base/img"
}
floor() {	# SRC
	/usr/bin/time -f "%M %e %U %S" -o "$base/rss" \
		"$top/bench/copyfloor" -j2 "$1" "$base/img"
}
mk() {	# SRC
	/usr/bin/time -f "%M %e %U %S" -o "$base/rss" \
		mke2fs -q -F -t ext3 -b 4096 -N $inodes -d "$1" "$base/img" ${mib}M
}

echo "# bench/memgrowth.sh, $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$top" rev-parse --short HEAD 2>/dev/null), ${mib} MiB image, $inodes inodes, median of $runs"
echo
echo "| files | e3cp -j2 peak RSS MiB | e3cp growth, bytes/file | e3cp wall s (µs/file) | e3cp CPU s (µs/file) | e3cp user / sys µs/file | copy floor CPU s (µs/file) | mke2fs -d peak RSS MiB | mke2fs -d wall s (µs/file) |"
echo "|---|---|---|---|---|---|---|---|---|"
prev_n="" prev_k=""
for n in $counts; do
	src=$base/t$n
	make_tree "$src" "$n"
	read -r k ew ec eu es < <(measure e3 "$src")
	read -r _ _ fc _ _ < <(measure floor "$src")
	read -r m mw mc _ _ < <(measure mk "$src")
	grow=""
	[ -n "$prev_n" ] && grow=$(( (k - prev_k) * 1024 / (n - prev_n) ))
	printf '| %s | %.1f | %s | %.2f (%.1f) | %.2f (%.1f) | %.1f / %.1f | %.2f (%.1f) | %.1f | %.2f (%.1f) |\n' \
		"$n" "$(echo "$k / 1024" | bc -l)" "$grow" \
		"$ew" "$(echo "$ew * 1000000 / $n" | bc -l)" \
		"$ec" "$(echo "$ec * 1000000 / $n" | bc -l)" \
		"$(echo "$eu * 1000000 / $n" | bc -l)" \
		"$(echo "$es * 1000000 / $n" | bc -l)" \
		"$fc" "$(echo "$fc * 1000000 / $n" | bc -l)" \
		"$(echo "$m / 1024" | bc -l)" \
		"$mw" "$(echo "$mw * 1000000 / $n" | bc -l)"
	prev_n=$n prev_k=$k
	rm -rf "$src"
done
