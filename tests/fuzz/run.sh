#!/usr/bin/env bash
# tests/fuzz/run.sh: build the libFuzzer target (clang, ASan, UBSan) over
# the library sources and run it for SECONDS (default 60) on a corpus
# seeded with small clean images. Crashes land in /tmp/fsck-libfuzzer/.
#   tests/fuzz/run.sh [SECONDS]
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
secs=${1:-60}
out=/tmp/fsck-libfuzzer
mkdir -p "$out/corpus"
export PATH=/sbin:/usr/sbin:$PATH
cd "$top"
[ -e lib/e3_err.h ] || make lib/e3_err.h >/dev/null
clang -g -O1 -std=c11 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined \
	-Ilib $(pkg-config --cflags ext2fs com_err uuid libbsd-overlay) \
	tests/fuzz/fuzz_check.c lib/check/*.c lib/e3_err.c \
	lib/inspect/*.c lib/journal/recovery.c lib/journal/jbd2_log.c lib/journal/mkjournal.c \
	$(pkg-config --libs ext2fs com_err uuid libbsd-overlay) -lpthread -lm \
	-o "$out/fuzz_check" 2>&1 | grep -v warning || true
for b in 1024 4096; do
	[ -e "$out/corpus/seed$b" ] && continue
	mke2fs -q -F -t ext3 -b $b -g $((b * 2)) -N 64 -d "$top/misc" "$out/s.img" 1M >/dev/null 2>&1 || continue
	cp "$out/s.img" "$out/corpus/seed$b"
done
"$out/fuzz_check" -max_total_time="$secs" -max_len=$((1 << 20)) -timeout=10 \
	-artifact_prefix="$out/" "$out/corpus" 2>&1 | tail -5
