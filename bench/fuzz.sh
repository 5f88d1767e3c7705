#!/usr/bin/env bash
# bench/fuzz.sh: mutate an image (bit flips in metadata, zeroed blocks,
# truncation, random bytes), run e3fsck -n (and -y on a copy) on each
# case under a time limit, and report "cases N crashes N hangs N".
# E3FSCK=path picks the binary (e.g. an --enable-asan build).
# A crash is a signal or a sanitizer report; a hang is a run past the limit.
#   bench/fuzz.sh [--cases N] [--seed S] [--image IMG] [--timeout SEC]
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
export PATH=/sbin:/usr/sbin:$PATH
cases=500 seed=1 image= tmo=10
while [ $# -gt 0 ]; do
	case $1 in
	--cases) cases=$2; shift 2 ;;
	--seed) seed=$2; shift 2 ;;
	--image) image=$2; shift 2 ;;
	--timeout) tmo=$2; shift 2 ;;
	*) echo "usage: $0 [--cases N] [--seed S] [--image IMG] [--timeout SEC]" >&2; exit 16 ;;
	esac
done
w=$(mktemp -d /tmp/fsck-fuzz.XXXXXX)
trap 'rm -rf "$w"' EXIT
if [ -z "$image" ]; then
	image=$w/base.img
	bash "$top/tests/corrupt.sh" --base "$image" >/dev/null
fi
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1}
crashes=0 hangs=0 bad=0
for i in $(seq 1 "$cases"); do
	cp "$image" "$w/c.img"
	python3 "$top/bench/fuzz_mutate.py" "$w/c.img" "$seed" "$i" >/dev/null
	for mode in -n -y; do
		timeout "$tmo" "${E3FSCK:-$top/misc/e3fsck}" $mode "$w/c.img" >"$w/out" 2>&1
		rc=$?
		if [ $rc -eq 124 ]; then
			hangs=$((hangs + 1)); cp "$w/c.img" "/tmp/fsck-fuzz-hang-$seed-$i.img"
		elif [ $rc -ge 128 ] || grep -q 'AddressSanitizer\|runtime error' "$w/out"; then
			crashes=$((crashes + 1)); cp "$w/c.img" "/tmp/fsck-fuzz-crash-$seed-$i.img"
			echo "crash: case $i mode $mode rc $rc"; tail -5 "$w/out"
		elif [ $((rc & ~(1 | 4 | 8))) -ne 0 ]; then
			bad=$((bad + 1)); echo "case $i mode $mode: unexpected exit $rc"
		fi
	done
done
echo "cases $cases crashes $crashes hangs $hangs unexpected $bad"
[ $crashes -eq 0 ] && [ $hangs -eq 0 ] && [ $bad -eq 0 ]
