#!/usr/bin/env bash
# bench/parload.sh: the 2004 ext3 reservation experiment, offline.
#
# For threads 1 4 8 16 32 64 128 256 and allocation modes none / list /
# rbtree, N threads each stream their own file into a fresh ext3 image in
# 4 KiB appends without a size hint (1 GiB in total), through
# bench/parload. Per cell: MB/s, runs per file in e2fsck's block order
# (average and worst; an in-line indirect block does not break a run),
# excess runs (beyond 1 + block groups crossed) per file, and e2fsck's
# "non-contiguous" percentage. Then a size-hint column at 256 threads,
# and — as root — the kernel's ext3 with the same writer pattern through a
# loop mount. Then the throughput of the widest thread count against one
# thread (rbtree): --ratio-rounds rounds (default 5), the two in turn,
# the first swapped each round, reported as the median of the per-round
# ratios with min–max and the CPU time (user + sys) of each, since one
# cell's MB/s is only as steady as the machine. Writes
# bench/results/parload.md (Markdown table), parload.dat and parload.png
# (gnuplot), and prints the table.
#
# usage: bench/parload.sh [--total SIZE] [--threads "1 4 ..."] [--modes "..."]
#                         [--image-size SIZE] [--append SIZE] [--no-kernel]
#                         [--ratio-rounds N]
set -u
cd "$(dirname "$0")/.." || exit 2
top=$PWD
parload=$top/bench/parload
total=1G append=4K image_size=4G kernel=1 ratio_rounds=5
threads_list="1 4 8 16 32 64 128 256"
modes="none list rbtree"
while [ $# -gt 0 ]; do
	case "$1" in
	--total) total=$2; shift 2 ;;
	--append) append=$2; shift 2 ;;
	--threads) threads_list=$2; shift 2 ;;
	--modes) modes=$2; shift 2 ;;
	--image-size) image_size=$2; shift 2 ;;
	--no-kernel) kernel=0; shift ;;
	--ratio-rounds) ratio_rounds=$2; shift 2 ;;
	*) echo "usage: $0 [--total SIZE] [--threads LIST] [--modes LIST] [--image-size SIZE] [--append SIZE] [--no-kernel] [--ratio-rounds N]" >&2; exit 2 ;;
	esac
done
[ -x "$parload" ] || { echo "$0: build first (make): $parload missing" >&2; exit 2; }
export PATH="/sbin:/usr/sbin:$PATH"

work=$(mktemp -d /tmp/parload-bench.XXXXXX)
img=$work/img mnt=$work/mnt
cleanup() {
	mountpoint -q "$mnt" 2>/dev/null && umount "$mnt"
	rm -rf "$work"
}
trap cleanup EXIT
results=$top/bench/results
mkdir -p "$results"
md=$results/parload.md dat=$results/parload.dat

fresh_image() {
	rm -f "$img"
	truncate -s "$image_size" "$img"
	mke2fs -t ext3 -F -q "$img"
}

# measure LABEL: after a load, one table row from parload --report and
# e2fsck -fn. Reads $mbps.
measure() {
	local label=$1 rep fsck pct avg worst excess
	rep=$("$parload" --report "$img") || return 1
	avg=$(awk '{for (i = 1; i < NF; i++) if ($i == "avg_runs") print $(i + 1)}' <<<"$rep")
	worst=$(awk '{for (i = 1; i < NF; i++) if ($i == "worst_runs") print $(i + 1)}' <<<"$rep")
	excess=$(awk '{for (i = 1; i < NF; i++) if ($i == "excess_avg") print $(i + 1)}' <<<"$rep")
	fsck=$(e2fsck -fn "$img" 2>&1)
	if [ $? -ne 0 ]; then
		echo "$0: e2fsck -fn is not clean after $label" >&2
		printf '%s\n' "$fsck" | tail -5 >&2
		pct="FSCK-ERR"
	else
		pct=$(sed -n 's/.*(\([0-9.]*\)% non-contiguous).*/\1/p' <<<"$fsck")
	fi
	printf '| %s | %s | %s | %s | %s | %s | %s%% |\n' "$label" "$threads" \
		"$mbps" "$avg" "$worst" "$excess" "$pct" >>"$md"
	printf '%s %s %s %s %s %s %s\n' "$label" "$threads" "$mbps" "$avg" \
		"$worst" "$excess" "${pct/FSCK-ERR/-1}" >>"$dat"
}

mbps_of() {
	awk '{for (i = 1; i < NF; i++) if ($i == "MB/s") print $(i + 1)}' <<<"$1" | tail -1
}

{
	echo "# parload: $total in 4 KiB-append streams, one file per thread"
	echo
	echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, kernel $(uname -r)," \
	     "e2fsprogs $(dumpe2fs -V 2>&1 | head -1 | awk '{print $2}'), image $image_size (4 KiB blocks," \
	     "32768 blocks per group), appends of $append, no size hint unless marked."
	echo "Load average at start: $(cut -d' ' -f1-3 /proc/loadavg) (MB/s is only as steady as the machine is quiet)."
	echo "Runs: e2fsck's block order (in-line indirect blocks do not break a run);"
	echo "excess: runs beyond 1 + block groups crossed (distinct groups touched - 1), per file."
	echo
	echo "| mode | threads | MB/s | runs/file avg | runs worst | excess/file | e2fsck non-contiguous |"
	echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
} >"$md"
: >"$dat"

for mode in $modes; do
	for threads in $threads_list; do
		fresh_image
		out=$("$parload" --alloc="$mode" --threads "$threads" --total "$total" \
			--append "$append" "$img") || { echo "$0: parload failed ($mode, $threads)" >&2; exit 1; }
		mbps=$(mbps_of "$out")
		measure "$mode"
		echo "$mode $threads: $(tail -1 "$md")" >&2
	done
done

# the hint column: rbtree, the widest thread count
threads=${threads_list##* }
fresh_image
out=$("$parload" --alloc=rbtree --hint --threads "$threads" --total "$total" \
	--append "$append" "$img") || exit 1
mbps=$(mbps_of "$out")
measure "rbtree+hint"

if [ "$kernel" -eq 1 ] && [ "$(id -u)" -eq 0 ] && [ -e /dev/loop-control ]; then
	mkdir -p "$mnt"
	for threads in $threads_list; do
		fresh_image
		mount -t ext3 -o loop "$img" "$mnt" || { echo "$0: cannot loop-mount ext3; kernel column skipped" >&2; break; }
		out=$("$parload" --posix "$mnt" --threads "$threads" --total "$total" --append "$append")
		umount "$mnt"
		mbps=$(mbps_of "$out")
		measure "kernel"
		echo "kernel $threads: $(tail -1 "$md")" >&2
	done
else
	echo "$0: not root (or no loop devices): kernel ext3 column skipped" >&2
	echo >>"$md"
	echo "Kernel column skipped: needs root and loop devices." >>"$md"
fi

# Throughput, widest thread count over one thread, interleaved rounds.
wide=${threads_list##* }
if [ "$ratio_rounds" -gt 0 ] && [ "$wide" != 1 ]; then
	ratios="" cpu1="" cpuw=""
	for rd in $(seq 1 "$ratio_rounds"); do
		order="1 $wide"
		[ $((rd % 2)) -eq 0 ] && order="$wide 1"
		for threads in $order; do
			fresh_image
			/usr/bin/time -f '%U %S' -o "$work/time" "$parload" --alloc=rbtree \
				--threads "$threads" --total "$total" --append "$append" \
				"$img" >"$work/out" || exit 1
			m=$(mbps_of "$(cat "$work/out")")
			c=$(awk '{printf "%.2f", $1 + $2}' "$work/time")
			if [ "$threads" = 1 ]; then m1=$m; cpu1="$cpu1 $c"; else mw=$m; cpuw="$cpuw $c"; fi
		done
		ratios="$ratios $(awk -v a="$mw" -v b="$m1" 'BEGIN{printf "%.3f", a / b}')"
		echo "ratio round $rd: 1 thread $m1 MB/s, $wide threads $mw MB/s" >&2
	done
	mid() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR] = $1} END {printf "%.2f (%.2f–%.2f)", a[int((NR + 1) / 2)], a[1], a[NR]}'; }
	{
		echo
		echo "Throughput, rbtree, $wide threads over 1 thread, $ratio_rounds interleaved rounds (first swapped each round):" \
		     "median of the per-round MB/s ratios $(mid <<<"$ratios");" \
		     "CPU (user + sys) per run: 1 thread $(mid <<<"$cpu1") s, $wide threads $(mid <<<"$cpuw") s."
		echo "Load average after: $(cut -d' ' -f1-3 /proc/loadavg)."
	} >>"$md"
fi

if command -v gnuplot >/dev/null; then
	gnuplot -e "datafile='$dat'; outfile='$results/parload.png'" bench/parload.gp &&
		echo >>"$md" && echo "Plot: parload.png" >>"$md"
else
	echo "$0: gnuplot not found: no plot" >&2
fi
cat "$md"
