#!/usr/bin/env bash
# bench/fsck.sh: e3fsck -n against e2fsck -fn on the same images, side by
# side in one run, interleaved round by round: wall time and CPU time
# (medians), peak RSS (the largest of the runs, from /usr/bin/time -v), and
# the median of the per-round time ratios with their range.
# Images: the three copy-in corpora (real: ~1 GiB of /usr/lib and
# /usr/share/doc; small: 50,000 files of 1-16 KiB in 300 directories; big:
# 32 files of 32 MiB) and one with 200,000 inodes in use, each written by
# mke2fs -t ext3 -d (or by e3cp with --writer e3cp, when built).
#   bench/fsck.sh [--runs N] [--scale F] [--dir DIR] [--writer mke2fs|e3cp]
# --scale shrinks every corpus (0.1 = a tenth) for a quick look. Corpora
# and images are kept in DIR (default /tmp/fsck-bench) between runs.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
export PATH=/sbin:/usr/sbin:$PATH
runs=5 scale=1 dir=/tmp/fsck-bench writer=mke2fs
while [ $# -gt 0 ]; do
	case $1 in
	--runs) runs=$2; shift 2 ;;
	--scale) scale=$2; shift 2 ;;
	--dir) dir=$2; shift 2 ;;
	--writer) writer=$2; shift 2 ;;
	*) echo "usage: $0 [--runs N] [--scale F] [--dir DIR] [--writer mke2fs|e3cp]" >&2; exit 16 ;;
	esac
done
mkdir -p "$dir"
e3fsck=$top/misc/e3fsck
[ -x "$e3fsck" ] || { echo "build e3fsck first (make)" >&2; exit 8; }

make_corpus() {	# name: the source tree, made once per scale
	local name=$1 t=$dir/$1-$scale
	[ -e "$t/.done" ] && { echo "$t"; return; }
	rm -rf "$t"; mkdir -p "$t"
	python3 - "$name" "$t" "$scale" <<'PY'
import os, random, shutil, sys
name, t, scale = sys.argv[1], sys.argv[2], float(sys.argv[3])
r = random.Random(42)
if name == 'small':
    n = int(50000 * scale)
    for d in range(300):
        os.makedirs(f"{t}/d{d}", exist_ok=True)
    for i in range(n):
        with open(f"{t}/d{i % 300}/f{i}", "wb") as f:
            f.write(bytes([97 + i % 26]) * r.randint(1024, 16384))
elif name == 'big':
    block = bytes(range(256)) * 4096
    for i in range(max(1, int(32 * scale))):
        with open(f"{t}/b{i}", "wb") as f:
            for _ in range(32):
                f.write(block)
elif name == 'many':
    n = int(200000 * scale)
    for d in range(1000):
        os.makedirs(f"{t}/d{d}", exist_ok=True)
    for i in range(n):
        with open(f"{t}/d{i % 1000}/f{i}", "wb") as f:
            if i % 4 == 0:
                f.write(b"m" * 3000)
elif name == 'real':
    budget, used = int((1 << 30) * scale), 0
    for src in ('/usr/share/doc', '/usr/lib'):
        for root, dirs, files in os.walk(src):
            dirs.sort()
            rel = os.path.relpath(root, '/')
            os.makedirs(os.path.join(t, rel), exist_ok=True)
            for fn in sorted(files):
                p = os.path.join(root, fn)
                try:
                    st = os.lstat(p)
                    if os.path.islink(p):
                        os.symlink(os.readlink(p), os.path.join(t, rel, fn))
                    elif os.path.isfile(p) and used + st.st_size <= budget:
                        shutil.copyfile(p, os.path.join(t, rel, fn))
                        used += st.st_size
                except OSError:
                    pass
            if used >= budget:
                break
PY
	touch "$t/.done"
	echo "$t"
}

make_image() {	# name tree: an ext3 image 1.5x the tree's size
	local name=$1 tree=$2 img=$dir/$1-$scale.img kb inodes
	[ -e "$img.done" ] && { echo "$img"; return; }
	kb=$(du -sk "$tree" | cut -f1)
	kb=$((kb * 3 / 2 + 65536))
	inodes=$(( $(find "$tree" | wc -l) * 5 / 4 + 1024 ))
	rm -f "$img"
	if [ "$writer" = e3cp ] && [ -x "$top/misc/e3cp" ]; then
		"$top/misc/e3mkfs" -N "$inodes" "$img" "${kb}K" >/dev/null
		"$top/misc/e3cp" -j2 "$tree/." "$img:/" >/dev/null
	else
		mke2fs -q -F -t ext3 -N "$inodes" -d "$tree" "$img" "${kb}K" >/dev/null
	fi
	touch "$img.done"
	echo "$img"
}

# measure cmd...: prints "seconds maxrss_kb cpu_seconds" of one run. Peak
# RSS and CPU (user+sys) come from /usr/bin/time -v; the wall time is taken
# around it in nanoseconds, since time -v's own clock ticks in 10 ms and
# these runs are short.
measure() {
	local t0 t1
	t0=$(date +%s%N)
	/usr/bin/time -v -o "$dir/time.out" "$@" >/dev/null 2>&1 || true
	t1=$(date +%s%N)
	awk -v ns=$((t1 - t0)) -F': ' '/Maximum resident set size/ { m = $2 }
		/User time/ { u = $2 } /System time/ { s = $2 }
		END { printf "%.4f %d %.2f\n", ns / 1e9, m, u + s }' "$dir/time.out"
}

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
minmax() { sort -n | awk 'NR == 1 {lo = $1} {hi = $1} END {printf "%.2f-%.2f", lo, hi}'; }

# Each round runs both tools, the first alternating between rounds so that
# neither always gets the warmer cache or the quieter moment; the speedup
# is the median of the per-round ratios, with their range beside it.
printf '%-6s %8s %7s %8s | %8s %7s %8s | %7s %11s %6s %s\n' image "e2 s" "e2 cpu" "e2 KB" \
	"e3 s" "e3 cpu" "e3 KB" speedup "min-max" "mem" "summary equal"
for name in real small big many; do
	tree=$(make_corpus "$name")
	img=$(make_image "$name" "$tree")
	e2t=() e3t=() e2c=() e3c=() ratio=() e2m=0 e3m=0
	for r in $(seq 1 "$runs"); do
		order="e2 e3"; [ $((r % 2)) -eq 0 ] && order="e3 e2"
		for who in $order; do
			if [ "$who" = e2 ]; then
				read -r t2 m c < <(measure e2fsck -fn "$img")
				e2t+=("$t2") e2c+=("$c"); [ "$m" -gt "$e2m" ] && e2m=$m
			else
				read -r t3 m c < <(measure "$e3fsck" -n "$img")
				e3t+=("$t3") e3c+=("$c"); [ "$m" -gt "$e3m" ] && e3m=$m
			fi
		done
		ratio+=("$(awk -v a="$t2" -v b="$t3" 'BEGIN {printf "%.3f", (b > 0 ? a / b : 0)}')")
	done
	a=$(printf '%s\n' "${e2t[@]}" | median)
	b=$(printf '%s\n' "${e3t[@]}" | median)
	ac=$(printf '%s\n' "${e2c[@]}" | median)
	bc=$(printf '%s\n' "${e3c[@]}" | median)
	sp=$(printf '%s\n' "${ratio[@]}" | median)
	rg=$(printf '%s\n' "${ratio[@]}" | minmax)
	s1=$(e2fsck -fn "$img" 2>/dev/null | tail -1 | sed 's/^[^:]*: //')
	s2=$("$e3fsck" -n "$img" 2>/dev/null | tail -1 | sed 's/^[^:]*: //')
	printf '%-6s %8s %7s %8s | %8s %7s %8s | %6.2fx %11s %5.2fx %s\n' "$name" "$a" "$ac" "$e2m" \
		"$b" "$bc" "$e3m" "$sp" "$rg" \
		"$(awk -v a="$e2m" -v b="$e3m" 'BEGIN {print (a > 0 ? b / a : 0)}')" \
		"$([ "$s1" = "$s2" ] && echo yes || echo "NO ($s1 / $s2)")"
done
echo "(speedup = median over rounds of e2fsck time / e3fsck time, min-max"
echo " of those ratios; cpu = median user+sys seconds; mem = e3fsck peak RSS"
echo " / e2fsck's; $runs interleaved rounds, warm page cache, $(nproc) cores,"
echo " writer $writer, load $(cut -d' ' -f1-3 /proc/loadavg) at the end)"
