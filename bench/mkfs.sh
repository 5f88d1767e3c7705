#!/usr/bin/env bash
# bench/mkfs.sh: e3mkfs against mke2fs -t ext3, in the same run, making a
# 1 TiB sparse image. Two cases: a new file (IMAGE does not exist) and an
# existing 1 TiB sparse file overwritten with -F. Each tool runs REPS times
# per case, alternating, and the median wall time is reported.
# Usage: bench/mkfs.sh [SIZE [REPS]]     (defaults: 1T 5)
# Scratch files go to $TMPDIR (default /tmp).
set -euo pipefail
cd "$(dirname "$0")/.."
size=${1:-1T}
reps=${2:-5}
e3mkfs=$PWD/misc/e3mkfs
[ -x "$e3mkfs" ] || { echo "build first: make" >&2; exit 1; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/e3mkfs-bench.XXXXXX")
trap 'rm -rf "$dir"' EXIT
img=$dir/bench.img

now() { date +%s.%N; }

# run_once CASE TOOL: prints the seconds one run took
run_once() {
	local case=$1 tool=$2 t0 t1
	rm -f "$img"
	[ "$case" = existing ] && truncate -s "$size" "$img"
	sync
	t0=$(now)
	case $tool in
	mke2fs) mke2fs -q -F -t ext3 "$img" "$size" >/dev/null ;;
	e3mkfs) "$e3mkfs" -q -F "$img" "$size" ;;
	esac
	t1=$(now)
	echo "$t1 - $t0" | bc -l
}

median() { sort -n | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.3f", m}'; }

echo "## mkfs: $size sparse image, median of $reps runs (e2fsprogs $(mke2fs -V 2>&1 | head -1 | awk '{print $2}'))"
echo
echo "| case | mke2fs -t ext3 (s) | e3mkfs (s) | e3mkfs / mke2fs |"
echo "| --- | ---: | ---: | ---: |"
for case in new existing; do
	m_times=() e_times=()
	for ((i = 0; i < reps; i++)); do
		m_times+=("$(run_once "$case" mke2fs)")
		e_times+=("$(run_once "$case" e3mkfs)")
	done
	m=$(printf '%s\n' "${m_times[@]}" | median)
	e=$(printf '%s\n' "${e_times[@]}" | median)
	ratio=$(echo "$e / $m" | bc -l)
	printf '| %s file | %s | %s | %.2f |\n' "$case" "$m" "$e" "$ratio"
done
