#!/usr/bin/env bash
# bench/fuzz_dirs.sh: the directory / htree / journal-superblock fuzz
# campaign for e3fsck, run with a sanitized build (ASan+UBSan).
#
# It builds its own base images (e3mkfs + e3cp; a tar of long names made
# by Python so that indexes of one and two levels exist):
#   d1k3  ext3, 1 KiB blocks: /h1 a 1-level htree, /h2 a 2-level one
#         (600 names of 230 bytes), small directories, files, a symlink
#   d4k3  ext3, 4 KiB blocks: /h1 1-level, /h2 2-level (9,000 long names)
#   d1k2  ext2, 1 KiB blocks, the d1k3 tree
#   d4k2  ext2, 4 KiB blocks, the d1k3 tree (its /h2 is 1-level there)
#   j1k3  ext3, 1 KiB, with a committed log left by
#         E3_FAULT=stop-after-commit:N e3cp (needs_recovery set)
#   j4k3  the same with 4 KiB blocks
# and damages copies of them with bench/fuzz_dirs_mutate.py in one of
# three classes: dir (dirent fields, '.'/'..', names with '/' and NUL,
# block tails), htree (dx_root info, count/limit, keys and pointers at
# both levels, the index flag), jsb (every journal superblock field;
# descriptor, commit and revoke blocks of the log). Cases go round the
# pairs "IMAGE:CLASS" of --kinds in turn.
#
# Each case: e3fsck -n on the damaged image (it must not change it) and
# e2fsck -fn (verdict: 0 clean, 4 errors, 8 could not check); e3fsck -y on
# one copy, then e2fsck -fn on it (clean after?); e2fsck -fy on another
# copy. Inodes in use before (the base), after e3fsck -y (e2fsck -fn's
# summary) and after e2fsck -fy (the superblock); "deleted more" = fewer
# in use after e3fsck -y than after e2fsck -fy. A sanitizer report (ASan,
# LSan, UBSan: grepped in the output), a signal or a run past --timeout
# counts against e3fsck; such images are kept in DIR/keep.
#
# One line per case goes to DIR/cases.tsv; the summary table (per kind)
# is printed at the end (bench/results/fsck-fuzz.md has the figures).
#   E3FSCK=/tmp/x/misc/e3fsck nice -n 10 bench/fuzz_dirs.sh --cases N \
#       --seed S [--kinds "d1k3:dir j1k3:jsb ..."] [--dir DIR] [--timeout SEC]
#   bench/fuzz_dirs.sh --table DIR...   the table of earlier runs
#   bench/fuzz_dirs.sh --base KIND IMAGE   one base image (and IMAGE.map),
#       to re-make a case: fuzz_dirs_mutate.py mutate IMAGE IMAGE.map S I CLASS
# E3FSCK should be an --enable-asan build (see bench/results/fsck-fuzz.md).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
export PATH=/sbin:/usr/sbin:$PATH
cases=100 seed=1 dir= tmo=60 table=0
kinds="d1k3:dir d1k3:htree d1k3:jsb d4k3:dir d4k3:htree d4k3:jsb d1k2:dir d1k2:htree d4k2:dir d4k2:htree j1k3:jsb j4k3:jsb"
while [ $# -gt 0 ]; do
	case $1 in
	--cases) cases=$2; shift 2 ;;
	--seed) seed=$2; shift 2 ;;
	--kinds) kinds=$2; shift 2 ;;
	--dir) dir=$2; shift 2 ;;
	--timeout) tmo=$2; shift 2 ;;
	--table) table=1; shift; break ;;
	--base) table=2; shift; break ;;
	*) echo "usage: $0 [--cases N] [--seed S] [--kinds LIST] [--dir DIR] [--timeout SEC] | --table DIR..." >&2; exit 16 ;;
	esac
done
E3FSCK=${E3FSCK:-$top/misc/e3fsck}
mut=$top/bench/fuzz_dirs_mutate.py

# table DIR...: per kind, from the cases.tsv files
table() {
	cat "${@/%//cases.tsv}" | awk -F'\t' '
	function row(k) {
		printf "| %s | %d | %d | %d | %d | %d/%d | %d/%d | %d | %d | %d |\n", k, n[k], san[k], hang[k], wrote[k],
			agree[k], n[k], clean[k], n[k], d3[k], d2[k], more[k]
	}
	{
		k = $3; K = "all"
		for (j = 0; j < 2; j++) {
			n[k]++
			if ($13 ~ /san/) san[k]++
			if ($13 ~ /hang/) hang[k]++
			if ($13 ~ /wrote/) wrote[k]++
			if ($5 == $6) agree[k]++
			if ($8 == 0) clean[k]++
			if ($9 != "" && $10 != "" && $9 - $10 > 0) d3[k] += $9 - $10
			if ($9 != "" && $11 != "" && $9 - $11 > 0) d2[k] += $9 - $11
			if ($13 ~ /more/) more[k]++
			k = K
		}
		if (!(($3) in seen)) { seen[$3] = 1; order[++m] = $3 }
	}
	END {
		print "| kind | cases | sanitizer reports | hangs | -n wrote | verdict = e2fsck -fn | e2fsck -fn clean after e3fsck -y | inodes deleted by e3fsck -y | by e2fsck -fy | cases e3fsck deleted more |"
		print "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
		for (i = 1; i <= m; i++) row(order[i])
		row("all")
	}'
}
if [ $table = 1 ]; then
	table "$@"
	exit 0
fi

[ -n "$dir" ] || dir=/tmp/fuzz-dirs-$seed
mkdir -p "$dir/keep"
w=$(mktemp -d /tmp/fuzz-dirs-w.XXXXXX)
trap 'rm -rf "$w"' EXIT
export ASAN_OPTIONS=halt_on_error=1:print_stacktrace=1:detect_leaks=1:exitcode=99
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:exitcode=98

# long_tar TAR N LEN: a tar of N empty files of LEN-byte names under h2/
long_tar() {
	python3 - "$@" <<'EOF'
import io, sys, tarfile
path, n, ln = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with tarfile.open(path, 'w', format=tarfile.GNU_FORMAT) as t:
    d = tarfile.TarInfo('h2'); d.type = tarfile.DIRTYPE; d.mode = 0o755; t.addfile(d)
    for i in range(n):
        f = tarfile.TarInfo('h2/%s' % ('n%05d_' % i).ljust(ln, 'x')); f.mode = 0o644
        t.addfile(f, io.BytesIO(b''))
EOF
}

# small_tree DIR: files, small directories, a 1-level-htree directory
small_tree() {
	local d=$1 i
	mkdir -p "$d/s/deep/er" "$d/h1" "$d/e"
	for i in a b c a-b; do echo "$i" > "$d/$i"; done
	for i in $(seq 1 30); do echo "$i" > "$d/s/f$i"; done
	for i in $(seq 1 300); do : > "$d/h1/$(printf 'name-%04d-of-forty-bytes-%014d' "$i" 0)"; done
	head -c 70000 /dev/zero > "$d/s/deep/er/big"
	ln -s a "$d/sym"
	ln -s "$(printf '%0100d' 0)" "$d/longsym"
}

# base KIND IMAGE: build one base image (quiet; fails loudly)
base() {
	local kind=$1 img=$2 bs src=$w/src-$1
	case $kind in *1k*) bs=1024 ;; *) bs=4096 ;; esac
	rm -rf "$src"; mkdir -p "$src"
	small_tree "$src"
	case $kind in
	d4k3) long_tar "$w/h2.tar" 9000 230 ;;
	*) long_tar "$w/h2.tar" 600 230 ;;
	esac
	# fixed UUID, hash seed and times: a case re-made from its seed
	# and number damages the same bytes
	local fixed="-U 6f1a2b3c-4d5e-4f60-8172-839405a6b7c8 -E hash_seed=0b1c2d3e-4f50-4617-8829-3a4b5c6d7e8f"
	export SOURCE_DATE_EPOCH=1700000000
	case $kind in
	d*3) "$top/misc/e3mkfs" -q $fixed -b $bs "$img" 48M ;;
	d*2) "$top/misc/e3mkfs" -q $fixed -t ext2 -b $bs "$img" 48M ;;
	j*) "$top/misc/e3mkfs" -q $fixed -b $bs "$img" 16M ;;
	esac || return 1
	"$top/misc/e3cp" --quiet "$src" "$img" || return 1
	case $kind in
	j*)	# a second copy killed after its first (4 KiB: its only one
		# before the last) or second commit: a log to replay
		E3_FAULT=stop-after-commit:$([ $bs = 1024 ] && echo 2 || echo 1) "$top/misc/e3cp" --quiet "$w/h2.tar" "$img:/new" >/dev/null 2>&1
		dumpe2fs -h "$img" 2>/dev/null | grep -q needs_recovery || return 1
		;;
	*)	"$top/misc/e3cp" --quiet "$w/h2.tar" "$img" || return 1
		e2fsck -fn "$img" >/dev/null 2>&1 || return 1
		;;
	esac
}

# used_sb IMAGE: inodes in use by the superblock
used_sb() {
	dumpe2fs -h "$1" 2>/dev/null | awk -F: '/^Inode count/ {n = $2} /^Free inodes/ {f = $2} END {print n - f}'
}

# used_fsck OUTPUT: inodes in use by an e2fsck summary line
used_fsck() {
	tail -1 "$1" | sed -n 's|^[^:]*: \([0-9]*\)/.*|\1|p'
}

sanitized() {
	grep -q 'AddressSanitizer\|LeakSanitizer\|runtime error\|UndefinedBehaviorSanitizer' "$1"
}

if [ $table = 2 ]; then
	[ $# -eq 2 ] || { echo "usage: $0 --base KIND IMAGE" >&2; exit 16; }
	base "$1" "$2" 2>/dev/null && python3 "$mut" map "$2" > "$2.map"
	exit
fi

declare -A u0
for kc in $kinds; do
	k=${kc%%:*}
	[ -f "$w/$k.img" ] && continue
	base "$k" "$w/$k.img" || { echo "fuzz_dirs: cannot build the $k base image" >&2; exit 8; }
	python3 "$mut" map "$w/$k.img" > "$w/$k.map"
	u0[$k]=$(used_sb "$w/$k.img")
	case $k in j*) cp "$w/$k.img" "$w/r.img"; e2fsck -fy "$w/r.img" >/dev/null 2>&1; u0[$k]=$(used_sb "$w/r.img") ;; esac
done

set -- $kinds
nk=$#
san=0 hangs=0
for i in $(seq 1 "$cases"); do
	eval "kc=\${$(( (i - 1) % nk + 1 ))}"
	k=${kc%%:*} cls=${kc#*:}
	cp --sparse=always "$w/$k.img" "$w/c.img"
	what=$(python3 "$mut" mutate "$w/c.img" "$w/$k.map" "$seed" "$i" "$cls" 2>&1)
	flags=
	# -n: the verdict, and the image untouched
	cp --sparse=always "$w/c.img" "$w/n.img"
	timeout "$tmo" "$E3FSCK" -n "$w/n.img" >"$w/e3n.out" 2>&1; e3n=$?
	[ $e3n -eq 124 ] && flags+=hang-n,
	[ $e3n -ge 128 ] && [ $e3n -ne 124 ] && flags+=signal-n,
	sanitized "$w/e3n.out" && flags+=san-n,
	cmp -s "$w/c.img" "$w/n.img" || flags+=wrote-n,
	e2fsck -fn "$w/c.img" >/dev/null 2>&1; e2n=$?
	# -y, then e2fsck -fn on what it left
	cp --sparse=always "$w/c.img" "$w/y3.img"
	timeout "$tmo" "$E3FSCK" -y "$w/y3.img" >"$w/e3y.out" 2>&1; e3y=$?
	[ $e3y -eq 124 ] && flags+=hang-y,
	[ $e3y -ge 128 ] && [ $e3y -ne 124 ] && flags+=signal-y,
	sanitized "$w/e3y.out" && flags+=san-y,
	e2fsck -fn "$w/y3.img" >"$w/after.out" 2>&1; after=$?
	u3=$(used_fsck "$w/after.out")
	cp --sparse=always "$w/c.img" "$w/y2.img"
	e2fsck -fy "$w/y2.img" >/dev/null 2>&1
	u2=$(used_sb "$w/y2.img")
	[ -n "$u3" ] && [ -n "$u2" ] && [ "$u3" -lt "$u2" ] && flags+=more,
	# verdict classes: 0 clean, 4 errors (e2fsck's 4/12, e3fsck's 4), 8 failed
	v3=$e3n v2=$e2n
	[ $v3 -ge 8 ] && v3=8; [ $v3 -ne 0 ] && [ $v3 -ne 8 ] && v3=4
	[ $v2 -eq 12 ] && v2=4; [ $v2 -ge 8 ] && v2=8; [ $v2 -ne 0 ] && [ $v2 -ne 8 ] && v2=4
	[ $v3 = $v2 ] || flags+=verdict,
	{ [ $e3y -le 1 ] && [ $after -ne 0 ]; } && flags+=unclean,
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$seed" "$i" "$kc" "$what" \
		"$v3" "$v2" "$e3y" "$after" "${u0[$k]}" "$u3" "$u2" "$e3n" "$flags" >> "$dir/cases.tsv"
	case $flags in *san*|*hang*|*signal*|*more*|*wrote*)
		cp --sparse=always "$w/c.img" "$dir/keep/$seed-$i.img"
		cat "$w/e3n.out" "$w/e3y.out" > "$dir/keep/$seed-$i.out"
		echo "case $seed/$i $kc ($what): $flags" ;;
	esac
	case $flags in *san*|*signal*) san=$((san + 1)) ;; esac
	case $flags in *hang*) hangs=$((hangs + 1)) ;; esac
done
table "$dir"
echo "cases $cases sanitizer/signal $san hangs $hangs"
[ $san -eq 0 ] && [ $hangs -eq 0 ]
