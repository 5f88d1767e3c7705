#!/usr/bin/env bash
# bench/copyin_ab.sh BASE_MISC NEW_MISC SRC [--runs N] [--tools "T..."]
#                    [--inodes N] [--size SIZE] [--dir DIR]
# Two builds of the copy tools side by side on one source tree, for a
# before/after figure on a shared machine: BASE_MISC and NEW_MISC are
# directories holding e3mkfs and e3cp (a saved copy of misc/ from the
# commit before, and misc/ now). Each round runs every tool of both builds
# and mke2fs -t ext3 -d once, the first one further along the list every
# round (rotated), the image on DIR (default /dev/shm). Printed: per tool
# and build the median wall and CPU (user + sys of the whole command,
# mkfs included) seconds, and the medians of the per-round ratios (with
# min-max) new/base and over mke2fs -d, wall and CPU. The load average
# goes beside every round.
#
# Tools: e3cp-j1, e3cp-j2 (e3mkfs, then e3cp --quiet -jN), e3mkfs-d.
# Example (the small corpus of bench/mkcorpus.sh, 5 rounds):
#   git stash; make; cp -a misc /tmp/base-misc; git stash pop; make
#   bash bench/copyin_ab.sh /tmp/base-misc misc /tmp/e3bench-corpus/small --runs 5
set -u
[ $# -ge 3 ] || { sed -n 2,18p "$0" >&2; exit 2; }
base=$(cd "$1" && pwd) new=$(cd "$2" && pwd) src=$3
shift 3
runs=5 tools="e3cp-j1 e3cp-j2 e3mkfs-d" inodes="" size="" dir=/dev/shm
while [ $# -gt 0 ]; do
	case $1 in
	--runs) runs=$2; shift ;;
	--tools) tools=$2; shift ;;
	--inodes) inodes=$2; shift ;;
	--size) size=$2; shift ;;
	--dir) dir=$2; shift ;;
	*) echo "usage: see $0's head" >&2; exit 2 ;;
	esac
	shift
done
[ -d "$src" ] || { echo "$0: $src: not a directory" >&2; exit 2; }
export PATH="/sbin:/usr/sbin:$PATH"
work=$(mktemp -d "$dir/e3ab.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
# same geometry for every tool: twice the inodes the tree needs, and its
# blocks (du: small files take whole blocks) plus 60%, plus the inode
# tables
if [ -z "$inodes" ]; then
	n=$(find "$src" | wc -l)
	inodes=$((n * 2 + 1024))
fi
if [ -z "$size" ]; then
	kib=$(du -sk "$src" | cut -f1)
	size=$((kib * 16 / 10 / 1024 + inodes / 4096 + 64))M
fi
nfiles=$(find "$src" -type f | wc -l)

# cmd BUILD TOOL: the shell command for one run
cmd() {
	local m=$1 t=$2 img=$work/img
	case $t in
	e3cp-j*) echo "$m/e3mkfs -q -F -b 4096 -N $inodes $img $size && $m/e3cp --quiet -j${t#e3cp-j} $src $img" ;;
	e3mkfs-d) echo "$m/e3mkfs -q -F -b 4096 -N $inodes -d $src $img $size" ;;
	mke2fs-d) echo "mke2fs -q -F -t ext3 -b 4096 -N $inodes -d $src $img $size" ;;
	esac
}

list="mke2fs-d"
for t in $tools; do list="$list base:$t new:$t"; done
read -r -a order <<<"$list"
declare -A wall cpu
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, $runs rounds, $src ($nfiles files), image on $dir, -N $inodes, $size"
for ((r = 0; r < runs; r++)); do
	k=${#order[@]}
	for ((i = 0; i < k; i++)); do
		e=${order[$(((i + r) % k))]}
		case $e in
		base:*) c=$(cmd "$base" "${e#base:}") ;;
		new:*) c=$(cmd "$new" "${e#new:}") ;;
		*) c=$(cmd "" "$e") ;;
		esac
		rm -f "$work/img"
		/usr/bin/time -o "$work/time" -f '%e %U %S' bash -c "$c" >/dev/null 2>"$work/err"
		out=$(tail -1 "$work/time")
		if ! grep -q '^[0-9.]* [0-9.]* [0-9.]*$' <<<"$out" || [ -s "$work/err" ]; then
			echo "$0: $e failed: $(head -3 "$work/err")" >&2
			exit 1
		fi
		read -r w u s <<<"$out"
		wall[$e,$r]=$w
		cpu[$e,$r]=$(awk -v u="$u" -v s="$s" 'BEGIN{printf "%.2f", u + s}')
	done
	echo "# round $((r + 1)): load average $(cut -d' ' -f1-3 /proc/loadavg)"
done

# med "v1 v2 ...": median; mm: "median (min–max)"
med() { tr ' ' '\n' <<<"$1" | grep . | sort -g | awk '{a[NR]=$1} END{printf "%.2f", NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
mm() { printf '%s (%s–%s)' "$(med "$1")" "$(tr ' ' '\n' <<<"$1" | grep . | sort -g | head -1)" "$(tr ' ' '\n' <<<"$1" | grep . | sort -g | tail -1)"; }
ratios() {	# ratios ARRAY A B: per-round A/B
	local -n arr=$1
	local r out=""
	for ((r = 0; r < runs; r++)); do
		out="$out $(awk -v a="${arr[$2,$r]}" -v b="${arr[$3,$r]}" 'BEGIN{printf "%.3f", (b > 0 ? a / b : 0)}')"
	done
	echo "$out"
}
echo
echo "| tool | build | wall s | CPU s | µs CPU/file | wall x mke2fs -d | CPU x mke2fs -d | wall new/base | CPU new/base |"
echo "|---|---|---|---|---|---|---|---|---|"
for e in "${order[@]}"; do
	ws="" cs=""
	for ((r = 0; r < runs; r++)); do ws="$ws ${wall[$e,$r]}"; cs="$cs ${cpu[$e,$r]}"; done
	wm=$(med "$ws") cm=$(med "$cs")
	per=$(awk -v c="$cm" -v n="$nfiles" 'BEGIN{printf "%.1f", (n ? c * 1e6 / n : 0)}')
	xw=$(mm "$(ratios wall "$e" mke2fs-d)") xc=$(mm "$(ratios cpu "$e" mke2fs-d)")
	nb_w=- nb_c=-
	if [ "${e%%:*}" = new ]; then
		nb_w=$(mm "$(ratios wall "$e" "base:${e#new:}")")
		nb_c=$(mm "$(ratios cpu "$e" "base:${e#new:}")")
	fi
	b=${e%%:*} t=${e#*:}
	[ "$e" = mke2fs-d ] && b=- t=mke2fs-d
	echo "| $t | $b | $wm | $cm | $per | $xw | $xc | $nb_w | $nb_c |"
done
echo
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
