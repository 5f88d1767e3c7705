#!/usr/bin/env bash
# bench/copyin.sh [--quick] [--runs N] [--only disk|shm] [--corpus NAME]
#                  [--tools "TOOL..."] [--throttle MB/s]
# Copy-in, side by side in one run: e3cp -j1, e3cp -j2, e3cp -j2 with
# SOURCE_DATE_EPOCH (reproducible: e3mkfs and e3cp), e3mkfs -d,
# mke2fs -t ext3 -d, genext2fs + tune2fs -j, and (root) cp -a onto a loop
# mount, on the three corpora of bench/mkcorpus.sh; the image on disk
# (every tool's image synced) and on /dev/shm. Same image size and 4 KiB
# blocks for every tool. Prints a Markdown table: median wall time of N
# runs (default 3), files/s, MB/s, peak RSS, e2fsck's non-contiguous %,
# runs per file and excess runs (bench/cplayout), and the write bound (the
# corpus' bytes written once to the same place, synced; also a median),
# with each tool's time over it (the median of the per-round ratios), and
# the MiB each wrote to the disk (the device's counter, other writers
# included: a quiet machine is assumed). Two rows show what no ext3 tool
# can beat on this machine: "data bound", the corpus' files rounded up to
# whole 4 KiB blocks (what the image must hold) written once by dd; and
# "copy floor", bench/copyfloor -j2, which walks the tree and copies every
# file's blocks into one file with e3cp's write-behind, and nothing else
# (no metadata, allocator or journal).
#
# --throttle N (root, cgroup v1 blkio) caps writes to the disk under /tmp
# at N MB/s for the whole run, writeback included, and lifts the cap on
# exit: the disk-bound machine the targets were set on, where the bytes
# each tool writes decide its time, rather than its CPU.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
export PATH="$top/misc:/sbin:/usr/sbin:$PATH"
quick="" runs=3 only="" corpora="real small big" pick="" throttle=""
while [ $# -gt 0 ]; do
	case $1 in
	--quick) quick=--quick; runs=1 ;;
	--runs) runs=$2; shift ;;
	--only) only=$2; shift ;;
	--corpus) corpora=$2; shift ;;
	--tools) pick=$2; shift ;;
	--throttle) throttle=$2; shift ;;
	*) echo "usage: $0 [--quick] [--runs N] [--only disk|shm] [--corpus real|small|big] [--tools \"data-bound copy-floor e3cp-j1 e3cp-j2 e3cp-j2-repro e3mkfs-d mke2fs-d genext2fs cp-a\"] [--throttle MB/s]" >&2; exit 2 ;;
	esac
	shift
done
# The whole disk holding directory $1 as MAJ:MIN (blk-throttle takes
# disks, not partitions).
disk_of() {
	local dev
	dev=$(df --output=source "$1" 2>/dev/null | tail -1)
	dev=${dev#/dev/}
	[ -e "/sys/class/block/$dev/partition" ] &&
		dev=$(basename "$(readlink -f "/sys/class/block/$dev/..")")
	cat "/sys/class/block/$dev/dev" 2>/dev/null
}

uncap() { :; }
# an interrupted run leaves no images behind, nor the cap
trap 'uncap; rm -rf /tmp/e3bench-img /dev/shm/e3bench' EXIT
trap 'exit 130' INT TERM
if [ -n "$throttle" ]; then
	knob=/sys/fs/cgroup/blkio/blkio.throttle.write_bps_device
	tdev=$(disk_of /tmp)
	if ! [[ $throttle =~ ^[1-9][0-9]*$ ]] || [ -z "$tdev" ] || [ ! -w "$knob" ]; then
		echo "$0: --throttle $throttle: needs a whole number of MB/s, root and cgroup v1 blkio ($knob)" >&2
		exit 2
	fi
	prev=$(awk -v d="$tdev" '$1 == d {print $2}' "$knob")
	# a SIGKILL leaves the cap: echo "$tdev 0" > $knob lifts it
	uncap() { echo "$tdev ${prev:-0}" > "$knob"; }
	echo "$tdev $((throttle * 1000000))" > "$knob" || exit 2
	only=disk
	echo "writes to $tdev capped at $throttle MB/s" >&2
fi

corpus=/tmp/e3bench-corpus${quick:+-quick}
bash "$top/bench/mkcorpus.sh" "$corpus" $quick >&2 || exit 2

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# tool_cmd TOOL SRC IMG SIZE_MIB INODES: the shell command for one run
tool_cmd() {
	local t=$1 src=$2 img=$3 mib=$4 ino=$5
	case $t in
	data-bound)
		echo "dd if=/dev/zero of=$img bs=1M count=$data_mib conv=fsync status=none" ;;
	copy-floor)
		echo "$top/bench/copyfloor -j2 $src $img" ;;
	e3cp-j1|e3cp-j2)
		echo "e3mkfs -q -F -b 4096 -N $ino $img ${mib}M && e3cp --quiet -j${t#e3cp-j} $src $img" ;;
	e3cp-j2-repro)	# a build pipeline's run: same bytes every time
		echo "export SOURCE_DATE_EPOCH=1700000000 && e3mkfs -q -F -b 4096 -N $ino $img ${mib}M && e3cp --quiet -j2 $src $img" ;;
	e3mkfs-d)
		echo "e3mkfs -q -F -b 4096 -N $ino -d $src $img ${mib}M" ;;
	mke2fs-d)
		echo "mke2fs -q -F -t ext3 -b 4096 -N $ino -d $src $img ${mib}M" ;;
	genext2fs)
		echo "genext2fs -B 4096 -b $((mib * 256)) -N $ino -d $src $img && tune2fs -j $img >/dev/null" ;;
	cp-a)
		echo "mke2fs -q -F -t ext3 -b 4096 -N $ino $img ${mib}M && mount -o loop $img $img.mnt && cp -a $src/. $img.mnt/ && umount $img.mnt" ;;
	esac
}

# Sectors written so far to the block device under directory $1 (its
# stat file's 7th field), or nothing on tmpfs.
dev_written() {
	local dev
	dev=$(df --output=source "$1" 2>/dev/null | tail -1)
	dev=${dev#/dev/}
	[ -r "/sys/class/block/$dev/stat" ] && awk '{print $7}' "/sys/class/block/$dev/stat"
}

run_one() {	# TOOL SRC IMG MIB INODES -> "wall rss_kib disk_mib"
	local cmd w0 w1
	cmd=$(tool_cmd "$@")
	rm -f "$3"; mkdir -p "$3.mnt"
	sync
	w0=$(dev_written "$(dirname "$3")")
	/usr/bin/time -f '%e %M' -o "$3.time" bash -c "$cmd && sync -f $3" >/dev/null 2>&1 ||
		echo "failed: $cmd" >&2
	sync
	w1=$(dev_written "$(dirname "$3")")
	echo "$(tail -1 "$3.time") $([ -n "$w0" ] && echo $(( (w1 - w0) * 512 / 1048576 )) || echo -)"
	rm -f "$3.time"
}

tools="data-bound copy-floor e3cp-j1 e3cp-j2 e3cp-j2-repro e3mkfs-d mke2fs-d genext2fs"
[ "$(id -u)" -eq 0 ] && tools="$tools cp-a"
[ -n "$pick" ] && tools=$pick
places="disk shm"
[ -n "$only" ] && places=$only

echo "| where | corpus | tool | wall s | files/s | MB/s | peak RSS MiB | non-contig % | runs/file | excess runs | x write bound | MiB to disk |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
for where in $places; do
	if [ "$where" = shm ]; then base=/dev/shm/e3bench; else base=/tmp/e3bench-img; fi
	mkdir -p "$base"
	for c in $corpora; do
		src=$corpus/$c
		files=$(find "$src" | wc -l)
		bytes=$(du -sb "$src" | cut -f1)
		data_mib=$(find "$src" -type f -printf '%s\n' |
			awk '{b += int(($1 + 4095) / 4096)} END {printf "%d", (b * 4096 + 1048575) / 1048576}')
		mib=$(( bytes * 3 / 2 / 1048576 + 64 ))
		ino=$(( files * 2 + 1024 ))
		# Runs are interleaved: each round writes the write bound (the
		# bytes once, to the same place, synced) and then runs every
		# tool once, so a slow spell of the disk hits all of them alike
		# and each tool's ratio to the write bound is paired by round.
		declare -A walls=() rss=() ratios=() rows=() disk=()
		wbs="" wbds=""
		for r in $(seq 1 "$runs"); do
			sync
			w0=$(dev_written "$base")
			/usr/bin/time -f '%e' -o "$base/wb.time" dd if=/dev/zero of="$base/wb" \
				bs=1M count=$((bytes / 1048576 + 1)) conv=fsync status=none
			sync
			w1=$(dev_written "$base")
			wb=$(tail -1 "$base/wb.time")
			wbs="$wbs $wb"
			[ -n "$w0" ] && wbds="$wbds $(( (w1 - w0) * 512 / 1048576 ))"
			rm -f "$base/wb" "$base/wb.time"
			for t in $tools; do
				img=$base/$c-$t.img
				read -r w m d < <(run_one "$t" "$src" "$img" "$mib" "$ino")
				walls[$t]="${walls[$t]:-} $w"
				rss[$t]="${rss[$t]:-} $m"
				disk[$t]="${disk[$t]:-} $d"
				ratios[$t]="${ratios[$t]:-} $(awk -v w="$w" -v b="$wb" 'BEGIN{printf "%.3f", (b > 0 ? w / b : 0)}')"
				case $t in data-bound|copy-floor) rows[$t]="- - -" ;; esac
				if [ "$r" -eq "$runs" ] && [ -z "${rows[$t]:-}" ]; then	# layout of the last run
					nc=$(e2fsck -fn "$img" 2>/dev/null | sed -n 's/.*(\([0-9.]*\)% non-contiguous).*/\1/p')
					lay=$("$top/bench/cplayout" "$img" 2>/dev/null)
					rows[$t]="${nc:--} $(awk '{print $4, $6}' <<<"$lay")"
				fi
				rm -rf "$img" "$img.mnt"
			done
		done
		wb=$(tr ' ' '\n' <<<"$wbs" | grep . | median)
		wbd=$(tr ' ' '\n' <<<"$wbds" | grep -v '^-*$' | median)
		echo "| $where | $c | write bound | $wb | | $(awk -v b="$bytes" -v t="$wb" 'BEGIN{printf "%.0f", (t > 0 ? b / t / 1e6 : 0)}') | | | | | 1.00 | ${wbd:--} |"
		for t in $tools; do
			w=$(tr ' ' '\n' <<<"${walls[$t]}" | grep . | median)
			m=$(tr ' ' '\n' <<<"${rss[$t]}" | grep . | median)
			x=$(tr ' ' '\n' <<<"${ratios[$t]}" | grep . | median)
			dm=$(tr ' ' '\n' <<<"${disk[$t]}" | grep -v '^-*$' | median)
			read -r nc rpf ex <<<"${rows[$t]}"
			awk -v where="$where" -v c="$c" -v t="$t" -v w="$w" -v f="$files" \
			    -v b="$bytes" -v m="$m" -v nc="$nc" -v rpf="$rpf" -v ex="$ex" -v x="$x" \
			    -v dm="${dm:--}" 'BEGIN {
				printf "| %s | %s | %s | %.2f | %.0f | %.0f | %.0f | %s | %s | %s | %.2f | %s |\n",
				where, c, t, w, (w > 0 ? f / w : 0), (w > 0 ? b / w / 1e6 : 0),
				m / 1024, nc, rpf, ex, x, dm }'
		done
		unset walls rss ratios rows disk
	done
	rm -rf "$base"
done
