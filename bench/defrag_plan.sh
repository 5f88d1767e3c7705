#!/usr/bin/env bash
# defrag_plan.sh: two e3defrag builds on copies of one aged image, round
# by round, the first to go alternating: blocks moved (and that over the
# fragmented payload), free extents after (count, largest), non-contiguous
# % and excess runs after, wall and CPU (user+sys) time, peak RSS, e2fsck
# -fn; the median of the per-round ratios new/old with min-max, and a
# bound: dd of the image with oflag=direct (the time to write every block
# once). The load average is printed beside every round.
#
# Usage: bench/defrag_plan.sh AGED.img OLD_E3DEFRAG NEW_E3DEFRAG [ROUNDS]
#   AGED.img   e.g. from: bash bench/age.sh /tmp/dfplan-aged1g.img 1G 1 80
#   OLD/NEW    e3defrag binaries (e.g. a build of the base commit and this)
# Rerun on a quiet machine with the same arguments; WORK (default
# /tmp/dfplan-bench) holds the copies (2 x the image's size, sparse) and
# the rows; SUMMARY_ONLY=1 prints the table from WORK's rows again.
set -eu

aged=$1 old=$2 new=$3 rounds=${4:-3}
work=${WORK:-/tmp/dfplan-bench}
mkdir -p "$work"
trap 'rm -f "$work"/run.img "$work"/dd.img' EXIT

load() { cut -d' ' -f1 /proc/loadavg; }

# the fragmented payload: the blocks of the files a dry run plans (one
# plan, the image untouched), the same for both builds
[ "${SUMMARY_ONLY:-0}" = 1 ] || frag=$("$old" -n --json "$aged" 2>/dev/null | python3 -c \
	'import json, sys; print(json.load(sys.stdin)["blocks_planned"])')

# one BIN TAG ROUND: a run on a fresh copy; appends a line to $work/rows
one() {
	local bin=$1 tag=$2 r=$3 l
	cp --sparse=always "$aged" "$work/run.img"
	sync
	l=$(load)
	/usr/bin/time -f '%e %U %S %M' -o "$work/time" \
		"$bin" --json "$work/run.img" > "$work/out.json" 2>/dev/null || true
	e2fsck -fn "$work/run.img" > /dev/null 2>&1 && fsck=0 || fsck=$?
	python3 - "$work/out.json" "$work/time" "$tag" "$r" "$l" "$fsck" "$frag" \
		>> "$work/rows" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1])); t = open(sys.argv[2]).read().split()
a = d["after"]
frag = int(sys.argv[7])
print(sys.argv[3], sys.argv[4], sys.argv[5], t[0],
      round(float(t[1]) + float(t[2]), 2), int(t[3]) // 1024,
      d["blocks_moved"], frag, a["free_extents"], a["free_largest"],
      a["noncontig_percent"], a["excess_avg"], sys.argv[6], d["exit"])
EOF
}

bound() {
	local r=$1 l
	l=$(load)
	/usr/bin/time -f '%e %U %S %M' -o "$work/time" \
		dd if="$aged" of="$work/dd.img" bs=4M oflag=direct conv=sparse \
		status=none
	echo "dd $r $l $(awk '{print $1, $2 + $3, int($4 / 1024)}' "$work/time")" \
		>> "$work/rows"
	rm -f "$work/dd.img"
}

[ "${SUMMARY_ONLY:-0}" = 1 ] && rounds=0 || : > "$work/rows"
for r in $(seq 1 "$rounds"); do
	if [ $((r % 2)) -eq 1 ]; then
		one "$old" old "$r"; one "$new" new "$r"
	else
		one "$new" new "$r"; one "$old" old "$r"
	fi
	bound "$r"
done

python3 - "$work/rows" <<'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
runs = {}
for w in rows:
    runs.setdefault(w[0], {})[int(w[1])] = w
print("| build | round | load | wall s | CPU s | RSS MiB | blocks moved | "
      "moved / fragmented | free extents (largest) | non-contig % | "
      "excess/file | e2fsck -fn | exit |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for tag in ("old", "new"):
    for r, w in sorted(runs.get(tag, {}).items()):
        print("| %s | %d | %s | %s | %s | %s | %s | %.2f | %s (%s) | %s | %s | %s | %s |"
              % (tag, r, w[2], w[3], w[4], w[5], w[6], int(w[6]) / int(w[7]),
                 w[8], w[9], w[10], w[11], w[12], w[13]))
for r, w in sorted(runs.get("dd", {}).items()):
    print("| dd oflag=direct (bound) | %d | %s | %s | %s | %s | | | | | | | |"
          % (r, w[2], w[3], w[4], w[5]))
def ratio(col, a="new", b="old"):
    v = [float(runs[a][r][col]) / float(runs[b][r][col])
         for r in runs[a] if r in runs[b] and float(runs[b][r][col])]
    return "%.2f (%.2f-%.2f)" % (statistics.median(v), min(v), max(v))
print()
print("new/old, median of per-round ratios (min-max): wall", ratio(3),
      "CPU", ratio(4), "blocks moved", ratio(6), "free extents", ratio(8))
print("new wall / dd bound:", ratio(3, "new", "dd"))
EOF
