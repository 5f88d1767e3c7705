#!/usr/bin/env bash
# defrag.sh: issue 17's benchmark — on one aged ext3 image, side by side:
#   e3defrag       in place (its --json figures; --map-before/-after SVGs)
#   rdump+mke2fs   debugfs -R 'rdump / OUT' then mke2fs -t ext3 -d OUT
#   cp-a+mke2fs    read-only loop mount, cp -a, then mke2fs -t ext3 -d OUT
#   e4defrag       what it does with ext3: refused on an ext3 mount, and
#                  on an ext4 mount of the same volume (once, not timed
#                  against the others)
#   bound          dd of the whole image with oflag=direct: reading and
#                  writing every byte once, more than any route needs
# Every timed route ends with its result durable: e3defrag's close
# fsyncs the image; mke2fs -d fsyncs its image at close too (libext2fs'
# unix I/O manager: two fsyncs, seen with strace), and its timed part
# also ends with a `sync -f` of that image so the rule does not rest on
# that (measured 0.1 s at 4 GiB: nothing left to write); dd writes with
# O_DIRECT and conv=fsync. The rebuilds' scratch tree (OUT) is not
# synced: it is thrown away.
# Rounds interleave the routes, rotating which goes first; the table gives
# per route the median wall and CPU (user+sys) time, peak RSS
# (/usr/bin/time -v), and the median (min-max) of the per-round ratios of
# e3defrag's wall time to each other route's. Layout figures of every
# result come from one ruler (e3defrag -n --json, i.e. e3fsck's layout
# pass): e2fsck's non-contiguous %, runs per file avg/p90/max, excess
# runs per file, free extents and the largest; manifest differences
# (bench/manifest.py over a read-only mount: with inode numbers, and
# without them) against the image before.
#
# Usage (root, from the top of a built tree):
#   bench/defrag.sh [SIZE] [ROUNDS] [SEED]     (defaults 4G 3 1)
#   AGED=IMG   use this aged image instead of making one (bench/age.sh)
#   WORK=DIR   scratch (default a new /tmp/defrag-bench-*); needs about
#              3 x SIZE of space
# Prints a markdown table; the SVG maps are left in $WORK. Each route's
# 1-minute load average at its start is kept beside its times (the
# machine this was written on is shared: read figures with the load).
# To rerun as the results file did:
#   E3BIN=misc WORK=/tmp/defrag-bench AGED=/tmp/aged4g.img \
#       nice -n 10 bash bench/defrag.sh 4G 3 1
set -eu

here=$(cd "$(dirname "$0")" && pwd)
BIN=${E3BIN:-$here/../misc}
SIZE=${1:-4G} ROUNDS=${2:-3} SEED=${3:-1}
WORK=${WORK:-$(mktemp -d /tmp/defrag-bench-XXXXXX)}
export PATH="$BIN:/sbin:/usr/sbin:$PATH"
[ "$(id -u)" -eq 0 ] || { echo "defrag.sh: needs root (loop mounts)" >&2; exit 2; }
mkdir -p "$WORK/mnt"
cleanup() { mountpoint -q "$WORK/mnt" && umount "$WORK/mnt"; true; }
trap cleanup EXIT

A=${AGED:-$WORK/aged.img}
if [ -z "${AGED:-}" ]; then
	bash "$here/age.sh" "$A" "$SIZE" "$SEED" 80 > "$WORK/age.log" 2>&1
fi
bytes=$(stat -c %s "$A")

man() {	# IMG OUT
	mount -o loop,ro -t ext3 "$1" "$WORK/mnt"
	python3 "$here/manifest.py" "$WORK/mnt" > "$2"
	python3 "$here/manifest.py" "$WORK/mnt" --no-ino > "$2.noino"
	umount "$WORK/mnt"
}
man "$A" "$WORK/m0"

# timed ROUTE ROUND CMD...: one /usr/bin/time -v record per command
timed() {
	local route=$1 round=$2
	shift 2
	cut -d' ' -f1 /proc/loadavg >> "$WORK/load.$route.$round"
	/usr/bin/time -v -o "$WORK/t.$route.$round.$((++step))" "$@"
}

run_e3defrag() {	# ROUND
	cp --sparse=always "$A" "$WORK/e3.img"
	sync
	local maps=()
	[ "$1" -eq 1 ] && maps=(--map-before "$WORK/before.svg" --map-after "$WORK/after.svg")
	timed e3defrag "$1" e3defrag --json "${maps[@]}" "$WORK/e3.img" \
		> "$WORK/e3.json" || [ $? -eq 1 ]
}

run_rdump() {
	rm -rf "$WORK/out"
	mkdir -p "$WORK/out"
	sync
	timed rdump "$1" debugfs -R "rdump / $WORK/out" "$A" >/dev/null 2>&1
	du -sk "$WORK/out" | cut -f1 > "$WORK/space.rdump"
	timed rdump "$1" mke2fs -q -F -t ext3 -b 4096 -d "$WORK/out" \
		"$WORK/rdump.img" "$SIZE"
	timed rdump "$1" sync -f "$WORK/rdump.img"
	rm -rf "$WORK/out"
}

run_cpa() {
	rm -rf "$WORK/out"
	mkdir -p "$WORK/out"
	sync
	mount -o loop,ro -t ext3 "$A" "$WORK/mnt"
	timed cpa "$1" cp -a "$WORK/mnt/." "$WORK/out"
	umount "$WORK/mnt"
	du -sk "$WORK/out" | cut -f1 > "$WORK/space.cpa"
	timed cpa "$1" mke2fs -q -F -t ext3 -b 4096 -d "$WORK/out" \
		"$WORK/cpa.img" "$SIZE"
	timed cpa "$1" sync -f "$WORK/cpa.img"
	rm -rf "$WORK/out"
}

run_bound() {
	sync
	timed bound "$1" dd if="$A" of="$WORK/dd.img" bs=4M oflag=direct conv=fsync status=none
	rm -f "$WORK/dd.img"
}

routes=(e3defrag rdump cpa bound)
for r in $(seq 1 "$ROUNDS"); do
	step=0
	for k in 0 1 2 3; do
		route=${routes[$(( (k + r - 1) % 4 ))]}
		"run_$route" "$r"
	done
	# the round's results are the ones measured (the last round's)
done

# e4defrag, once: refused on an ext3 mount; on an ext4 mount of the
# same (block-mapped) volume it tries every file
cp --sparse=always "$A" "$WORK/e4.img"
mount -o loop -t ext3 "$WORK/e4.img" "$WORK/mnt"
e4defrag "$WORK/mnt" > "$WORK/e4.ext3.log" 2>&1 && e4rc3=0 || e4rc3=$?
umount "$WORK/mnt"
mount -o loop -t ext4 "$WORK/e4.img" "$WORK/mnt"
/usr/bin/time -v -o "$WORK/t.e4defrag.1.1" e4defrag -v "$WORK/mnt" \
	> "$WORK/e4.ext4.log" 2>&1 && e4rc4=0 || e4rc4=$?
umount "$WORK/mnt"

for img in e3 rdump cpa e4; do
	e2fsck -fn "$WORK/$img.img" > "$WORK/fsck.$img" 2>&1 && echo 0 > "$WORK/fsckrc.$img" ||
		echo $? > "$WORK/fsckrc.$img"
	e3defrag -n --json "$WORK/$img.img" > "$WORK/lay.$img.json" 2>/dev/null || true
	man "$WORK/$img.img" "$WORK/m.$img"
done
e3defrag -n --json "$A" > "$WORK/lay.before.json" 2>/dev/null || true

python3 - "$WORK" "$ROUNDS" "$bytes" "$e4rc3" "$e4rc4" "$SIZE" <<'EOF'
import glob, json, os, re, statistics, sys
W, rounds, nbytes, e4rc3, e4rc4, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6]

def tv(path):
    t = open(path).read()
    g = lambda k: re.search(re.escape(k) + r":\s*(\S+)", t).group(1)
    el = g("Elapsed (wall clock) time (h:mm:ss or m:ss)").split(":")
    wall = sum(float(x) * 60 ** i for i, x in enumerate(reversed(el)))
    return wall, float(g("User time (seconds)")) + float(g("System time (seconds)")), int(g("Maximum resident set size (kbytes)"))

def route(name, r):
    recs = [tv(p) for p in sorted(glob.glob("%s/t.%s.%d.*" % (W, name, r)))]
    return (sum(x[0] for x in recs), sum(x[1] for x in recs), max(x[2] for x in recs)) if recs else None

def lay(img):
    try:
        d = json.load(open("%s/lay.%s.json" % (W, img)))["before"]
    except Exception:
        return None
    return d

def mdiff(img):
    a = set(open(W + "/m0").read().splitlines()); b = set(open("%s/m.%s" % (W, img)).read().splitlines())
    an = set(open(W + "/m0.noino").read().splitlines()); bn = set(open("%s/m.%s.noino" % (W, img)).read().splitlines())
    return len(a - b) + len(b - a), len(an - bn) + len(bn - an), len(a)

names = {"e3defrag": "e3", "rdump": "rdump", "cpa": "cpa", "bound": None}
label = {"e3defrag": "e3defrag (in place)", "rdump": "debugfs rdump + mke2fs -d",
         "cpa": "ro mount + cp -a + mke2fs -d", "bound": "bound: dd oflag=direct of the image",
         "e4defrag": "e4defrag on an ext4 mount"}
per = {k: [route(k, r) for r in range(1, rounds + 1)] for k in names}
per["e4defrag"] = [route("e4defrag", 1)]
b = lay("before")
def load(name):
    v = []
    for p in glob.glob("%s/load.%s.*" % (W, name)):
        v += [float(x) for x in open(p).read().split()]
    return "%.1f-%.1f" % (min(v), max(v)) if v else "-"
print("Image: %s (%d bytes), %d rounds; every route's result durable (fsync / sync -f) inside its time; load = 1-min load average at each command's start, min-max over the rounds (%d CPUs)\n" % (size, nbytes, rounds, os.cpu_count()))
print("| route | wall s (median) | CPU s (median) | load | peak RSS MiB | e3defrag wall / this (median, min-max) | non-contig % | runs/file avg / p90 / max | excess runs/file | free extents (largest, blocks) | extra space | e2fsck -fn | manifest lines differing (with ino / without) |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
def figs(d):
    if not d: return ["-"] * 4
    return ["%.1f" % d["noncontig_percent"], "%.3f / %d / %d" % (d["runs_avg"], d["runs_p90"], d["runs_max"]),
            "%.4f" % d["excess_avg"], "%d (%d)" % (d["free_extents"], d["free_largest"])]
print("| before (aged image) | | | | | | " + " | ".join(figs(b)) + " | | | |")
e3w = [x[0] for x in per["e3defrag"]]
for k in ["e3defrag", "rdump", "cpa", "bound", "e4defrag"]:
    recs = [x for x in per[k] if x]
    if not recs: continue
    wall = statistics.median(x[0] for x in recs); cpu = statistics.median(x[1] for x in recs)
    rss = max(x[2] for x in recs) / 1024
    if k in ("e3defrag", "e4defrag"):
        ratio = "-"
    else:
        rs = [e3w[i] / per[k][i][0] for i in range(rounds) if per[k][i] and per[k][i][0] > 0]
        ratio = "%.2f (%.2f-%.2f)" % (statistics.median(rs), min(rs), max(rs))
    img = {"e3defrag": "e3", "rdump": "rdump", "cpa": "cpa", "e4defrag": "e4"}.get(k)
    if img:
        d = lay(img)
        md = mdiff(img)
        sp = open("%s/space.%s" % (W, img)).read().strip() + " KiB" if os.path.exists("%s/space.%s" % (W, img)) else "0"
        fr = open("%s/fsckrc.%s" % (W, img)).read().strip()
        row = figs(d) + [sp, "exit " + fr, "%d / %d of %d" % (md[0], md[1], md[2])]
    else:
        row = ["-"] * 7
    print("| %s | %.2f | %.2f | %s | %.0f | %s | %s |" % (label[k], wall, cpu, load(k), rss, ratio, " | ".join(row)))
j = json.load(open(W + "/e3.json"))
print("\ne3defrag (last round): files planned %d, moved %d, left %d; blocks moved %d; room made: %d files moved out of the way of %d; exit per --json above" %
      (j["files_planned"], j["files_moved"], j["files_left"], j["blocks_moved"], j["files_evicted"], j["files_made_room"]))
e4 = open(W + "/e4.ext4.log").read()
e3l = open(W + "/e4.ext3.log").read().strip().splitlines()
fails = len(re.findall(r"(?i)failed", e4))
m = re.search(r"Success:\s*\[\s*(\d+)/(\d+)\s*\]", e4)
print("e4defrag on the ext3 mount: exit %s: %s" % (e4rc3, " / ".join(l.strip() for l in e3l if not l.startswith("e4defrag 1."))))
print("e4defrag on an ext4 mount: exit %s; %s; %d lines say failed" % (e4rc4, m.group(0) if m else "no Success line", fails))
EOF
