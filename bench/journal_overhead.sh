#!/usr/bin/env bash
# journal_overhead.sh: what journaling costs a bulk load. Loads the same
# deterministic tree (bench/jload: NFILES files, ~49 KiB average, THREADS
# threads, commits only by the journal's own policy) into a fresh ext3
# image twice per round — journaled, and with E3_JOURNAL=bypass (metadata
# written home unjournaled; a benchmark-only switch) — and prints the
# times and the overhead. Both include the final fsync of the image.
#   bench/journal_overhead.sh [NFILES=15000] [THREADS=4] [SIZE=2G] [ROUNDS=3]
set -eu
cd "$(dirname "$0")/.."
nfiles=${1:-15000} threads=${2:-4} size=${3:-2G} rounds=${4:-3}
dir=$(mktemp -d /tmp/journal-bench-XXXXXX)
trap 'rm -rf "$dir"' EXIT
mke2fs -q -t ext3 -b 4096 -F "$dir/base.img" "$size" >/dev/null

run() {	# MODE -> seconds
	cp --sparse=always "$dir/base.img" "$dir/x.img"
	sync
	local t0 t1
	t0=$(date +%s.%N)
	if [ "$1" = bypass ]; then
		E3_TEST_KNOBS=1 E3_JOURNAL=bypass JLOAD_COMMIT_EVERY=0 bench/jload load "$dir/x.img" "$nfiles" "$threads" "$dir/log"
	else
		JLOAD_COMMIT_EVERY=0 bench/jload load "$dir/x.img" "$nfiles" "$threads" "$dir/log"
	fi
	t1=$(date +%s.%N)
	e2fsck -fn "$dir/x.img" >/dev/null 2>&1 || { echo "e2fsck -fn failed ($1)" >&2; exit 1; }
	bench/jload verify "$dir/x.img" "$nfiles" "$threads" "$dir/log" >/dev/null
	echo "$t1 - $t0" | bc
}

printf '%-6s %12s %12s %9s\n' round journaled bypass overhead
tj=0 tb=0 ratios=()
for ((r = 1; r <= rounds; r++)); do
	j=$(run journal)
	b=$(run bypass)
	tj=$(echo "$tj + $j" | bc) tb=$(echo "$tb + $b" | bc)
	ratios+=("$(echo "($j / $b - 1) * 100" | bc -l)")
	printf '%-6s %11.2fs %11.2fs %8.1f%%\n' "$r" "$j" "$b" "$(echo "($j / $b - 1) * 100" | bc -l)"
done
printf '%-6s %11.2fs %11.2fs %8.1f%%\n' total "$tj" "$tb" "$(echo "($tj / $tb - 1) * 100" | bc -l)"
# the machine is shared: the median round says more than the total
printf '%-6s %36.1f%%\n' median "$(printf '%s\n' "${ratios[@]}" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')"
