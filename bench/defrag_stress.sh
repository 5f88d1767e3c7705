#!/usr/bin/env bash
# defrag_stress.sh: e3defrag (--compact and plain) on many differently
# fragmented images, every file's contents and inode checked after each run.
#
# Why: one development run of `e3defrag --compact` once left five small
# files reading back differently while e2fsck called the image clean, and
# the per-file read-back check cannot see a later move (or a checkpoint)
# overwrite an earlier-moved file. This script looks for that, at scale.
#
# Usage (from the top of a built tree):
#   bench/defrag_stress.sh [COUNT] [FIRST_SEED]
#     COUNT       images to build (default 20), seeds FIRST_SEED.. (default 1)
#   Environment:
#     E3BIN       directory with e3mkfs, e3cp, e3defrag (default: ../misc)
#     WORK        scratch directory (default: a new /tmp/defrag-stress-*)
#     KEEP=1      keep every image (default: only failing ones are kept)
#     DEADLINE    epoch seconds: build no new image after it
#   e.g.  bench/defrag_stress.sh 100 1
#         E3BIN=/tmp/asan/misc bench/defrag_stress.sh 20 500   # ASan build
#
# Each seed chooses (deterministically, contents included): block size
# 1 KiB or 4 KiB, image size, e3mkfs options (-g small groups, almost
# always with 4 KiB blocks, -J a
# small journal, -I 128, ^dir_index), how many small files and how they are
# deleted (every other, every third, at random), big files copied into the
# holes with --alloc=none by 2-4 writers (with sparse files, a hard link,
# fast and slow symlinks), directories grown side by side,
# a second round of deletes and small files into the new holes; and for
# the runs E3_DEFRAG_COMMIT_EVERY (unset, 1..50) and E3_JOURNAL_MEM
# (unset, 8..256 KiB: committed blocks go home before the checkpoint).
# Per image:
#   A: e3defrag --compact, then e3defrag --compact again (moves files the
#      first run moved);
#   B: plain e3defrag, then e3defrag --compact;
#   C: e3defrag --compact interrupted (E3_DEFRAG_SIGINT_AFTER=1..5 files:
#      exit 32 at a transaction boundary), then e3defrag --compact.
# Before the first run and after every run: the journal is empty
# (dumpe2fs -h: no needs_recovery, "Journal start: 0"), e2fsck -fn is
# clean, and every regular file's sha256 (debugfs rdump, i.e. dump) and
# every inode's debugfs stat minus its block list equal the original's.
# Exit status 0 when every check held; failures are listed in
# $WORK/failures and their images kept in $WORK/fail-SEED-*.
set -u

here=$(cd "$(dirname "$0")" && pwd)
BIN=${E3BIN:-$here/../misc}
COUNT=${1:-20}
SEED0=${2:-1}
WORK=${WORK:-$(mktemp -d /tmp/defrag-stress-XXXXXX)}
mkdir -p "$WORK"
export PATH="$BIN:$PATH"
for t in e3mkfs e3cp e3defrag; do
	[ -x "$BIN/$t" ] || { echo "no $BIN/$t: build first" >&2; exit 2; }
done

images=0 setup_fail=0 runs=0 compact_runs=0 plain_runs=0 mismatches=0
: > "$WORK/failures"
log() { printf '%s\n' "$*" >> "$WORK/log"; }

# gen SEED DIR: the source trees and params.sh (shell variables)
gen() {
	python3 - "$1" "$2" <<'EOF'
import os, random, sys
seed, d = int(sys.argv[1]), sys.argv[2]
r = random.Random(seed)
bs = r.choice([1024, 4096])
mib = r.choice([16, 24, 32, 48]) if bs == 1024 else r.choice([32, 48, 64])
cap = mib << 20
def write(path, n):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(r.randbytes(n))
# small files: 1 to 40 blocks
nsmall = r.randint(150, 600)
smax = r.choice([12, 20, 40]) * bs
small = []
used = 0
for i in range(nsmall):
    n = r.randint(1, smax)
    if used + n > cap * 0.45:
        break
    write(f"{d}/small/s{i}", n)
    small.append(f"/s{i}")
    used += n
mode = r.choice(["half", "third", "random"])
if mode == "half":
    dele = small[::2]
elif mode == "third":
    dele = [p for k, p in enumerate(small) if k % 3 != 1]
else:
    dele = [p for p in small if r.random() < 0.5]
freed = used * len(dele) / max(1, len(small))
# big files into the holes
room = cap * 0.80 - (used - freed)
nbig = r.randint(2, 8)
for i in range(nbig):
    n = int(room * 0.6 / nbig * r.uniform(0.5, 1.5))
    if n > 0:
        write(f"{d}/big/b{i}", n)
        room -= n
# the odd ones: sparse files (data, hole, data: indirect blocks over
# holes), a hard link, fast and slow symlinks
if os.path.isdir(f"{d}/big"):
    for i in range(r.randint(0, 3)):
        p = f"{d}/big/sparse{i}"
        with open(p, "wb") as f:
            f.write(r.randbytes(r.randint(1, 40) * bs))
            f.seek(r.randint(1, 300) * bs, 1)
            f.write(r.randbytes(r.randint(1, 40) * bs))
        room -= os.path.getsize(p)
    if os.path.exists(f"{d}/big/b0"):
        os.link(f"{d}/big/b0", f"{d}/big/b0.link")
    os.symlink("b1", f"{d}/big/fast")
    os.symlink("x/" * 100 + "target", f"{d}/big/slow")
# directories grown side by side (fragmented directories)
ndirs = r.randint(0, 4)
for k in range(ndirs):
    for i in range(r.randint(20, 150)):
        n = r.randint(0, 3 * bs)
        if room - n < cap * 0.05:
            break
        write(f"{d}/dirs/d{k}/entry-with-a-longish-name-{i:04d}", n)
        room -= n
# round two: delete some big/small, copy small files into the holes
dele2 = [f"/big/b{i}" for i in range(nbig) if r.random() < 0.3]
late = r.randint(0, 200)
for i in range(late):
    n = r.randint(1, 8 * bs)
    if room - n < cap * 0.05:
        break
    write(f"{d}/late/l{i}", n)
    room -= n
with open(f"{d}/rm1.cmds", "w") as f:
    f.writelines(f"rm {p}\n" for p in dele)
with open(f"{d}/rm2.cmds", "w") as f:
    f.writelines(f"rm {p}\n" for p in dele2)
mk = []
# 4 KiB blocks: groups of 32768 would leave one or two groups, and
# compaction needs groups to empty and others to fill
if bs == 4096 and r.random() < 0.85:
    mk += ["-g", str(r.choice([1024, 2048, 4096]))]
elif bs == 1024 and r.random() < 0.3:
    mk += ["-g", str(r.choice([1024, 2048, 4096]))]
if r.random() < 0.3:
    mk += ["-J", "size=" + str(r.choice([1, 2]) if bs == 1024 else 4)]
if r.random() < 0.2:
    mk += ["-I", "128"]
if r.random() < 0.2:
    mk += ["-O", "^dir_index"]
every = r.choice(["", "", "1", "3", "10", "50"])
jmem = r.choice(["", "", "8", "32", "256"])
with open(f"{d}/params.sh", "w") as f:
    f.write(f"BS={bs}\nMIB={mib}\nJOBS={r.randint(2, 4)}\n"
            f"MODE={mode}\nEVERY='{every}'\nJMEM='{jmem}'\n"
            f"MKFS='{' '.join(mk)}'\n")
EOF
}

# journal_empty IMG
journal_empty() {
	local h
	h=$(dumpe2fs -h "$1" 2>/dev/null) || return 1
	if printf '%s\n' "$h" | grep -q '^Filesystem features:.*needs_recovery'; then
		echo "needs_recovery set" ; return 1
	fi
	printf '%s\n' "$h" | grep -Eq '^Journal start: +0$' ||
		{ echo "journal start not 0"; return 1; }
}

fsck_clean() {
	e2fsck -fn "$1" > "$1.fsck" 2>&1 || { echo "e2fsck -fn failed"; return 1; }
}

# manifest IMG OUT: OUT.sha, OUT.stat
manifest() {
	local img=$1 out=$2 p
	rm -rf "$out.d"; mkdir -p "$out.d"
	debugfs -R "rdump / $out.d" "$img" >/dev/null 2>&1 || return 1
	(cd "$out.d" && find . -type f -print0 | sort -z | xargs -0 -r sha256sum) \
		> "$out.sha" || return 1
	(cd "$out.d" && find . -mindepth 1 | sort | sed 's|^\.||') > "$out.list"
	while IFS= read -r p; do printf 'stat "%s"\n' "$p"; done \
		< "$out.list" > "$out.cmds"
	debugfs -f "$out.cmds" "$img" 2>/dev/null |
		grep -Ev '^(BLOCKS:|\(|TOTAL:)' > "$out.stat" || return 1
	rm -rf "$out.d"
}

# check SEED TAG IMG REF: journal empty, fsck clean, manifest as REF's
check() {
	local seed=$1 tag=$2 img=$3 ref=$4 why=""
	why=$(journal_empty "$img") || true
	[ -z "$why" ] && { why=$(fsck_clean "$img") || true; }
	if [ -z "$why" ]; then
		if ! manifest "$img" "$img.m"; then
			why="manifest failed"
		elif ! cmp -s "$ref.sha" "$img.m.sha"; then
			why="CONTENTS differ: $(diff "$ref.sha" "$img.m.sha" | grep -c '^>') files"
		elif ! cmp -s "$ref.stat" "$img.m.stat"; then
			why="INODES differ"
		fi
	fi
	if [ -n "$why" ]; then
		mismatches=$((mismatches + 1))
		echo "seed $seed $tag: $why" | tee -a "$WORK/failures" >&2
		mkdir -p "$WORK/fail-$seed-$tag"
		cp "$img" "$img".* "$WORK/fail-$seed-$tag/" 2>/dev/null
		cp "$WORK/s$seed/orig.img" "$WORK/s$seed/params.sh" \
			"$WORK/fail-$seed-$tag/" 2>/dev/null
		return 1
	fi
}

# defrag SEED TAG IMG REF ARGS...: one run and its checks
defrag() {
	local seed=$1 tag=$2 img=$3 ref=$4 rc
	shift 4
	runs=$((runs + 1))
	case " $* " in *" --compact "*) compact_runs=$((compact_runs + 1)) ;;
		       *) plain_runs=$((plain_runs + 1)) ;; esac
	env ${EVERY:+E3_DEFRAG_COMMIT_EVERY=$EVERY} ${JMEM:+E3_JOURNAL_MEM=$JMEM} \
		${SIGAFTER:+E3_DEFRAG_SIGINT_AFTER=$SIGAFTER} \
		e3defrag --quiet --json "$@" "$img" > "$img.json" 2> "$img.err"
	rc=$?
	log "seed $seed $tag: e3defrag $* rc=$rc every=$EVERY jmem=$JMEM sigint=${SIGAFTER:-} $(python3 -c '
import json, sys
try:
    d = json.load(open(sys.argv[1]))
    print(" ".join("%s=%s" % (k, d[k]) for k in ("files_moved", "files_left",
          "files_compacted", "files_retried", "blocks_moved")))
except Exception as e:
    print("no json:", e)' "$img.json")"
	# exit 1 is also what a sanitizer's abort gives: the run counts only
	# when its report came out whole and says the same
	if [ $rc -eq 0 ] || [ $rc -eq 1 ] || { [ $rc -eq 32 ] && [ -n "${SIGAFTER:-}" ]; }; then
		if grep -Eq 'runtime error|Sanitizer' "$img.err" ||
		   ! python3 -c 'import json, sys
sys.exit(json.load(open(sys.argv[1]))["exit"] != int(sys.argv[2]))' \
			"$img.json" "$rc" 2>/dev/null; then
			rc="$rc without a whole report"
		fi
	fi
	if [ "$rc" != 0 ] && [ "$rc" != 1 ] &&
	   { [ "$rc" != 32 ] || [ -z "${SIGAFTER:-}" ]; }; then
		mismatches=$((mismatches + 1))
		echo "seed $seed $tag: e3defrag $* exit $rc: $(head -c 300 "$img.err")" |
			tee -a "$WORK/failures" >&2
		mkdir -p "$WORK/fail-$seed-$tag"
		cp "$img" "$img.err" "$WORK/s$seed/orig.img" "$WORK/fail-$seed-$tag/"
		return 1
	fi
	check "$seed" "$tag" "$img" "$ref"
}

build() {
	local s=$1 d=$WORK/s$1
	rm -rf "$d"; mkdir -p "$d"
	gen "$s" "$d/src" || return 1
	mv "$d/src/params.sh" "$d/src/rm1.cmds" "$d/src/rm2.cmds" "$d/"
	. "$d/params.sh"
	e3mkfs -q -F -b "$BS" $MKFS "$d/orig.img" "${MIB}M" > /dev/null || return 1
	[ -d "$d/src/small" ] && { e3cp --quiet -j1 "$d/src/small" "$d/orig.img:/" || return 1; }
	debugfs -w -f "$d/rm1.cmds" "$d/orig.img" > /dev/null 2>&1 || return 1
	if [ -d "$d/src/big" ]; then
		e3cp --quiet --alloc=none -j"$JOBS" "$d/src/big" "$d/orig.img:/big" || return 1
	fi
	if [ -d "$d/src/dirs" ]; then
		e3cp --quiet --alloc=none -j"$JOBS" "$d/src/dirs" "$d/orig.img:/dirs" || return 1
	fi
	debugfs -w -f "$d/rm2.cmds" "$d/orig.img" > /dev/null 2>&1 || return 1
	if [ -d "$d/src/late" ]; then
		e3cp --quiet --alloc=none -j"$JOBS" "$d/src/late" "$d/orig.img:/late" || return 1
	fi
	rm -rf "$d/src"
	journal_empty "$d/orig.img" > /dev/null || return 1
	fsck_clean "$d/orig.img" > /dev/null || return 1
	manifest "$d/orig.img" "$d/m0" || return 1
}

s=$SEED0
while [ "$images" -lt "$COUNT" ]; do
	if [ -n "${DEADLINE:-}" ] && [ "$(date +%s)" -ge "$DEADLINE" ]; then
		echo "deadline reached" >&2
		break
	fi
	d=$WORK/s$s
	if ! build "$s" 2> "$WORK/build-$s.err"; then
		setup_fail=$((setup_fail + 1))
		log "seed $s: setup failed: $(head -c 200 "$WORK/build-$s.err")"
		rm -rf "$d"; s=$((s + 1)); continue
	fi
	. "$d/params.sh"
	images=$((images + 1))
	ok=1
	cp "$d/orig.img" "$d/a.img"
	defrag "$s" A1 "$d/a.img" "$d/m0" --compact &&
		defrag "$s" A2 "$d/a.img" "$d/m0" --compact || ok=0
	cp "$d/orig.img" "$d/b.img"
	defrag "$s" B1 "$d/b.img" "$d/m0" &&
		defrag "$s" B2 "$d/b.img" "$d/m0" --compact || ok=0
	cp "$d/orig.img" "$d/c.img"
	SIGAFTER=$(( s % 5 + 1 )) defrag "$s" C1 "$d/c.img" "$d/m0" --compact &&
		defrag "$s" C2 "$d/c.img" "$d/m0" --compact || ok=0
	printf 'seed %s bs=%s %sM [%s] jobs=%s %s every=%s jmem=%s: %s\n' "$s" \
		"$BS" "$MIB" "$MKFS" "$JOBS" "$MODE" "${EVERY:--}" "${JMEM:--}" \
		"$([ $ok = 1 ] && echo ok || echo FAIL)"
	[ "${KEEP:-0}" = 1 ] || rm -f "$d"/*.img "$d"/*.img.*
	s=$((s + 1))
done

echo "images $images (setup failures $setup_fail), runs $runs" \
     "(compact $compact_runs, plain $plain_runs), mismatches $mismatches"
echo "work: $WORK"
[ "$mismatches" -eq 0 ]
