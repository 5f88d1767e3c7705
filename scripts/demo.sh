#!/usr/bin/env bash
# scripts/demo.sh: the main job on the sample tree — build an ext3 image
# from sample/ with e3mkfs -d (the copy-in engine), verify it with e2fsck,
# e3fsck and a byte-for-byte read-back through debugfs, and say how to look
# inside it.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p demo
img=demo/sample.img
rm -f "$img"

export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-1700000000}
misc/e3mkfs -q -L sample -d sample "$img" auto+20%

echo "== e2fsck -fn"
e2fsck -fn "$img"
if [ -x misc/e3fsck ]; then
	echo "== e3fsck -n --layout"
	misc/e3fsck -n --layout "$img"
fi

echo "== read back every file through debugfs"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
debugfs -R "rdump / $out" "$img" >/dev/null 2>&1
if diff -r --no-dereference -x lost+found sample "$out"; then
	echo "all files identical to sample/"
else
	echo "demo: $img: read-back differs from sample/" >&2
	exit 1
fi

echo
echo "made $img ($(du -h --apparent-size "$img" | cut -f1), ext3) from sample/; look inside with:"
echo "  dumpe2fs -h $img      debugfs-ext/e3debugfs -R 'ls -l /' $img      misc/e3fsck -n --layout $img"
