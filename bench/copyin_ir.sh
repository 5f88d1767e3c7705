#!/usr/bin/env bash
# bench/copyin_ir.sh BASE_MISC NEW_MISC SRC [--jobs "1 2"] [--inodes N] [--size SIZE]
# User-space instructions of one e3cp copy of SRC into a fresh image on
# /dev/shm, counted by valgrind's callgrind, for two builds (directories
# holding e3mkfs and e3cp, as for bench/copyin_ab.sh). Unlike wall and
# CPU time these counts do not move with the machine's load (the same run
# three times: within 0.3% at -j2, where thread timing moves lock and
# futex paths), so they resolve cuts of a few percent
# that a shared machine hides; they say nothing of the kernel's part
# (reads, writes, lookups: two thirds of the copy's CPU time on tmpfs).
# memset and memcpy are shown apart: valgrind counts each step of a
# "rep stos/movs" as an instruction, so their counts are bytes-like, not
# cycles-like. Each image is checked with e2fsck -fn.
# Example: bash bench/copyin_ir.sh /tmp/base-misc misc /tmp/e3bench-corpus/small
set -u
[ $# -ge 3 ] || { sed -n 2,14p "$0" >&2; exit 2; }
base=$(cd "$1" && pwd) new=$(cd "$2" && pwd) src=$3
shift 3
jobs="1 2" inodes="" size=""
while [ $# -gt 0 ]; do
	case $1 in
	--jobs) jobs=$2; shift ;;
	--inodes) inodes=$2; shift ;;
	--size) size=$2; shift ;;
	*) echo "usage: see $0's head" >&2; exit 2 ;;
	esac
	shift
done
command -v valgrind >/dev/null && command -v callgrind_annotate >/dev/null ||
	{ echo "$0: needs valgrind (Debian package valgrind)" >&2; exit 2; }
export PATH="/sbin:/usr/sbin:$PATH"
work=$(mktemp -d /dev/shm/e3ir.XXXXXX) || exit 2
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
if [ -z "$inodes" ]; then
	inodes=$(($(find "$src" | wc -l) * 2 + 1024))
fi
if [ -z "$size" ]; then
	kib=$(du -sk "$src" | cut -f1)
	size=$((kib * 16 / 10 / 1024 + inodes / 4096 + 64))M
fi
nfiles=$(find "$src" -type f | wc -l)

# count MISC JOBS: "total memset+memcpy" instructions of one copy
count() {
	local m=$1 j=$2 out=$work/cg.out
	"$m/e3mkfs" -q -F -b 4096 -N "$inodes" "$work/img" "$size" || return 1
	valgrind --tool=callgrind --callgrind-out-file="$out" \
		"$m/e3cp" --quiet -j"$j" "$src" "$work/img" 2>"$work/log" ||
		{ tail -3 "$work/log" >&2; return 1; }
	e2fsck -fn "$work/img" >/dev/null 2>&1 ||
		{ echo "$0: $m/e3cp -j$j: image not clean" >&2; return 1; }
	callgrind_annotate --inclusive=no "$out" 2>/dev/null | awk '
		/PROGRAM TOTALS/ { gsub(",", "", $1); t = $1 }
		!/=>/ && /:__mem(set|cpy|move)_/ { gsub(",", "", $1); m += $1 }
		END { printf "%.0f %.0f\n", t, m }'
	rm -f "$work/img" "$out"
}

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $src ($nfiles files), image on /dev/shm, -N $inodes, $size, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| e3cp | build | instructions | per file | per file, memset/memcpy left out | new/base | new/base, memset/memcpy left out |"
echo "|---|---|---|---|---|---|---|"
for j in $jobs; do
	read -r bt bm <<<"$(count "$base" "$j")" || exit 1
	read -r nt nm <<<"$(count "$new" "$j")" || exit 1
	[ -n "$bt" ] && [ -n "$nt" ] || exit 1
	awk -v j="$j" -v bt="$bt" -v bm="$bm" -v nt="$nt" -v nm="$nm" -v n="$nfiles" 'BEGIN {
		printf "| -j%s | base | %.0f | %.0f | %.0f | - | - |\n", j, bt, bt / n, (bt - bm) / n
		printf "| -j%s | new | %.0f | %.0f | %.0f | %.3f | %.3f |\n", j, nt, nt / n, (nt - nm) / n, nt / bt, (nt - nm) / (bt - bm)
	}'
done
