#!/usr/bin/env bash
# bench/shmwrite.sh [--runs N] [--mib M] [--busy] [--dir DIR]
# Can two threads fill one tmpfs file faster than one? bench/shmwrite in
# each of its ways (pwrite, mmap + MADV_POPULATE_WRITE + memcpy, pread
# straight into the mapping; each without and with one fallocate first)
# from 1 and 2 threads, M MiB (default 1024) into one new file in DIR
# (default /dev/shm), every piece read first from a source file of M MiB
# kept in the page cache (a file of random bytes under /tmp, made once).
#
# Rounds are interleaved: each runs every way once, starting one further
# along the list than the round before. Prints, per way, the median (and
# min–max) of set-up + fill wall and CPU (user + sys) seconds, and the
# median of the per-round ratio of its wall to "write -j1"'s, the one-
# writer bound; the load average goes beside every round.
# --busy: a spinning process (one core's worth) runs through each way's
# run, started before it and killed after, the same for every way.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
runs=5 mib=1024 busy="" dir=/dev/shm
while [ $# -gt 0 ]; do
	case $1 in
	--runs) runs=$2; shift ;;
	--mib) mib=$2; shift ;;
	--busy) busy=1 ;;
	--dir) dir=$2; shift ;;
	*) echo "usage: $0 [--runs N] [--mib M] [--busy] [--dir DIR]" >&2; exit 2 ;;
	esac
	shift
done
sw=$top/bench/shmwrite
[ -x "$sw" ] || { echo "$0: build bench/shmwrite first (make)" >&2; exit 2; }
src=/tmp/shmwrite-src.$mib
out=$dir/shmwrite.$$
spin=""
trap 'rm -f "$out"; [ -n "$spin" ] && kill "$spin" 2>/dev/null' EXIT
trap 'exit 130' INT TERM
if [ ! -s "$src" ]; then
	dd if=/dev/urandom of="$src.$$" bs=1M count="$mib" status=none &&
		mv "$src.$$" "$src" || exit 1
fi
cat "$src" >/dev/null	# into the page cache

ways=("write -j1" "write -j2" "map -j1" "map -j2" "read -j1" "read -j2"
      "write -j1 -f" "write -j2 -f" "map -j1 -f" "map -j2 -f"
      "read -j1 -f" "read -j2 -f")
n=${#ways[@]}
declare -A walls cpus ratios
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, $runs rounds, $mib MiB into $dir, source $src${busy:+, one core kept busy}"
for ((r = 0; r < runs; r++)); do
	echo "# round $((r + 1)): load average $(cut -d' ' -f1-3 /proc/loadavg)"
	declare -A w=()
	for ((k = 0; k < n; k++)); do
		i=$(( (k + r) % n ))
		set -- ${ways[$i]}
		m=$1; shift
		if [ -n "$busy" ]; then
			( while :; do :; done ) &
			spin=$!
		fi
		line=$("$sw" -m "$m" -s "$src" "$@" "$mib" "$out") ||
			{ echo "$0: shmwrite ${ways[$i]} failed" >&2; exit 1; }
		if [ -n "$spin" ]; then
			kill "$spin"; wait "$spin" 2>/dev/null; spin=""
		fi
		# "... set-up W s wall C s CPU, fill W s wall C s CPU"
		read -r wall cpu < <(sed -E 's/.*set-up ([0-9.]+) s wall ([0-9.]+) s CPU, fill ([0-9.]+) s wall ([0-9.]+) s CPU/\1 \2 \3 \4/' <<<"$line" |
			awk '{printf "%.3f %.3f\n", $1 + $3, $2 + $4}')
		w[$i]=$wall
		walls[$i]="${walls[$i]:-} $wall"
		cpus[$i]="${cpus[$i]:-} $cpu"
	done
	for ((i = 0; i < n; i++)); do
		ratios[$i]="${ratios[$i]:-} $(awk -v a="${w[$i]}" -v b="${w[0]}" 'BEGIN{printf "%.3f", a / b}')"
	done
	unset w
done
# "median (min–max)" of the numbers in $1
med() { tr ' ' '\n' <<<"$1" | grep . | sort -n |
	awk '{a[NR] = $1} END {printf "%.2f (%.2f–%.2f)", a[int((NR + 1) / 2)], a[1], a[NR]}'; }
echo
echo "| way | wall s | CPU s | wall / write -j1 |"
echo "| --- | --- | --- | --- |"
for ((i = 0; i < n; i++)); do
	echo "| ${ways[$i]} | $(med "${walls[$i]}") | $(med "${cpus[$i]}") | $(med "${ratios[$i]}") |"
done
echo "# end: load average $(cut -d' ' -f1-3 /proc/loadavg)"
