#!/usr/bin/env bash
# bench/mixload.sh: the dbench-style many-client table, offline.
#
# For threads 1 4 8 16 32 64: bench/mixload's seeded mix (create with and
# without a size hint, append, rewrite in place, close, unlink, mkdir,
# hard link; --ops per client) through the library into a fresh ext3
# image, and — as root, with loop devices — the same mix through a loop
# mount of a fresh ext3 image (the kernel's ext3), e2fsck -fn after every
# run. Rounds are interleaved: each round runs both at every thread count,
# the two in turn, the first swapped each round, so a busy spell of the
# machine hits both alike. Per cell: median ops/s and MB/s over the
# rounds, voluntary and involuntary context switches per operation, and
# the library's ops/s over the kernel's, the median of the per-round
# ratios with min–max. Writes bench/results/mixload.txt (or --out FILE)
# and prints it.
#
# The machine is usually shared, so besides ops/s each run reports what
# others' load disturbs less: CPU time (user + sys) per operation, and
# (with perf, as root) futex calls per operation, the library's lock
# waits and wake-ups; and the scaling is the median over rounds of each
# round's ops/s at N threads over the same round's at 4, with min–max.
#
# usage: bench/mixload.sh [--rounds N] [--ops K] [--threads "1 4 ..."]
#                         [--image-size SIZE] [--no-kernel] [--dir DIR]
#                         [--out FILE]
# --dir: where the images go (default /tmp; /dev/shm takes the disk
# out, leaving the library's CPU and locks).
set -u
cd "$(dirname "$0")/.." || exit 2
top=$PWD
mixload=$top/bench/mixload
rounds=3 ops=2000 image_size=2G kernel=1 dir=/tmp out=
threads_list="1 4 8 16 32 64"
while [ $# -gt 0 ]; do
	case "$1" in
	--rounds) rounds=$2; shift 2 ;;
	--ops) ops=$2; shift 2 ;;
	--threads) threads_list=$2; shift 2 ;;
	--image-size) image_size=$2; shift 2 ;;
	--no-kernel) kernel=0; shift ;;
	--dir) dir=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	*) echo "usage: $0 [--rounds N] [--ops K] [--threads LIST] [--image-size SIZE] [--no-kernel] [--dir DIR] [--out FILE]" >&2; exit 2 ;;
	esac
done
[ -x "$mixload" ] || { echo "$0: build first (make): $mixload missing" >&2; exit 2; }
export PATH="/sbin:/usr/sbin:$PATH"
if [ "$kernel" -eq 1 ] && { [ "$(id -u)" -ne 0 ] || [ ! -e /dev/loop-control ]; }; then
	echo "$0: not root (or no loop devices): kernel column skipped" >&2
	kernel=0
fi

work=$(mktemp -d "$dir/mixload-bench.XXXXXX")
img=$work/img mnt=$work/mnt
mkdir -p "$mnt"
cleanup() {
	mountpoint -q "$mnt" 2>/dev/null && umount "$mnt"
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
[ -n "$out" ] || out=$top/bench/results/mixload.txt
raw=$work/raw
# futex calls per operation: perf's syscall tracepoint, when it can
futex=0
if command -v perf >/dev/null &&
   perf stat -x, -e syscalls:sys_enter_futex -o /dev/null true 2>/dev/null; then
	futex=1
fi
: >"$raw"

fresh_image() {
	rm -f "$img"
	truncate -s "$image_size" "$img"
	mke2fs -t ext3 -F -q "$img"
}

# field NAME LINE: the value after NAME in mixload's output line
field() { awk -v k="$1" '{for (i = 1; i < NF; i++) if ($i == k) print $(i + 1)}' <<<"$2"; }

fsck_clean() {
	local f
	f=$(e2fsck -fn "$img" 2>&1) && return 0
	echo "$0: e2fsck -fn is not clean after $1" >&2
	printf '%s\n' "$f" | tail -5 >&2
	return 1
}

# counted CMD...: runs CMD (its stdout to ours), futex calls into $work/futex
counted() {
	if [ "$futex" -eq 1 ]; then
		perf stat -x, -e syscalls:sys_enter_futex -o "$work/futex" -- "$@"
	else
		echo "-,syscalls:sys_enter_futex" >"$work/futex"
		"$@"
	fi
}

# run WHO THREADS ROUND: one run, one line into $raw:
# "who threads round ops/s MB/s vcsw/op ivcsw/op fsck cpu_us/op futex/op load1 commits"
run() {
	local who=$1 t=$2 rd=$3 line fsck=ok n fx load
	fresh_image
	load=$(cut -d' ' -f1 /proc/loadavg)
	if [ "$who" = lib ]; then
		line=$(counted "$mixload" --threads "$t" --ops "$ops" "$img") || fsck=FAILED
	else
		mount -t ext3 -o loop "$img" "$mnt" || { echo "$0: cannot loop-mount ext3" >&2; return 1; }
		line=$(counted "$mixload" --posix "$mnt" --threads "$t" --ops "$ops") || fsck=FAILED
		umount "$mnt"
	fi
	fsck_clean "$who at $t threads" || fsck=NOT-CLEAN
	n=$(field ops "$line")
	fx=$(awk -F, -v n="$n" '/sys_enter_futex/ {if ($1 ~ /^[0-9]+$/ && n > 0) printf "%.4f", $1 / n; else printf "-"}' "$work/futex")
	echo "$who $t $rd $(field ops/s "$line") $(field MB/s "$line") $(field vcsw/op "$line") $(field ivcsw/op "$line") $fsck $(field cpu_us/op "$line") ${fx:--} $load $(field commits "$line")" >>"$raw"
	echo "round $rd $who $t: $line futex/op ${fx:--} load $load ($fsck)" >&2
}

load0=$(cut -d' ' -f1-3 /proc/loadavg)
for rd in $(seq 1 "$rounds"); do
	for t in $threads_list; do
		if [ "$kernel" -eq 1 ] && [ $((rd % 2)) -eq 0 ]; then
			run kernel "$t" "$rd"; run lib "$t" "$rd"
		else
			run lib "$t" "$rd"
			[ "$kernel" -eq 1 ] && run kernel "$t" "$rd"
		fi
	done
done

# median of the numbers on stdin; "median min max" with -r
med() { sort -n | awk -v r="${1:-}" '{a[NR] = $1} END {if (!NR) print "-"; else if (r) printf "%.2f (%.2f–%.2f)", a[int((NR + 1) / 2)], a[1], a[NR]; else print a[int((NR + 1) / 2)]}'; }
col() { awk -v w="$1" -v t="$2" -v c="$3" '$1 == w && $2 == t {print $c}' "$raw"; }

{
	echo "# mixload: $ops operations per client, seeded dbench-like mix"
	echo
	echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, kernel $(uname -r), image $image_size ext3 (mke2fs -t ext3 defaults) in $dir ($(stat -f -c %T "$dir")), $rounds interleaved rounds."
	echo "Command: bench/mixload.sh --rounds $rounds --ops $ops --threads \"$threads_list\" --image-size $image_size --dir $dir$([ "$kernel" -eq 0 ] && echo " --no-kernel")"
	echo "Load average at start: $load0, at the end: $(cut -d' ' -f1-3 /proc/loadavg) (the machine is shared with other builds and tests: read the ratios, not the absolute figures)."
	echo "Mix per operation: 25% create with a size hint and write it (1-64 KiB), 10% create without one (a stream, kept open), 25% append 4-16 KiB, 10% rewrite 4 KiB in place, 5% close a stream, 15% unlink, 3% mkdir, 7% hard link."
	echo "Time: first operation to image closed (library) or syncfs (kernel). Context switches and CPU time (user + sys): getrusage(RUSAGE_SELF), per operation; futex/op: perf stat of syscalls:sys_enter_futex over the run. e2fsck -fn after every run."
	echo
	echo "| threads | e3img ops/s | e3img MB/s | e3img vcsw/op | e3img ivcsw/op | e3img CPU µs/op | e3img futex/op | e3img commits | kernel ops/s | kernel MB/s | kernel vcsw/op | kernel ivcsw/op | kernel CPU µs/op | e3img / kernel ops/s | e2fsck |"
	echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
	for t in $threads_list; do
		ratio=$(awk -v t="$t" '$2 == t {v[$1 " " $3] = $4} END {for (k in v) {split(k, p, " "); if (p[1] == "lib" && v["kernel " p[2]] > 0) print v[k] / v["kernel " p[2]]}}' "$raw" | med r)
		bad=$(awk -v t="$t" '$2 == t && $8 != "ok" {n++} END {print n + 0}' "$raw")
		printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$t" \
			"$(col lib "$t" 4 | med)" "$(col lib "$t" 5 | med)" \
			"$(col lib "$t" 6 | med)" "$(col lib "$t" 7 | med)" \
			"$(col lib "$t" 9 | med)" "$(col lib "$t" 10 | med)" \
			"$(col lib "$t" 12 | med)" \
			"$(col kernel "$t" 4 | med)" "$(col kernel "$t" 5 | med)" \
			"$(col kernel "$t" 6 | med)" "$(col kernel "$t" 7 | med)" \
			"$(col kernel "$t" 9 | med)" \
			"$ratio" "$([ "$bad" -eq 0 ] && echo clean || echo "$bad NOT CLEAN")"
	done
	echo
	# per round: ops/s at t over the same round's at 4 threads
	scale() { awk -v w="$1" -v t="$2" '$1 == w && ($2 == t || $2 == 4) {v[$2 " " $3] = $4; r[$3] = 1} END {for (k in r) if (v["4 " k] > 0 && v[t " " k] != "") print v[t " " k] / v["4 " k]}' "$raw" | med r; }
	echo "Scaling, ops/s at N threads over the same round's at 4 (median of rounds, min–max):"
	echo "e3img $(for t in $threads_list; do printf '%s: %s; ' "$t" "$(scale lib "$t")"; done)"
	[ "$kernel" -eq 1 ] && echo "kernel $(for t in $threads_list; do printf '%s: %s; ' "$t" "$(scale kernel "$t")"; done)"
	echo
	echo "Per-round figures (who threads round ops/s MB/s vcsw/op ivcsw/op result CPU-µs/op futex/op load-average commits):"
	echo
	sed 's/^/    /' "$raw"
} >"$out"
cat "$out"
