#!/usr/bin/env bats
# SOURCE_DATE_EPOCH: one parser for every tool (lib/fixed_clock.c). The
# range is what ext3's unsigned 32-bit superblock times hold, 0..4294967295;
# a 128-byte inode's signed 32-bit times stop at 2147483647, so a writer
# refuses a later epoch on such an image. Unset or empty means not set.
load helper

setup() {
	T=$BATS_TEST_TMPDIR
	mkdir -p "$T/src"
	echo hello > "$T/src/a"
}

RANGE="SOURCE_DATE_EPOCH must be a number of seconds from 0 to 4294967295"

# le32 IMAGE OFFSET: the unsigned 32-bit value at a byte offset.
le32() {
	od -An -tu4 -j "$2" -N4 "$1" | tr -d ' '
}

# refused_epoch VALUE CODE TOOL ARGS...: one line naming the variable, its
# value and the range; the tool's exit code.
refused_epoch() {
	local v=$1 code=$2
	shift 2
	SOURCE_DATE_EPOCH=$v run "$@"
	assert_status "$code" || return 1
	[ "${#lines[@]}" -eq 1 ] || { echo "want one line: $output" >&2; return 1; }
	[ "$output" = "$(basename "$1"): $RANGE, not '$v'" ] ||
		{ echo "got: $output" >&2; return 1; }
}

@test "e3mkfs: 4294967295 is every superblock time; 4294967296, -1 and garbage are refused, nothing written" {
	SOURCE_DATE_EPOCH=4294967295 run e3mkfs -q "$T/a.img" 8M
	assert_status 0
	[ "$(le32 "$T/a.img" $((1024 + 0x108)))" = 4294967295 ]	# s_mkfs_time
	[ "$(le32 "$T/a.img" $((1024 + 0x30)))" = 4294967295 ]	# s_wtime
	assert_fsck_clean "$T/a.img"
	for v in 4294967296 5000000000 -1 -0 abc 12x " 12" 0x10; do
		refused_epoch "$v" 8 e3mkfs -q "$T/b.img" 8M
		[ ! -e "$T/b.img" ]
	done
}

@test "e3mkfs: an epoch past 2038 with 128-byte inodes is refused" {
	SOURCE_DATE_EPOCH=2147483648 run e3mkfs -q -I 128 "$T/a.img" 8M
	assert_status 16
	assert_output_has "128-byte inodes cannot hold"
	[ ! -e "$T/a.img" ]
	SOURCE_DATE_EPOCH=2147483647 run e3mkfs -q -I 128 "$T/a.img" 8M
	assert_status 0
}

@test "e3cp: 4000000000 is the superblock's write time and clamps file times; out-of-range, negative and garbage are refused before the image is touched" {
	e3mkfs -q "$T/a.img" 16M
	touch -d @4100000000 "$T/src/a"	# later than the epoch: clamped to it
	SOURCE_DATE_EPOCH=4000000000 run e3cp "$T/src" "$T/a.img"
	assert_status 0
	[ "$(le32 "$T/a.img" $((1024 + 0x30)))" = 4000000000 ]	# s_wtime
	run debugfs -R "stat /a" "$T/a.img"
	[[ "$output" == *"mtime: 0xee6b2800:00000001 -- "*"2096"* ]] ||
		{ echo "$output" >&2; return 1; }
	assert_fsck_clean "$T/a.img"
	cp "$T/a.img" "$T/before.img"
	for v in 4294967296 5000000000 -5 abc; do
		refused_epoch "$v" 16 e3cp "$T/src" "$T/a.img:/d"
		cmp "$T/a.img" "$T/before.img"
	done
}

@test "e3cp: an epoch past 2038 into an image of 128-byte inodes is refused" {
	e3mkfs -q -I 128 "$T/a.img" 16M
	cp "$T/a.img" "$T/before.img"
	SOURCE_DATE_EPOCH=3000000000 run e3cp "$T/src" "$T/a.img"
	assert_status 8
	assert_output_has "128-byte inodes cannot hold"
	cmp "$T/a.img" "$T/before.img"
}

@test "e3fsck: a valid epoch checks; out-of-range, negative and garbage are usage errors (16)" {
	e3mkfs -q "$T/a.img" 8M
	SOURCE_DATE_EPOCH=4294967295 run e3fsck "$T/a.img"
	assert_status 0
	for v in 4294967296 5000000000 -1 abc; do
		refused_epoch "$v" 16 e3fsck "$T/a.img"
	done
}

@test "e3fsck -y: a repair's superblock write time is SOURCE_DATE_EPOCH" {
	e3mkfs -q "$T/a.img" 8M
	# damage only a summary: the superblock's free inode count
	printf '\x07\x00\x00\x00' | dd of="$T/a.img" bs=1 seek=$((1024 + 0x10)) conv=notrunc 2>/dev/null
	SOURCE_DATE_EPOCH=3000000000 run e3fsck -y "$T/a.img"
	assert_status 1
	[ "$(le32 "$T/a.img" $((1024 + 0x30)))" = 3000000000 ]	# s_wtime
	assert_fsck_clean "$T/a.img"
}
