#!/usr/bin/env bash
# bench/mixload_ab.sh: bench/mixload of two builds, A and B, interleaved —
# for the commit taken out of fs_lock (issue 21, "no collapse"), or any
# change to the library's locked path.
#
# Each round runs A and B at every thread count, the first of the two
# swapped each round, on a fresh image each time, e2fsck -fn after every
# run. Per build and thread count: median ops/s, CPU µs/op (user + sys),
# futex calls per op (perf stat of syscalls:sys_enter_futex, when perf
# can), commits; per thread count the median of the per-round ratios
# B / A of ops/s with min–max; per build the median of the per-round
# ratios of ops/s at the largest thread count over the smallest. The load
# average is recorded beside every run.
#
# With --fsync-time, one extra run per build and thread count under
# strace (seccomp filter: only fsync is stopped) adds the wall time spent
# inside fsync, summed over threads: the time the commits spend in their
# flushes (held under fs_lock in A = d348939, not in B).
#
# usage: bench/mixload_ab.sh A_TREE B_TREE [--rounds N] [--ops K]
#            [--threads "4 16 64"] [--dir DIR] [--image-size SIZE]
#            [--fsync-time] [--out FILE] [--total-ops T]
# --total-ops T: every run does T operations in all, T / threads per
# client (dbench runs its clients for a fixed time, so the same job),
# instead of --ops per client: with K per client the run at 4 threads is
# 16 times shorter than the one at 64 and fits in one transaction, so
# "64 over 4" would compare a job with commits against one without.
# A_TREE, B_TREE: built trees (their bench/mixload is used).
# Rerun on a quiet machine (about 3 minutes on disk):
#   bench/mixload_ab.sh /tmp/jasync-base . --rounds 5
#   bench/mixload_ab.sh /tmp/jasync-base . --rounds 5 --dir /dev/shm
set -u
[ $# -ge 2 ] || { sed -n '/^# usage/,/^set -u/p' "$0" | sed '$d' >&2; exit 2; }
A=$(cd "$1" && pwd)/bench/mixload B=$(cd "$2" && pwd)/bench/mixload
shift 2
rounds=3 ops=2000 threads_list="4 16 64" dir=/tmp image_size=2G fsync_time=0 out= total=0
while [ $# -gt 0 ]; do
	case "$1" in
	--rounds) rounds=$2; shift 2 ;;
	--ops) ops=$2; shift 2 ;;
	--total-ops) total=$2; shift 2 ;;
	--threads) threads_list=$2; shift 2 ;;
	--dir) dir=$2; shift 2 ;;
	--image-size) image_size=$2; shift 2 ;;
	--fsync-time) fsync_time=1; shift ;;
	--out) out=$2; shift 2 ;;
	*) echo "$0: unknown argument $1" >&2; exit 2 ;;
	esac
done
for x in "$A" "$B"; do
	[ -x "$x" ] || { echo "$0: $x missing (build that tree)" >&2; exit 2; }
done
export PATH="/sbin:/usr/sbin:$PATH"
work=$(mktemp -d "$dir/mixload-ab.XXXXXX")
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
img=$work/img raw=$work/raw
: >"$raw"
futex=0
if command -v perf >/dev/null &&
   perf stat -x, -e syscalls:sys_enter_futex -o /dev/null true 2>/dev/null; then
	futex=1
fi

# operations per client at t threads
per() { if [ "$total" -gt 0 ]; then echo $((total / $1)); else echo "$ops"; fi; }

field() { awk -v k="$1" '{for (i = 1; i < NF; i++) if ($i == k) print $(i + 1)}' <<<"$2"; }

# one WHO BIN THREADS ROUND: a run, a line into $raw:
# "who threads round ops/s cpu_us/op futex/op commits load fsck"
one() {
	local who=$1 bin=$2 t=$3 rd=$4 line fx=- load fsck=ok n
	rm -f "$img"
	truncate -s "$image_size" "$img"
	mke2fs -t ext3 -F -q "$img" || return 1
	load=$(cut -d' ' -f1 /proc/loadavg)
	if [ "$futex" -eq 1 ]; then
		line=$(perf stat -x, -e syscalls:sys_enter_futex -o "$work/futex" -- \
			"$bin" --threads "$t" --ops "$(per "$t")" "$img") || fsck=FAILED
		n=$(field ops "$line")
		fx=$(awk -F, -v n="$n" '/sys_enter_futex/ {if ($1 ~ /^[0-9]+$/ && n > 0) printf "%.4f", $1 / n}' "$work/futex")
	else
		line=$("$bin" --threads "$t" --ops "$(per "$t")" "$img") || fsck=FAILED
	fi
	e2fsck -fn "$img" >/dev/null 2>&1 || fsck=NOT-CLEAN
	echo "$who $t $rd $(field ops/s "$line") $(field cpu_us/op "$line") ${fx:--} $(field commits "$line") $load $fsck" >>"$raw"
	echo "round $rd $who $t: $line futex/op ${fx:--} load $load $fsck" >&2
}

load0=$(cut -d' ' -f1-3 /proc/loadavg)
for rd in $(seq 1 "$rounds"); do
	for t in $threads_list; do
		if [ $((rd % 2)) -eq 1 ]; then
			one A "$A" "$t" "$rd"; one B "$B" "$t" "$rd"
		else
			one B "$B" "$t" "$rd"; one A "$A" "$t" "$rd"
		fi
	done
done

# fsync wall time (strace -w -c), one run each
declare -A fs
if [ "$fsync_time" -eq 1 ] && command -v strace >/dev/null; then
	for t in $threads_list; do
		for who in A B; do
			bin=$A; [ "$who" = B ] && bin=$B
			rm -f "$img"; truncate -s "$image_size" "$img"; mke2fs -t ext3 -F -q "$img"
			l=$(cut -d' ' -f1 /proc/loadavg)
			line=$(strace -f -w -c --seccomp-bpf -e trace=fsync -o "$work/st" \
				"$bin" --threads "$t" --ops "$(per "$t")" "$img")
			s=$(awk '$NF == "fsync" {print $2}' "$work/st")
			fs[$who$t]="${s:-0} s in fsync of $(field seconds "$line") s (load $l)"
		done
	done
fi

med() { sort -g | awk -v r="${1:-}" '{a[NR] = $1} END {if (!NR) print "-"; else if (r) printf "%.2f (%.2f–%.2f)", a[int((NR + 1) / 2)], a[1], a[NR]; else print a[int((NR + 1) / 2)]}'; }
col() { awk -v w="$1" -v t="$2" -v c="$3" '$1 == w && $2 == t {print $c}' "$raw"; }
ratio() {	# t: per round B/A of ops/s
	awk -v t="$1" '$2 == t {v[$1 " " $3] = $4; r[$3] = 1} END {for (k in r) if (v["A " k] > 0) print v["B " k] / v["A " k]}' "$raw" | med r
}
lo=${threads_list%% *} hi=${threads_list##* }
scale() {	# who: per round ops/s at hi over lo
	awk -v w="$1" -v lo="$lo" -v hi="$hi" '$1 == w {v[$2 " " $3] = $4; r[$3] = 1} END {for (k in r) if (v[lo " " k] > 0) print v[hi " " k] / v[lo " " k]}' "$raw" | med r
}
{
	if [ "$total" -gt 0 ]; then
		echo "# mixload A/B: $total operations per run (total / threads per client)"
	else
		echo "# mixload A/B: $ops operations per client"
	fi
	echo
	echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, image $image_size ext3 in $dir ($(stat -f -c %T "$dir")), $rounds interleaved rounds (first swapped each round)."
	echo "A: $A"
	echo "B: $B"
	echo "Load average at start: $load0, at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
	echo
	echo "| threads | A ops/s | B ops/s | B / A ops/s | A CPU µs/op | B CPU µs/op | A futex/op | B futex/op | A commits | B commits | load (min–max) | e2fsck |"
	echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
	for t in $threads_list; do
		bad=$(awk -v t="$t" '$2 == t && $9 != "ok" {n++} END {print n + 0}' "$raw")
		lmin=$(col A "$t" 8; col B "$t" 8)
		printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$t" \
			"$(col A "$t" 4 | med)" "$(col B "$t" 4 | med)" "$(ratio "$t")" \
			"$(col A "$t" 5 | med)" "$(col B "$t" 5 | med)" \
			"$(col A "$t" 6 | med)" "$(col B "$t" 6 | med)" \
			"$(col A "$t" 7 | med)" "$(col B "$t" 7 | med)" \
			"$(sort -g <<<"$lmin" | awk 'NR == 1 {lo = $1} {hi = $1} END {printf "%s–%s", lo, hi}')" \
			"$([ "$bad" -eq 0 ] && echo clean || echo "$bad NOT CLEAN")"
	done
	echo
	echo "ops/s at $hi threads over the same round's at $lo (median, min–max): A $(scale A), B $(scale B)"
	if [ "$fsync_time" -eq 1 ]; then
		echo
		echo "Time inside fsync (strace -f -w -c, one run each, summed over threads):"
		for t in $threads_list; do
			echo "- $t threads: A ${fs[A$t]:--}; B ${fs[B$t]:--}"
		done
	fi
	echo
	echo "Per run (who threads round ops/s cpu_us/op futex/op commits load e2fsck):"
	echo
	sed 's/^/    /' "$raw"
} >"${out:-/dev/stdout}"
[ -n "$out" ] && cat "$out"
exit 0
