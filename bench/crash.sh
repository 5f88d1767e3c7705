#!/usr/bin/env bash
# crash.sh: random SIGKILLs during real multi-threaded loads (bench/jload),
# each followed by replay only (e2fsck -E journal_only -y, no -f, no
# repairs), then e2fsck -fn, needs_recovery/journal-empty checks and a byte
# comparison of every file against what it was given. Prints:
#   trials  inconsistent-after-replay  committed-files-lost  wrong-bytes
# All but the first must be 0.
#   bench/crash.sh [KILLS=500] [NFILES=200] [THREADS=4]
set -u
cd "$(dirname "$0")/.."
kills=${1:-500} nfiles=${2:-200} threads=${3:-4}
dir=$(mktemp -d /tmp/journal-crash-XXXXXX)
trap 'rm -rf "$dir"' EXIT
mke2fs -q -t ext3 -b 1024 -g 4096 -F "$dir/base.img" 32M >/dev/null

# how long a load takes uninterrupted, in microseconds
cp --sparse=always "$dir/base.img" "$dir/x.img"
t0=$(date +%s%6N)
bench/jload load "$dir/x.img" "$nfiles" "$threads" "$dir/log" >/dev/null
dur=$(( $(date +%s%6N) - t0 ))

trials=0 inconsistent=0 lost=0 wrong=0 finished=0
while [ "$trials" -lt "$kills" ]; do
	cp --sparse=always "$dir/base.img" "$dir/x.img"
	bench/jload load "$dir/x.img" "$nfiles" "$threads" "$dir/log" 2>/dev/null &
	pid=$!
	delay=$(( (RANDOM * 32768 + RANDOM) % (dur + 1) ))
	sleep "$(printf '%d.%06d' $((delay / 1000000)) $((delay % 1000000)))"
	kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	rc=$?
	if [ "$rc" -ne 137 ]; then	# finished before the signal
		finished=$((finished + 1))
		[ "$finished" -gt $((kills * 4)) ] && { echo "loads finish too fast" >&2; exit 2; }
		continue
	fi
	trials=$((trials + 1))
	e2fsck -E journal_only -y "$dir/x.img" >/dev/null 2>&1
	hdr=$(dumpe2fs -h "$dir/x.img" 2>/dev/null)
	if ! e2fsck -fn "$dir/x.img" >/dev/null 2>&1 ||
	   grep -q needs_recovery <<<"$hdr" ||
	   ! grep -q '^Journal start: *0$' <<<"$hdr"; then
		inconsistent=$((inconsistent + 1))
		cp "$dir/x.img" "/tmp/journal-crash-inconsistent-$trials.img"
	fi
	v=$(bench/jload verify "$dir/x.img" "$nfiles" "$threads" "$dir/log")
	read -r _ _ _ l _ w <<<"$v"
	lost=$((lost + l)) wrong=$((wrong + w))
done
printf '%-8s %-14s %-15s %-11s\n' trials inconsistent committed-lost wrong-bytes
printf '%-8s %-14s %-15s %-11s\n' "$trials" "$inconsistent" "$lost" "$wrong"
[ "$inconsistent" -eq 0 ] && [ "$lost" -eq 0 ] && [ "$wrong" -eq 0 ]
