#!/usr/bin/env bash
# bench/copyin.sh [--quick] [--runs N] [--only disk|shm] [--corpus NAME]
#                  [--tools "TOOL..."] [--throttle MB/s] [--corpus-dir DIR]
#                  [--busy]
# Copy-in, side by side in one run: e3cp -j1, e3cp -j2, e3cp -j2 with
# SOURCE_DATE_EPOCH (reproducible: e3mkfs and e3cp), e3mkfs -d,
# mke2fs -t ext3 -d, genext2fs + tune2fs -j, and (root) cp -a onto a loop
# mount, on the three corpora of bench/mkcorpus.sh; the image on disk
# (every tool's image synced) and on /dev/shm. Same image size and 4 KiB
# blocks for every tool.
#
# Rounds (default 3) are interleaved: each round runs every tool and both
# bounds once, starting one further along the list than the round before
# (rotated), so a slow spell of a shared machine hits each of them in a
# different position, and every ratio is taken within one round, then
# reported as the median of the per-round ratios with their min–max.
#
# The bounds, run like tools: "direct write", the corpus' bytes written
# once by dd with O_DIRECT (oflag=direct, 1 MiB writes, then fsync) — what
# the device takes for those bytes with no page cache in between, the
# bound on disk; and "buffered write", the same bytes through the page
# cache and one fsync. On tmpfs both are a memory copy into the page
# cache (tmpfs has no device below it), the memory-copy bound. Two rows
# show what no ext3 tool can beat on this machine: "data-bound", the
# corpus' files rounded up to whole 4 KiB blocks (what the image must
# hold) written once by dd; and "copy-floor", bench/copyfloor -j2, which
# walks the tree and copies every file's blocks into one file with e3cp's
# write-behind, and nothing else (no metadata, allocator or journal).
#
# Prints a Markdown table: median wall and CPU (user + sys) seconds,
# files/s, MB/s, peak RSS, e2fsck's non-contiguous %, runs per file and
# excess runs (bench/cplayout, last round), each tool's time over
# mke2fs -d's, over the direct write's and over the buffered write's in
# the same round (median, min–max), and the MiB each wrote to the disk
# (the device's counter, other writers included). The load average at the
# start and end goes above the table: this machine may be shared.
#
# --corpus-dir DIR: where bench/mkcorpus.sh keeps the corpora (default
# /tmp/e3bench-corpus, -quick with --quick; made once, then reused).
#
# --busy: another job keeps one core busy through every run — a process
# spinning in user space (nice 0, as the tools) started right before each
# tool's or bound's timed command and killed right after it, the same for
# every row, and outside their time and CPU figures. The issue-21 target
# "still >= 1.5x faster than mke2fs -d when another job keeps one core
# busy" is measured with it.
#
# The load average of every round goes to stderr as it starts.
#
# --throttle N (root, cgroup v1 blkio) caps writes to the disk under /tmp
# at N MB/s for the whole run, writeback included, and lifts the cap on
# exit: the disk-bound machine the targets were set on, where the bytes
# each tool writes decide its time, rather than its CPU.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
export PATH="$top/misc:/sbin:/usr/sbin:$PATH"
quick="" runs=3 only="" corpora="real small big" pick="" throttle="" corpus_dir="" busy=""
while [ $# -gt 0 ]; do
	case $1 in
	--quick) quick=--quick; runs=1 ;;
	--runs) runs=$2; shift ;;
	--only) only=$2; shift ;;
	--corpus) corpora=$2; shift ;;
	--tools) pick=$2; shift ;;
	--throttle) throttle=$2; shift ;;
	--corpus-dir) corpus_dir=$2; shift ;;
	--busy) busy=1 ;;
	*) echo "usage: $0 [--quick] [--runs N] [--only disk|shm] [--corpus real|small|big] [--tools \"direct-write buffered-write data-bound copy-floor e3cp-j1 e3cp-j2 e3cp-j2-repro e3mkfs-d mke2fs-d genext2fs cp-a\"] [--throttle MB/s] [--corpus-dir DIR] [--busy]" >&2; exit 2 ;;
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
# --busy's spinner lives in run_one's subshell, which stops it when the
# tool it runs beside ends, also after an interrupt (a ^C reaches both)
spin=""
unspin() { [ -n "$spin" ] && kill "$spin" 2>/dev/null && wait "$spin" 2>/dev/null; spin=""; }
# an interrupted run leaves no images behind, nor the cap
# images go to directories of this run's own (several people may bench
# on one machine)
disk_base=/tmp/e3bench-img.$$ shm_base=/dev/shm/e3bench.$$
trap 'uncap; rm -rf "$disk_base" "$shm_base"' EXIT
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

corpus=${corpus_dir:-/tmp/e3bench-corpus${quick:+-quick}}
bash "$top/bench/mkcorpus.sh" "$corpus" $quick >&2 || exit 2

# tool_cmd TOOL SRC IMG SIZE_MIB INODES: the shell command for one run
tool_cmd() {
	local t=$1 src=$2 img=$3 mib=$4 ino=$5
	case $t in
	direct-write)
		echo "dd if=/dev/zero of=$img bs=1M count=$bytes_mib oflag=direct conv=fsync status=none" ;;
	buffered-write)
		echo "dd if=/dev/zero of=$img bs=1M count=$bytes_mib conv=fsync status=none" ;;
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

run_one() {	# TOOL SRC IMG MIB INODES -> "wall rss_kib cpu disk_mib"
	local cmd w0 w1
	cmd=$(tool_cmd "$@")
	rm -f "$3"; mkdir -p "$3.mnt"
	sync
	w0=$(dev_written "$(dirname "$3")")
	# --busy: one core's worth of someone else's work, started before
	# the clock and stopped after it
	if [ -n "$busy" ]; then
		bash -c 'while :; do :; done' &
		spin=$!
	fi
	# %U + %S: user and system time of the whole command, children
	# included (e3mkfs and e3cp, mke2fs, dd, sync)
	/usr/bin/time -f '%e %M %U %S' -o "$3.time" bash -c "$cmd && sync -f $3" >/dev/null 2>&1 ||
		echo "failed: $cmd" >&2
	unspin
	sync
	w1=$(dev_written "$(dirname "$3")")
	echo "$(tail -1 "$3.time" | awk '{printf "%s %s %.2f", $1, $2, $3 + $4}') $([ -n "$w0" ] && echo $(( (w1 - w0) * 512 / 1048576 )) || echo -)"
	rm -f "$3.time"
}

tools="direct-write buffered-write data-bound copy-floor e3cp-j1 e3cp-j2 e3cp-j2-repro e3mkfs-d mke2fs-d genext2fs"
[ "$(id -u)" -eq 0 ] && tools="$tools cp-a"
[ -n "$pick" ] && tools=$pick
# the ratios need the bounds and mke2fs -d in every round
for need in direct-write buffered-write mke2fs-d; do
	case " $tools " in *" $need "*) ;; *) tools="$need $tools" ;; esac
done
places="disk shm"
[ -n "$only" ] && places=$only

# "median min max" of the numbers on stdin
stats() {
	sort -n | awk '{a[NR] = $1} END {if (NR) print a[int((NR + 1) / 2)], a[1], a[NR]; else print "- - -"}'
}
# "M (lo–hi)" from "M lo hi"
range() { awk '{ if ($1 == "-") print "-"; else printf "%.2f (%.2f–%.2f)", $1, $2, $3 }'; }

echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, $runs rounds,${busy:+ one core kept busy (--busy),} load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| where | corpus | tool | wall s | CPU s | files/s | MB/s | peak RSS MiB | non-contig % | runs/file | excess runs | x mke2fs -d | x direct write | x buffered write | MiB to disk |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for where in $places; do
	if [ "$where" = shm ]; then base=$shm_base; else base=$disk_base; fi
	mkdir -p "$base"
	for c in $corpora; do
		src=$corpus/$c
		files=$(find "$src" | wc -l)
		bytes=$(du -sb "$src" | cut -f1)
		bytes_mib=$((bytes / 1048576 + 1))
		data_mib=$(find "$src" -type f -printf '%s\n' |
			awk '{b += int(($1 + 4095) / 4096)} END {printf "%d", (b * 4096 + 1048575) / 1048576}')
		mib=$(( bytes * 3 / 2 / 1048576 + 64 ))
		ino=$(( files * 2 + 1024 ))
		declare -A walls=() cpus=() rss=() rows=() disk=() rm2=() rdw=() rbw=() wall=()
		read -ra order <<<"$tools"
		n=${#order[@]}
		for r in $(seq 1 "$runs"); do
			echo "# $where $c round $r: load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
			# round r starts at tool (r - 1) mod n
			for k in $(seq 0 $((n - 1))); do
				t=${order[$(( (k + r - 1) % n ))]}
				img=$base/$c-$t.img
				read -r w m cpu d < <(run_one "$t" "$src" "$img" "$mib" "$ino")
				wall[$t]=$w
				walls[$t]="${walls[$t]:-} $w"
				cpus[$t]="${cpus[$t]:-} $cpu"
				rss[$t]="${rss[$t]:-} $m"
				disk[$t]="${disk[$t]:-} $d"
				case $t in direct-write|buffered-write|data-bound|copy-floor) rows[$t]="- - -" ;; esac
				if [ "$r" -eq "$runs" ] && [ -z "${rows[$t]:-}" ]; then	# layout of the last round
					nc=$(e2fsck -fn "$img" 2>/dev/null | sed -n 's/.*(\([0-9.]*\)% non-contiguous).*/\1/p')
					lay=$("$top/bench/cplayout" "$img" 2>/dev/null)
					rows[$t]="${nc:--} $(awk '{print $4, $6}' <<<"$lay")"
				fi
				rm -rf "$img" "$img.mnt"
			done
			# this round's ratios
			for t in $tools; do
				rm2[$t]="${rm2[$t]:-} $(awk -v w="${wall[$t]}" -v b="${wall[mke2fs-d]}" 'BEGIN{printf "%.3f", (b > 0 ? w / b : 0)}')"
				rdw[$t]="${rdw[$t]:-} $(awk -v w="${wall[$t]}" -v b="${wall[direct-write]}" 'BEGIN{printf "%.3f", (b > 0 ? w / b : 0)}')"
				rbw[$t]="${rbw[$t]:-} $(awk -v w="${wall[$t]}" -v b="${wall[buffered-write]}" 'BEGIN{printf "%.3f", (b > 0 ? w / b : 0)}')"
			done
		done
		for t in $tools; do
			read -r w _ <<<"$(tr ' ' '\n' <<<"${walls[$t]}" | grep . | stats)"
			read -r cpu _ <<<"$(tr ' ' '\n' <<<"${cpus[$t]}" | grep . | stats)"
			read -r m _ <<<"$(tr ' ' '\n' <<<"${rss[$t]}" | grep . | stats)"
			read -r dm _ <<<"$(tr ' ' '\n' <<<"${disk[$t]}" | grep -v '^-*$' | stats)"
			xm=$(tr ' ' '\n' <<<"${rm2[$t]}" | grep . | stats | range)
			xd=$(tr ' ' '\n' <<<"${rdw[$t]}" | grep . | stats | range)
			xb=$(tr ' ' '\n' <<<"${rbw[$t]}" | grep . | stats | range)
			read -r nc rpf ex <<<"${rows[$t]}"
			awk -v where="$where" -v c="$c" -v t="$t" -v w="$w" -v cpu="$cpu" -v f="$files" \
			    -v b="$bytes" -v m="$m" -v nc="$nc" -v rpf="$rpf" -v ex="$ex" -v xm="$xm" \
			    -v xd="$xd" -v xb="$xb" -v dm="${dm:--}" 'BEGIN {
				printf "| %s | %s | %s | %.2f | %.2f | %.0f | %.0f | %.0f | %s | %s | %s | %s | %s | %s | %s |\n",
				where, c, t, w, cpu, (w > 0 ? f / w : 0), (w > 0 ? b / w / 1e6 : 0),
				m / 1024, nc, rpf, ex, xm, xd, xb, dm }'
		done
		unset walls cpus rss rows disk rm2 rdw rbw wall
	done
	rm -rf "$base"
done
echo
echo "Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
