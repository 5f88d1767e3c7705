#!/usr/bin/env bash
# bench/mkcorpus.sh DIR [--quick]: the three copy-in corpora under DIR.
#   real   a copy of system library and documentation trees (~1 GiB; quick:
#          ~100 MiB): many files, directories, symlinks, some hard links
#   small  50,000 files of 1-16 KiB in ~300 directories (quick: 5,000 in 30)
#   big    32 files of 32 MiB (quick: 8 of 8 MiB)
# Contents are pseudo-random from fixed seeds, so every run gets the same
# corpus. Existing corpora are kept.
set -eu
dir=$1 quick=${2:-}
mkdir -p "$dir"
if [ "$quick" = --quick ]; then
	real_mib=100 small_n=5000 small_dirs=30 big_n=8 big_mib=8
else
	real_mib=1024 small_n=50000 small_dirs=300 big_n=32 big_mib=32
fi

if [ ! -d "$dir/real" ]; then
	mkdir -p "$dir/real"
	# whole top-level trees of /usr/lib in name order until the budget
	# is spent, then /usr/share/doc; cp -a keeps links and symlinks
	budget=$((real_mib * 1024))
	cp -a /usr/share/doc "$dir/real/doc"
	used=$(du -sk "$dir/real" | cut -f1)
	for d in $(ls /usr/lib); do
		sz=$(du -sk "/usr/lib/$d" 2>/dev/null | cut -f1)
		[ $((used + sz)) -gt "$budget" ] && continue
		cp -a "/usr/lib/$d" "$dir/real/" 2>/dev/null || true
		used=$((used + sz))
	done
	# a few hard links, as real trees have
	i=0
	for f in $(cd "$dir/real" && find . -type f -size +1k | sort | head -20); do
		ln "$dir/real/$f" "$dir/real/$f.hardlink" 2>/dev/null && i=$((i + 1))
	done
fi

if [ ! -d "$dir/small" ]; then
	python3 - "$dir/small" "$small_n" "$small_dirs" <<'PY'
import os, random, sys
root, n, ndirs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rnd = random.Random(5)
for d in range(ndirs):
    os.makedirs(os.path.join(root, 'd%03d' % d), exist_ok=True)
for i in range(n):
    size = rnd.randint(1024, 16384)
    with open(os.path.join(root, 'd%03d' % (i % ndirs), 'f%05d' % i), 'wb') as f:
        f.write(rnd.randbytes(size))
PY
fi

if [ ! -d "$dir/big" ]; then
	mkdir -p "$dir/big"
	for i in $(seq 1 "$big_n"); do
		python3 -c 'import random,sys; r=random.Random(int(sys.argv[1])); sys.stdout.buffer.write(r.randbytes(int(sys.argv[2])<<20))' \
			"$i" "$big_mib" > "$dir/big/f$i"
	done
fi
for c in real small big; do
	printf '%s: %s files, %s dirs, %s symlinks, %s\n' "$c" \
		"$(find "$dir/$c" -type f | wc -l)" "$(find "$dir/$c" -type d | wc -l)" \
		"$(find "$dir/$c" -type l | wc -l)" "$(du -sh "$dir/$c" | cut -f1)"
done
