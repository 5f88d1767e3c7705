#!/usr/bin/env bash
# bench/copyin_spin.sh BASE_MISC NEW_MISC SRC... [--runs N] [--dir DIR]
# How much of e3cp -j2's CPU goes to waiting for the image file's inode
# lock in the kernel: each round runs e3cp -j2 of both builds (BASE_MISC
# and NEW_MISC hold e3mkfs and e3cp; the first alternates) under
# perf record -e cpu-clock -F 4000 -g (cpu-clock: VMs have no PMU) and
# prints the samples (4,000 a second of CPU) and the share of them under
# rwsem_down_write_slowpath (the optimistic spinning on i_rwsem and the
# sleep after it), with the load average. Image geometry as
# bench/copyin_ab.sh makes it; the image on DIR (default /dev/shm).
# Example (the corpora of bench/mkcorpus.sh, base built in /tmp/base):
#   bash bench/copyin_spin.sh /tmp/base/misc misc /tmp/e3bench-corpus/big \
#       /tmp/e3bench-corpus/real /tmp/e3bench-corpus/small --runs 3
set -u
[ $# -ge 3 ] || { sed -n 2,14p "$0" >&2; exit 2; }
base=$(cd "$1" && pwd) new=$(cd "$2" && pwd)
shift 2
runs=3 dir=/dev/shm srcs=()
while [ $# -gt 0 ]; do
	case $1 in
	--runs) runs=$2; shift ;;
	--dir) dir=$2; shift ;;
	-*) echo "usage: see $0's head" >&2; exit 2 ;;
	*) srcs+=("$1") ;;
	esac
	shift
done
command -v perf >/dev/null || { echo "$0: needs perf (Debian: linux-perf)" >&2; exit 2; }
work=$(mktemp -d "$dir/e3spin.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, $runs rounds, image on $dir"
echo "| source | round | build | load (1 min) | samples | rwsem_down_write_slowpath |"
echo "|---|---|---|---|---|---|"
for src in "${srcs[@]}"; do
	[ -d "$src" ] || { echo "$0: $src: not a directory" >&2; exit 2; }
	n=$(find "$src" | wc -l)
	inodes=$((n * 2 + 1024))
	kib=$(du -sk "$src" | cut -f1)
	size=$((kib * 16 / 10 / 1024 + inodes / 4096 + 64))M
	for ((r = 0; r < runs; r++)); do
		if ((r % 2)); then order="new base"; else order="base new"; fi
		for b in $order; do
			[ "$b" = base ] && m=$base || m=$new
			rm -f "$work/img"
			"$m/e3mkfs" -q -F -b 4096 -N "$inodes" "$work/img" "$size" || exit 1
			load=$(cut -d' ' -f1 /proc/loadavg)
			perf record -q -F 4000 -e cpu-clock -g -o "$work/perf.data" \
				"$m/e3cp" --quiet -j2 "$src" "$work/img" 2>"$work/err" ||
				{ cat "$work/err" >&2; exit 1; }
			samples=$(perf report -i "$work/perf.data" -n --no-children \
				--stdio --sort comm -g none 2>/dev/null |
				awk '/^ +[0-9]/ {s += $2} END {print s + 0}')
			spin=$(perf report -i "$work/perf.data" --children --stdio \
				--sort sym -g none 2>/dev/null |
				awk '/rwsem_down_write_slowpath/ {print $1; f = 1}
				     END {if (!f) print "0%"}')
			echo "| $(basename "$src") | $((r + 1)) | $b | $load | $samples | $spin |"
		done
	done
done
