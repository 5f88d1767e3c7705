#!/usr/bin/env bash
# bench/copyin_usersys.sh BASE_MISC NEW_MISC SRC [--runs N] [--jobs J]
# e3cp -jJ of SRC into a fresh image on /dev/shm, two builds (directories
# holding e3mkfs and e3cp) alternating within every round (the first
# swapped each round); only e3cp is timed, not the mkfs before it.
# Prints per build the median user, system and wall seconds, and the
# medians of the per-round ratios new/base (min-max) of each, with the
# load average per round: a cut in user space shows in the user column
# even when the machine's load hides it in the sum.
# Example: bash bench/copyin_usersys.sh /tmp/base-misc misc /tmp/e3bench-corpus/small --runs 11
set -u
[ $# -ge 3 ] || { sed -n 2,10p "$0" >&2; exit 2; }
base=$(cd "$1" && pwd) new=$(cd "$2" && pwd) src=$3
shift 3
runs=9 jobs=2
while [ $# -gt 0 ]; do
	case $1 in
	--runs) runs=$2; shift ;;
	--jobs) jobs=$2; shift ;;
	*) echo "usage: see $0's head" >&2; exit 2 ;;
	esac
	shift
done
work=$(mktemp -d /dev/shm/e3us.XXXXXX) || exit 2
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
inodes=$(($(find "$src" | wc -l) * 2 + 1024))
size=$(($(du -sk "$src" | cut -f1) * 16 / 10 / 1024 + inodes / 4096 + 64))M
declare -A u s w
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, $runs rounds, e3cp -j$jobs, $src, image on /dev/shm, -N $inodes, $size"
for ((r = 0; r < runs; r++)); do
	if ((r % 2)); then order="new base"; else order="base new"; fi
	for b in $order; do
		m=$base
		[ $b = new ] && m=$new
		rm -f "$work/img"
		"$m/e3mkfs" -q -F -b 4096 -N "$inodes" "$work/img" "$size" || exit 1
		/usr/bin/time -o "$work/t" -f '%U %S %e' "$m/e3cp" --quiet -j"$jobs" "$src" "$work/img" ||
			{ echo "$0: $b e3cp failed" >&2; exit 1; }
		read -r u[$b,$r] s[$b,$r] w[$b,$r] <<<"$(tail -1 "$work/t")"
	done
	echo "# round $((r + 1)): load average $(cut -d' ' -f1-3 /proc/loadavg)"
done
med() { tr ' ' '\n' <<<"$1" | grep . | sort -g | awk '{a[NR]=$1} END{printf "%.3f", NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
mm() { printf '%s (%s–%s)' "$(med "$1")" "$(tr ' ' '\n' <<<"$1" | grep . | sort -g | head -1)" "$(tr ' ' '\n' <<<"$1" | grep . | sort -g | tail -1)"; }
echo
echo "| build | user s | sys s | wall s | user new/base | sys new/base | wall new/base |"
echo "|---|---|---|---|---|---|---|"
for b in base new; do
	lu="" ls="" lw="" ru="" rs="" rw=""
	for ((r = 0; r < runs; r++)); do
		lu="$lu ${u[$b,$r]}" ls="$ls ${s[$b,$r]}" lw="$lw ${w[$b,$r]}"
		ru="$ru $(awk -v a="${u[new,$r]}" -v b="${u[base,$r]}" 'BEGIN{printf "%.3f", (b > 0 ? a / b : 0)}')"
		rs="$rs $(awk -v a="${s[new,$r]}" -v b="${s[base,$r]}" 'BEGIN{printf "%.3f", (b > 0 ? a / b : 0)}')"
		rw="$rw $(awk -v a="${w[new,$r]}" -v b="${w[base,$r]}" 'BEGIN{printf "%.3f", (b > 0 ? a / b : 0)}')"
	done
	if [ $b = new ]; then
		echo "| new | $(med "$lu") | $(med "$ls") | $(med "$lw") | $(mm "$ru") | $(mm "$rs") | $(mm "$rw") |"
	else
		echo "| base | $(med "$lu") | $(med "$ls") | $(med "$lw") | - | - | - |"
	fi
done
echo
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
