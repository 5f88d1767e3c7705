#!/usr/bin/env bash
# scripts/demo.sh: the main job on the sample tree — make an ext3 image,
# check it with e2fsck, and say how to look inside it.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p demo
img=demo/sample.img
rm -f "$img"
misc/e3mkfs -q -L sample "$img" 16M
e2fsck -fn "$img"
echo
echo "made $img (ext3, 16 MiB); look inside with:"
echo "  dumpe2fs -h $img      debugfs -R 'ls -l /' $img"
