#!/usr/bin/env bash
# bench/fuzz_cp.sh: damage a small ext3 image that holds files,
# directories, an htree, indirect blocks and a journal (tests/corrupt.sh
# --base), then e3cp a small tree into it under a time limit (into /, an
# htree directory /d, a multi-block directory /a, or /c/sub, in turn;
# every fourth case instead replaces existing files with --overwrite: /big
# and /a/f44 with indirect blocks, /xa with an EA block, a symlink, names
# in the htree), and report
#   cases N crashes N hangs N bad-messages N worse N
# The damage is bench/fuzz_mutate.py's (bit flips, zeroed blocks,
# truncation, random bytes; anywhere in the metadata or aimed at one
# region: superblock, descriptors, bitmaps, inode tables, directory blocks,
# indirect blocks, journal), and every fifth case one of tests/corrupt.sh's
# named kinds. Every third case starts from a copy of the image left with
# a committed, unreplayed journal (e3cp stopped by E3_FAULT=stop-after-
# commit:1), so that e3cp's replay meets the damage. Classes:
#   crash        a signal or a sanitizer report
#   hang         a run past the limit
#   bad-message  a non-zero exit without exactly one "e3cp: IMAGE: reason"
#                line on stderr (tool_error's form)
#   refused      a non-zero exit with that one line
#   success      exit 0
# After a refusal or a success, e2fsck -fn must find no more problems than
# it did before e3cp ran ("as consistent as it was"), else the case also
# counts as "worse". An image with a log to replay is "as it was" once
# replayed (by anyone: a damaged log replays the same damage in e2fsck and
# the kernel), so its baseline is counted after e2fsprogs' own replay
# (debugfs -w -R journal_run: a replay and nothing else; e2fsck -E
# journal_only also repairs the superblock). A log e2fsprogs will not
# replay stays as it is, and e2fsck -fn counts it.
# E3CP=path picks the binary (meant: an --enable-asan --enable-debug build).
# Failing cases are kept as /tmp/fuzzcp-CLASS-SEED-I.img (+ .out).
#   bench/fuzz_cp.sh [--cases N] [--seed S] [--timeout SEC] [--only I]
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
export PATH=/sbin:/usr/sbin:$PATH
cases=300 seed=1 tmo=20 only=
while [ $# -gt 0 ]; do
	case $1 in
	--cases) cases=$2; shift 2 ;;
	--seed) seed=$2; shift 2 ;;
	--timeout) tmo=$2; shift 2 ;;
	--only) only=$2; shift 2 ;;
	*) echo "usage: $0 [--cases N] [--seed S] [--timeout SEC] [--only I]" >&2; exit 16 ;;
	esac
done
e3cp=${E3CP:-$top/misc/e3cp}
[ -x "$e3cp" ] || { echo "fuzz_cp.sh: no e3cp at $e3cp (set E3CP)" >&2; exit 16; }
w=$(mktemp -d /tmp/fuzzcp.XXXXXX)
trap 'rm -rf "$w"' EXIT
base=$w/base.img
bash "$top/tests/corrupt.sh" --base "$base" >/dev/null || exit 16

# the source: a small file, one of several blocks, a directory, a symlink
mkdir -p "$w/src/newdir"
echo small > "$w/src/new1"
head -c 5000 /dev/zero | tr '\0' z > "$w/src/newbig"
echo inner > "$w/src/newdir/inner"
ln -s new1 "$w/src/newlink"
# names the base image holds, for --overwrite (e3_remove frees their blocks)
mkdir -p "$w/srcov/a" "$w/srcov/d" "$w/srcov/c/sub"
for p in big xa sym a/f10 a/f44 d/h5 d/h150 c/sub/x; do echo "new $p" > "$w/srcov/$p"; done

# the same image with a log to replay: six files whose first commit is
# kept and never checkpointed
mkdir -p "$w/src2/pd"
for n in 1 2 3 4 5 6; do head -c $((n * 3000)) /dev/zero | tr '\0' p > "$w/src2/pd/p$n"; done
cp "$base" "$w/pending.img"
E3_FAULT=stop-after-commit:1 "$e3cp" --quiet --reproducible -j 1 "$w/src2/." "$w/pending.img" >/dev/null 2>&1
dumpe2fs -h "$w/pending.img" 2>/dev/null | grep -q needs_recovery ||
	{ echo "fuzz_cp.sh: could not leave a journal to replay" >&2; exit 16; }

# byte ranges of the base image's metadata, for aimed damage
regions() {	# regions IMAGE > "NAME START END" lines
	local img=$1 bs b p
	bs=$(dumpe2fs -h "$img" 2>/dev/null | sed -n 's/^Block size: *//p')
	echo "super 1024 2048"
	dumpe2fs "$img" 2>/dev/null | awk -v bs="$bs" '
		/Primary superblock at/ { split($0, a, "Group descriptors at ");
			split(a[2], r, "-"); print "gdt", r[1] * bs, (r[2] + 1) * bs }
		/Block bitmap at/ { print "block_bitmap", $4 * bs, ($4 + 1) * bs }
		/Inode bitmap at/ { print "inode_bitmap", $4 * bs, ($4 + 1) * bs }
		/Inode table at/ { split($4, r, "-"); print "inode_table", r[1] * bs, (r[2] + 1) * bs }'
	for p in / /a /c /c/sub /d /lost+found; do
		for b in $(debugfs -R "blocks $p" "$img" 2>/dev/null | tr ' ' '\n' | head -4); do
			echo "dir $((b * bs)) $(((b + 1) * bs))"
		done
	done
	for p in /big /a/f44; do
		debugfs -R "stat $p" "$img" 2>/dev/null | grep -o '(D*IND):[0-9]*' | cut -d: -f2 |
			while read -r b; do echo "indirect $((b * bs)) $(((b + 1) * bs))"; done
	done
	for b in $(debugfs -R "blocks <8>" "$img" 2>/dev/null | tr ' ' '\n' | head -24); do
		echo "journal $((b * bs)) $(((b + 1) * bs))"
	done
}
regions "$base" > "$w/regions"
dests=(/ /d /a /c/sub)
kinds=($(bash "$top/tests/corrupt.sh" --list | awk '{print $1}'))

# problems IMAGE: e2fsck -fn's exit code and the number of problems it
# would fix ("? no" answers), as "RC COUNT"
problems() {
	local out rc
	out=$(e2fsck -fn "$1" 2>&1); rc=$?
	echo "$rc $(grep -c '? no$' <<<"$out")"
}

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
unset SOURCE_DATE_EPOCH
n=0 crashes=0 hangs=0 bad=0 refused=0 ok=0 worse=0
keep() {	# keep CLASS: save the case's image (as mutated) and output
	cp "$w/m.img" "/tmp/fuzzcp-$1-$seed-$i.img"
	cp "$w/out" "/tmp/fuzzcp-$1-$seed-$i.out"
}
check_worse() {	# the image after the run against $before
	local after
	cmp -s "$w/m.img" "$w/c.img" && return
	after=$(problems "$w/c.img")
	if [ "${after% *}" -gt 0 ] && [ "${before% *}" -eq 0 ] ||
	   [ "${after#* }" -gt "${before#* }" ]; then
		worse=$((worse + 1)); keep worse
		echo "worse: case $i ($what) into $dest, exit $rc: e2fsck rc/problems before $before, after $after"
	fi
}
# baseline IMAGE: problems() of IMAGE as any recovery would leave it
baseline() {
	if dumpe2fs -h "$1" 2>/dev/null | grep -q needs_recovery; then
		cp "$1" "$w/r.img"
		debugfs -w -R journal_run "$w/r.img" >/dev/null 2>&1
		problems "$w/r.img"
	else
		problems "$1"
	fi
}
for i in $(seq 1 "$cases"); do
	[ -n "$only" ] && [ "$i" != "$only" ] && continue
	n=$((n + 1))
	if [ $((i % 3)) -eq 0 ]; then cp "$w/pending.img" "$w/m.img"; else cp "$base" "$w/m.img"; fi
	if [ $((i % 5)) -eq 0 ]; then
		what=${kinds[$(((i / 5 + seed) % ${#kinds[@]}))]}
		bash "$top/tests/corrupt.sh" "$what" "$w/m.img" >/dev/null 2>&1 || what="$what(failed)"
	else
		what=$(python3 "$top/bench/fuzz_mutate.py" "$w/m.img" "$seed" "$i" "$w/regions")
	fi
	before=$(baseline "$w/m.img")
	cp "$w/m.img" "$w/c.img"
	dest=${dests[$((i % ${#dests[@]}))]} src=$w/src ow=
	if [ $((i % 4)) -eq 2 ]; then
		dest=/ src=$w/srcov ow=--overwrite what="$what, --overwrite"
	fi
	timeout -k 5 "$tmo" "$e3cp" --quiet $ow -j 2 "$src/." "$w/c.img:$dest" >"$w/out" 2>&1
	rc=$?
	if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
		hangs=$((hangs + 1)); keep hang
		echo "hang: case $i ($what) into $dest"
	elif [ $rc -ge 128 ] || grep -q 'AddressSanitizer\|runtime error\|LeakSanitizer' "$w/out"; then
		crashes=$((crashes + 1)); keep crash
		echo "crash: case $i ($what) into $dest rc $rc"; grep -m3 'ERROR\|runtime error\|#[0-4] ' "$w/out" | sed 's/^/    /'
	elif [ $rc -ne 0 ]; then
		if [ "$(wc -l <"$w/out")" -eq 1 ] && grep -q "^e3cp: $w/c.img: ." "$w/out"; then
			refused=$((refused + 1)); check_worse
		else
			bad=$((bad + 1)); keep bad
			echo "bad-message: case $i ($what) into $dest rc $rc: $(head -3 "$w/out" | sed "s|$w/||g" | tr '\n' '|')"
		fi
	else
		ok=$((ok + 1)); check_worse
	fi
done
echo "refused $refused success $ok"
echo "cases $n crashes $crashes hangs $hangs bad-messages $bad worse $worse"
[ $crashes -eq 0 ] && [ $hangs -eq 0 ] && [ $bad -eq 0 ] && [ $worse -eq 0 ]
