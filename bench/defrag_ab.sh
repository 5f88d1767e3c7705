#!/usr/bin/env bash
# defrag_ab.sh: two e3defrag builds (or one build with two option sets)
# on copies of one aged image, rounds interleaved with the first one
# alternating; per round the wall and CPU (user+sys) time of each and the
# ratio A/B; the median (min-max) of the ratios at the end, the 1-minute
# load average beside every run. Each copy is made and synced outside
# the timed part; e3defrag's own close fsyncs the image (timed).
#
# Usage: bench/defrag_ab.sh A B IMAGE [ROUNDS]
#   A, B  "BINARY [OPTIONS...]" (one word each with its options, quoted)
#   e.g.  bench/defrag_ab.sh "/tmp/old/e3defrag -q" "misc/e3defrag -q" \
#             /tmp/aged1g.img 5
#   WORK=DIR scratch (default a new /tmp/defrag-ab-*)
set -eu
A=$1 B=$2 IMG=$3 ROUNDS=${4:-5}
WORK=${WORK:-$(mktemp -d /tmp/defrag-ab-XXXXXX)}
mkdir -p "$WORK"

one() {	# TAG CMD: prints "wall cpu load exit"
	local tag=$1 cmd=$2 load rc
	cp --sparse=always "$IMG" "$WORK/w.img"
	sync
	load=$(cut -d' ' -f1 /proc/loadavg)
	# shellcheck disable=SC2086
	/usr/bin/time -f "%e %U %S" -o "$WORK/t" $cmd "$WORK/w.img" \
		> /dev/null 2>&1 && rc=0 || rc=$?
	e2fsck -fn "$WORK/w.img" > /dev/null 2>&1 || rc="$rc,e2fsck-not-clean"
	# the last line: time puts "Command exited with non-zero status N"
	# before it when the exit is not 0
	tail -1 "$WORK/t" |
		awk -v l="$load" -v rc="$rc" '{printf "%s %.2f %s %s\n", $1, $2 + $3, l, rc}'
}

echo "| round | first | A wall s | A CPU s | A load | A exit | B wall s | B CPU s | B load | B exit | A/B wall |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for r in $(seq 1 "$ROUNDS"); do
	if [ $((r % 2)) -eq 1 ]; then
		a=$(one A "$A"); b=$(one B "$B"); first=A
	else
		b=$(one B "$B"); a=$(one A "$A"); first=B
	fi
	set -- $a; aw=$1 ac=$2 al=$3 ax=$4
	set -- $b; bw=$1 bc=$2 bl=$3 bx=$4
	echo "| $r | $first | $aw | $ac | $al | $ax | $bw | $bc | $bl | $bx | $(echo "scale=3; $aw / $bw" | bc) |"
	echo "$aw $bw $ac $bc" >> "$WORK/ratios"
done
python3 - "$WORK/ratios" "$A" "$B" <<'PY'
import statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1])]
w = [a / b for a, b, _, _ in rows]; c = [ac / bc for _, _, ac, bc in rows]
print("\nA = %s\nB = %s" % (sys.argv[2], sys.argv[3]))
print("A/B wall: median %.2f (%.2f-%.2f); A/B CPU: median %.2f (%.2f-%.2f); %d rounds"
      % (statistics.median(w), min(w), max(w), statistics.median(c), min(c), max(c), len(rows)))
PY
rm -f "$WORK/w.img"
