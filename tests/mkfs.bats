#!/usr/bin/env bats
# tests/mkfs.bats: e3mkfs — geometry against mke2fs -t ext3 (dumpe2fs -h,
# and byte for byte with UUID, hash seed and time pinned), every option,
# every refusal (message and exit code), reproducibility, the kernel mount.
# Every image made here ends with assert_fsck_clean, except the 2 TiB one
# (e2fsck needs ~2 minutes on it): that one is checked for an empty journal.

load helper

UUID=11111111-2222-3333-4444-555555555555
SEED=66666666-7777-8888-9999-aaaaaaaaaaaa
EPOCH=1700000000

setup() {
	T=$(mktemp -d /tmp/mkfs-bats.XXXXXX)
}

teardown() {
	if [ -n "${MNT:-}" ] && mountpoint -q "$MNT"; then umount "$MNT"; fi
	if [ -n "${LOOP:-}" ]; then losetup -d "$LOOP" 2>/dev/null || true; fi
	rm -rf "$T"
}

# mke2fs_ref IMAGE SIZE ARGS...: the reference image, with the same pinned
# identity e3mk uses.
mke2fs_ref() {
	local img=$1 size=$2; shift 2
	E2FSPROGS_FAKE_TIME=$EPOCH mke2fs -q -F -t ext3 -U "$UUID" \
		-E "hash_seed=$SEED" "$@" "$img" $size >/dev/null || return 1
}

# e3mk IMAGE SIZE ARGS...: e3mkfs with the same pinned identity.
e3mk() {
	local img=$1 size=$2; shift 2
	SOURCE_DATE_EPOCH=$EPOCH e3mkfs -q -F -U "$UUID" -E "hash_seed=$SEED" \
		"$@" "$img" $size || return 1
}

# same_geometry SIZE ARGS...: dumpe2fs -h of both images agree, e3mkfs'
# image is fsck-clean with an empty journal.
same_geometry() {
	local size=$1; shift
	rm -f "$T/m.img" "$T/e.img"
	e3mkfs -q "$@" "$T/e.img" "$size" || return 1
	mke2fs -q -t ext3 "$@" "$T/m.img" "$size" >/dev/null || return 1
	diff <(dumpe2fs_geometry "$T/m.img") <(dumpe2fs_geometry "$T/e.img") || return 1
	assert_fsck_clean "$T/e.img" || return 1
}

# same_bytes SIZE ARGS...: with UUID, hash seed and time pinned, the whole
# image equals mke2fs' (cmp).
same_bytes() {
	local size=$1; shift
	rm -f "$T/m.img" "$T/e.img"
	mke2fs_ref "$T/m.img" "$size" "$@" || return 1
	e3mk "$T/e.img" "$size" "$@" || return 1
	cmp "$T/m.img" "$T/e.img" || return 1
	assert_fsck_clean "$T/e.img" || return 1
}

# refused STATUS TEXT CMD...: the command fails with STATUS, prints one line
# that contains TEXT, and leaves no image behind when there was none.
refused() {
	local want=$1 text=$2; shift 2
	run "$@"
	assert_status "$want" || return 1
	assert_output_has "$text" || return 1
	[ "${#lines[@]}" -eq 1 ] || { echo "want one line, got: $output" >&2; return 1; }
}

hdr() {	# hdr IMAGE FIELD: one dumpe2fs -h value
	dumpe2fs -h "$1" 2>/dev/null | sed -n "s/^$2:[[:space:]]*//p"
}

# ---- geometry against mke2fs -t ext3 ------------------------------------

@test "8 MiB: 1 KiB blocks, geometry equals mke2fs" {
	same_geometry 8M
	[ "$(hdr "$T/e.img" 'Block size')" = 1024 ]
}

@test "64 MiB: geometry equals mke2fs (default and 4 KiB blocks)" {
	same_geometry 64M
	same_geometry 64M -b 4096
}

@test "1 GiB: geometry equals mke2fs" {
	same_geometry 1G
	[ "$(hdr "$T/e.img" 'Block size')" = 4096 ]
}

@test "16 GiB sparse: geometry equals mke2fs" {
	same_geometry 16G
}

# 2 TiB: mke2fs would write (and the host then flush and free) a 1 GiB
# journal, so its numbers come from `mke2fs -n -v`; e3mkfs' image lives in
# /dev/shm where there is one (about 150 MiB of bitmaps, freed at once).
# Byte-identity at 2 TiB was checked by hand (doc/mkfs-differences.md).
@test "2 TiB sparse: geometry equals mke2fs -n" {
	local dir=$T
	[ -w /dev/shm ] && dir=$(mktemp -d /dev/shm/mkfs-bats.XXXXXX)
	truncate -s 2T "$dir/ref.img"
	ref=$(mke2fs -n -v -t ext3 "$dir/ref.img" 2>&1)
	rm -f "$dir/ref.img"
	e3mkfs -q "$dir/e.img" 2T
	hdr "$dir/e.img" 'Filesystem features' > "$T/feat"
	inodes=$(hdr "$dir/e.img" 'Inode count') blocks=$(hdr "$dir/e.img" 'Block count')
	rsv=$(hdr "$dir/e.img" 'Reserved block count') bpg=$(hdr "$dir/e.img" 'Blocks per group')
	ipg=$(hdr "$dir/e.img" 'Inodes per group') gdt=$(hdr "$dir/e.img" 'Reserved GDT blocks')
	jblocks=$(hdr "$dir/e.img" 'Total journal blocks')
	assert_journal_empty "$dir/e.img"
	size=$(du -k "$dir/e.img" | cut -f1)
	[ "$dir" = "$T" ] || rm -rf "$dir"
	groups=$(( (blocks + bpg - 1) / bpg ))
	max=$(( (gdt + (groups + 127) / 128) * 128 * bpg ))
	output=$ref
	assert_output_has "$inodes inodes, $blocks blocks"
	assert_output_has "$rsv blocks (5.00%) reserved for the super user"
	assert_output_has "Maximum filesystem blocks=$max"
	assert_output_has "$groups block groups"
	assert_output_has "$bpg blocks per group"
	assert_output_has "$ipg inodes per group"
	[ "$blocks" = 536870912 ] && [ "$jblocks" = 262144 ]
	[ "$(cat "$T/feat")" = "has_journal ext_attr resize_inode dir_index filetype sparse_super large_file" ]
	# sparse: bitmaps and descriptors (~150 MiB), no journal blocks
	[ "$size" -lt 262144 ]
}

@test "non-default -b -I -i -N -m -g: geometry equals mke2fs" {
	same_geometry 64M -b 2048
	same_geometry 64M -I 128
	same_geometry 64M -i 8192
	same_geometry 64M -N 5000
	same_geometry 64M -m 1
	same_geometry 64M -g 1024
	same_geometry 100M -b 4096 -g 1024 -N 3000 -m 0.5
}

@test "-O switches ext3 features off and on as mke2fs does" {
	same_geometry 64M -O ^has_journal
	same_geometry 64M -O ^resize_inode,^dir_index
	same_geometry 64M -O ^filetype,^large_file,^ext_attr
	same_geometry 64M -O ^resize_inode,^sparse_super
	same_geometry 64M -O ^dir_index,dir_index
	run dumpe2fs -h "$T/e.img"
	assert_output_has "dir_index"
}

@test "-J size=MiB sets the journal as mke2fs does" {
	same_geometry 64M -J size=8
	[ "$(hdr "$T/e.img" 'Total journal blocks')" = 8192 ]
}

@test "byte-identical to mke2fs with UUID, hash seed and time pinned" {
	same_bytes 8M
	same_bytes 64M
	same_bytes 300M -b 4096 -I 128 -i 16384 -m 2 -g 4096 -L pinned -J size=4
	same_bytes 20M -O ^has_journal,^resize_inode
}

@test "-F over an old image that had data: same bytes as mke2fs, old data gone" {
	head -c 8M /dev/urandom > "$T/m.img"
	cp "$T/m.img" "$T/e.img"
	mke2fs_ref "$T/m.img" 8M
	e3mk "$T/e.img" 8M
	cmp "$T/m.img" "$T/e.img"
	assert_fsck_clean "$T/e.img"
}

@test "without SIZE: an existing file's size (rounded to 4 KiB as mke2fs)" {
	truncate -s 10000000 "$T/e.img" "$T/m.img"
	e3mkfs -q "$T/e.img"	# all hole: no -F needed
	mke2fs -q -F -t ext3 "$T/m.img" >/dev/null
	diff <(dumpe2fs_geometry "$T/m.img") <(dumpe2fs_geometry "$T/e.img")
	[ "$(hdr "$T/e.img" 'Block count')" = 9764 ]
	assert_fsck_clean "$T/e.img"
}

@test "SIZE suffixes K M G T" {
	for s in 8192K 8M; do
		rm -f "$T/e.img"
		e3mkfs -q "$T/e.img" $s
		[ "$(stat -c %s "$T/e.img")" = 8388608 ]
		assert_fsck_clean "$T/e.img"
	done
	run e3mkfs -n "$T/x.img" 1G
	assert_output_has "Block count:              262144"
	run e3mkfs -n "$T/x.img" 1T
	assert_output_has "Block count:              268435456"
}

# ---- -n, -q, -V, --help ---------------------------------------------------

@test "-n prints mke2fs' geometry and writes nothing" {
	run e3mkfs -n "$T/n.img" 1G
	assert_status 0
	[ ! -e "$T/n.img" ]
	mke2fs -q -t ext3 "$T/m.img" 1G >/dev/null
	for f in 'Inode count' 'Block count' 'Reserved block count' \
		 'Block size' 'Reserved GDT blocks' 'Blocks per group' \
		 'Inodes per group' 'Inode blocks per group' 'Inode size' \
		 'First block' 'Filesystem features' 'Total journal blocks'; do
		want=$(hdr "$T/m.img" "$f")
		got=$(sed -n "s/^$f:[[:space:]]*//p" <<<"$output")
		[ "$got" = "$want" ] || { echo "$f: $got, mke2fs: $want" >&2; return 1; }
	done
	# an existing image is left alone, and needs no -F for a dry run
	e3mkfs -q "$T/e.img" 8M
	before=$(md5sum < "$T/e.img")
	run e3mkfs -n "$T/e.img"
	assert_status 0
	assert_output_has "Block count:              8192"
	[ "$(md5sum < "$T/e.img")" = "$before" ]
	assert_fsck_clean "$T/e.img"
}

@test "-q prints nothing; without -q the geometry and a last line" {
	run e3mkfs -q "$T/q.img" 8M
	assert_status 0
	[ -z "$output" ]
	run e3mkfs "$T/v.img" 8M
	assert_status 0
	assert_output_has "Block count:              8192"
	assert_output_has "ext3 filesystem written"
	assert_fsck_clean "$T/q.img"
	assert_fsck_clean "$T/v.img"
}

@test "-V prints the version, --help the usage" {
	run e3mkfs -V
	assert_status 0
	assert_output_has "e3mkfs (e3img)"
	assert_output_has "libext2fs 1.47"
	run e3mkfs --help
	assert_status 0
	assert_output_has "Usage: e3mkfs [options] IMAGE [SIZE]"
	assert_output_has "SOURCE_DATE_EPOCH"
}

# ---- identity: -L -U -E -m ----------------------------------------------

@test "-L sets the label" {
	e3mkfs -q -L my-label "$T/e.img" 8M
	[ "$(hdr "$T/e.img" 'Filesystem volume name')" = my-label ]
	assert_fsck_clean "$T/e.img"
}

@test "-U takes a UUID, clear, random and time" {
	e3mkfs -q -U "$UUID" "$T/a.img" 8M
	[ "$(hdr "$T/a.img" 'Filesystem UUID')" = "$UUID" ]
	e3mkfs -q -U clear "$T/b.img" 8M
	[ "$(hdr "$T/b.img" 'Filesystem UUID')" = "<none>" ]
	e3mkfs -q -U random "$T/c.img" 8M
	e3mkfs -q -U random "$T/d.img" 8M
	[ "$(hdr "$T/c.img" 'Filesystem UUID')" != "$(hdr "$T/d.img" 'Filesystem UUID')" ]
	e3mkfs -q -U time "$T/e.img" 8M
	# a time-based UUID is version 1
	[[ "$(hdr "$T/e.img" 'Filesystem UUID')" =~ ^........-....-1 ]]
	for i in a b c d e; do assert_fsck_clean "$T/$i.img"; done
}

@test "-E hash_seed sets the seed; -E root_owner the root's owner" {
	e3mkfs -q -E "hash_seed=$SEED,root_owner=1234:567" "$T/e.img" 8M
	[ "$(hdr "$T/e.img" 'Directory Hash Seed')" = "$SEED" ]
	run debugfs -R 'stat /' "$T/e.img"
	assert_output_has "User:  1234   Group:   567"
	assert_fsck_clean "$T/e.img"
}

@test "-m sets the reserved blocks" {
	e3mkfs -q -m 0 "$T/a.img" 8M
	[ "$(hdr "$T/a.img" 'Reserved block count')" = 0 ]
	e3mkfs -q -m 50 "$T/b.img" 8M
	[ "$(hdr "$T/b.img" 'Reserved block count')" = 4096 ]
	assert_fsck_clean "$T/a.img"
	assert_fsck_clean "$T/b.img"
}

@test "lost+found is as big as mke2fs makes it" {
	e3mkfs -q "$T/a.img" 8M
	e3mkfs -q "$T/b.img" 64M -b 4096
	run debugfs -R 'stat /lost+found' "$T/a.img"
	assert_output_has "Size: 12288"
	run debugfs -R 'stat /lost+found' "$T/b.img"
	assert_output_has "Size: 16384"
	assert_fsck_clean "$T/a.img"
	assert_fsck_clean "$T/b.img"
}

# ---- reproducibility -------------------------------------------------------

@test "SOURCE_DATE_EPOCH: two runs give byte-identical images" {
	SOURCE_DATE_EPOCH=$EPOCH e3mkfs -q -L repro "$T/a.img" 64M
	sleep 1		# a different wall clock must not matter
	SOURCE_DATE_EPOCH=$EPOCH e3mkfs -q -L repro "$T/b.img" 64M
	cmp "$T/a.img" "$T/b.img"
	[ "$(TZ=UTC LC_ALL=C dumpe2fs -h "$T/a.img" 2>/dev/null | sed -n 's/^Filesystem created: *//p')" = "Tue Nov 14 22:13:20 2023" ]
	run debugfs -R 'stat /lost+found' "$T/a.img"
	assert_output_has "ctime: 0x6553f100"
	assert_fsck_clean "$T/a.img"
}

@test "SOURCE_DATE_EPOCH=0: every time is the epoch itself, in every superblock copy; two runs a second apart are identical" {
	# libext2fs reads a clock of 0 as "now": e3mkfs must take it out
	SOURCE_DATE_EPOCH=0 e3mkfs -q -b 1024 -L zero "$T/a.img" 64M
	sleep 1.1
	SOURCE_DATE_EPOCH=0 e3mkfs -q -b 1024 -L zero "$T/b.img" 64M
	cmp "$T/a.img" "$T/b.img"
	for blk in 1 8193 24577 40961 57345; do	# s_wtime, primary and backups
		[ "$(od -An -tu4 -j $((blk * 1024 + 48)) -N4 "$T/a.img" | tr -d ' ')" = 0 ]
	done
	for ino in 2 7 8 11; do
		run debugfs -R "stat <$ino>" "$T/a.img"
		[[ "$output" != *"time: 0x"[1-9a-f]* ]]
	done
	assert_fsck_clean "$T/a.img"
}

@test "SOURCE_DATE_EPOCH: UUID and hash seed follow the epoch and the label" {
	SOURCE_DATE_EPOCH=$EPOCH e3mkfs -q -L one "$T/a.img" 8M
	SOURCE_DATE_EPOCH=$EPOCH e3mkfs -q -L two "$T/b.img" 8M
	SOURCE_DATE_EPOCH=$((EPOCH + 1)) e3mkfs -q -L one "$T/c.img" 8M
	a=$(hdr "$T/a.img" 'Filesystem UUID') b=$(hdr "$T/b.img" 'Filesystem UUID')
	c=$(hdr "$T/c.img" 'Filesystem UUID')
	[ "$a" != "$b" ] && [ "$a" != "$c" ]
	# name-based SHA-1 UUIDs are version 5
	[[ "$a" =~ ^........-....-5 ]]
	[ "$(hdr "$T/a.img" 'Directory Hash Seed')" != "$(hdr "$T/b.img" 'Directory Hash Seed')" ]
	# given values still win
	SOURCE_DATE_EPOCH=$EPOCH e3mkfs -q -U "$UUID" "$T/d.img" 8M
	[ "$(hdr "$T/d.img" 'Filesystem UUID')" = "$UUID" ]
	for i in a b c d; do assert_fsck_clean "$T/$i.img"; done
}

@test "without SOURCE_DATE_EPOCH two images differ (random UUID and seed)" {
	e3mkfs -q "$T/a.img" 8M
	e3mkfs -q "$T/b.img" 8M
	run cmp -s "$T/a.img" "$T/b.img"
	assert_status 1				# differ (2 would be a missing file)
	[ "$(hdr "$T/a.img" 'Filesystem UUID')" != "$(hdr "$T/b.img" 'Filesystem UUID')" ]
	assert_fsck_clean "$T/a.img"
	assert_fsck_clean "$T/b.img"
}

# ---- refusals: one line "e3mkfs: IMAGE: reason", non-zero exit ----------

@test "refuses ext4-only features, naming them" {
	for f in extents extent flex_bg 64bit metadata_csum huge_file dir_nlink \
		 extra_isize uninit_bg meta_bg bigalloc inline_data; do
		refused 16 "e3mkfs: $T/x.img: feature '$f' is ext4-only" \
			e3mkfs -O "dir_index,$f" "$T/x.img" 8M
	done
	[ ! -e "$T/x.img" ]
	refused 16 "e3mkfs: $T/x.img: -O frobnicate: unknown feature" \
		e3mkfs -O frobnicate "$T/x.img" 8M
	# switching an ext4 feature off is what ext3 is anyway
	e3mkfs -q -O ^extents,^64bit "$T/x.img" 8M
	assert_fsck_clean "$T/x.img"
}

@test "refuses a size too small, saying the minimum" {
	refused 16 "e3mkfs: $T/x.img: image too small (1M): the minimum is 2M" \
		e3mkfs "$T/x.img" 1M
	refused 16 "image too small (4M): the minimum is 8M" \
		e3mkfs -b 4096 "$T/x.img" 4M
	[ ! -e "$T/x.img" ]
	e3mkfs -q "$T/x.img" 2M
	assert_fsck_clean "$T/x.img"
}

@test "refuses a size too large for ext3" {
	refused 16 "e3mkfs: $T/x.img: image too large for ext3" e3mkfs "$T/x.img" 17T
	refused 16 "image too large for ext3" e3mkfs -b 1024 "$T/x.img" 5T
}

@test "refuses bad block and inode sizes" {
	refused 16 "e3mkfs: $T/x.img: -b 3000: block size must be 1024, 2048 or 4096" \
		e3mkfs -b 3000 "$T/x.img" 8M
	refused 16 "-b 8192: block size must be" e3mkfs -b 8192 "$T/x.img" 8M
	refused 16 "e3mkfs: $T/x.img: -I 512: inode size must be 128 or 256" \
		e3mkfs -I 512 "$T/x.img" 8M
	refused 16 "-I 200: inode size must be 128 or 256" e3mkfs -I 200 "$T/x.img" 8M
	[ ! -e "$T/x.img" ]
}

@test "refuses inode counts that do not fit" {
	refused 16 "e3mkfs: $T/x.img: inode count does not fit" \
		e3mkfs -N 100000 "$T/x.img" 8M
	refused 16 "-N 9999999999: inode count must be" e3mkfs -N 9999999999 "$T/x.img" 8M
	# mke2fs -N 32000 refuses this too ("Cannot create filesystem with
	# requested number of inodes")
	refused 16 "inode count does not fit: more inodes per group than a bitmap block" \
		e3mkfs -N 32000 "$T/x.img" 8M
	refused 16 "-i 512: bytes per inode must be 1024..65536K" e3mkfs -i 512 "$T/x.img" 8M
	[ ! -e "$T/x.img" ]
}

@test "refuses bad -g -m -L -U -J -E and SIZE values" {
	refused 16 "-g 1004: blocks per group must be a multiple of 8" e3mkfs -g 1004 "$T/x.img" 8M
	refused 16 "-g 100: blocks per group" e3mkfs -g 100 "$T/x.img" 8M
	refused 16 "blocks per group (-g) must be at most 8*block size" \
		e3mkfs -g 16384 "$T/x.img" 8M
	refused 16 "-m 60: reserved percent must be 0..50" e3mkfs -m 60 "$T/x.img" 8M
	refused 16 "label longer than 16 bytes" e3mkfs -L 12345678901234567 "$T/x.img" 8M
	refused 16 "-U bogus: want random, time, clear or a UUID" e3mkfs -U bogus "$T/x.img" 8M
	refused 16 "-J foo: only size=MiB is supported" e3mkfs -J foo "$T/x.img" 8M
	refused 16 "journal size must be 1024..10240000 blocks" e3mkfs -J size=1000 "$T/x.img" 8M
	refused 16 "a journal size was given without has_journal" \
		e3mkfs -J size=4 -O ^has_journal "$T/x.img" 8M
	refused 16 "-E hash_seed=nope: not a UUID" e3mkfs -E hash_seed=nope "$T/x.img" 8M
	refused 16 "-E root_owner=7: want UID:GID" e3mkfs -E root_owner=7 "$T/x.img" 8M
	refused 16 "-E frob: unknown extended option" e3mkfs -E frob=1 "$T/x.img" 8M
	refused 16 "resize_inode needs sparse_super" e3mkfs -O ^sparse_super "$T/x.img" 8M
	refused 16 "bad size '8X'" e3mkfs "$T/x.img" 8X
	SOURCE_DATE_EPOCH=yesterday refused 8 "SOURCE_DATE_EPOCH must be a number" \
		e3mkfs "$T/x.img" 8M
	[ ! -e "$T/x.img" ]
}

@test "usage errors exit 16" {
	refused 16 "e3mkfs: no IMAGE given" e3mkfs
	refused 16 "unknown option '--frob'" e3mkfs --frob "$T/x.img" 8M
	refused 16 "option -Z is unknown" e3mkfs -Z "$T/x.img" 8M
	refused 16 "option -b needs a value" e3mkfs "$T/x.img" -b
	refused 16 "unexpected argument 'extra'" e3mkfs "$T/x.img" 8M extra
}

@test "refuses a directory" {
	mkdir "$T/dir"
	refused 8 "e3mkfs: $T/dir: is a directory" e3mkfs "$T/dir" 8M
	refused 8 "e3mkfs: $T/dir: is a directory" e3mkfs -F "$T/dir" 8M
}

@test "refuses a non-empty file without -F, and a missing size" {
	echo "precious" > "$T/x.img"
	refused 8 "e3mkfs: $T/x.img: file is not empty (use -F to overwrite it)" \
		e3mkfs "$T/x.img" 8M
	[ "$(cat "$T/x.img")" = precious ]
	refused 16 "e3mkfs: $T/new.img: no SIZE given and IMAGE has no size" \
		e3mkfs "$T/new.img"
	: > "$T/empty.img"
	refused 16 "no SIZE given and IMAGE has no size" e3mkfs "$T/empty.img"
	# an empty file needs no -F
	e3mkfs -q "$T/empty.img" 8M
	assert_fsck_clean "$T/empty.img"
}

@test "refuses an image another e3img process is writing (flock)" {
	e3mkfs -q "$T/x.img" 8M
	run flock "$T/x.img" e3mkfs -F "$T/x.img" 8M
	assert_status 8
	assert_output_has "e3mkfs: $T/x.img: image is in use by another e3img process"
	assert_fsck_clean "$T/x.img"
}

@test "refuses a read-only target" {
	mkdir "$T/ro"
	if [ "$(id -u)" -eq 0 ]; then
		mount -t tmpfs -o size=16m tmpfs "$T/ro"
		MNT=$T/ro
		: > "$T/ro/old.img"
		mount -o remount,ro "$T/ro"
	else
		: > "$T/ro/old.img"
		chmod 444 "$T/ro/old.img"
		chmod 555 "$T/ro"
	fi
	refused 8 "e3mkfs: $T/ro/new.img: image is read-only" e3mkfs "$T/ro/new.img" 8M
	refused 8 "e3mkfs: $T/ro/old.img: image is read-only" e3mkfs "$T/ro/old.img" 8M
	[ "$(id -u)" -eq 0 ] || chmod 755 "$T/ro"
}

@test "refuses a mounted image and its loop device (root)" {
	require_root
	e3mkfs -q "$T/m.img" 16M
	mkdir "$T/mnt"
	mount -o loop -t ext3 "$T/m.img" "$T/mnt"
	MNT=$T/mnt
	dev=$(findmnt -n -o SOURCE "$T/mnt")
	refused 8 "e3mkfs: $T/m.img: device is mounted" e3mkfs -F "$T/m.img" 16M
	refused 8 "e3mkfs: $dev: device is mounted" e3mkfs -F "$dev"
	umount "$T/mnt"
	assert_fsck_clean "$T/m.img"
}

# ---- block devices and the kernel (root) ---------------------------------

@test "a loop device: its size without SIZE, -F when it holds data (root)" {
	require_root
	truncate -s 32M "$T/dev.img"
	LOOP=$(losetup -f --show "$T/dev.img")
	head -c 4096 /dev/urandom | dd of="$LOOP" conv=notrunc status=none
	refused 8 "e3mkfs: $LOOP: file is not empty" e3mkfs "$LOOP"
	e3mkfs -q -F "$LOOP"
	losetup -d "$LOOP"; LOOP=
	[ "$(hdr "$T/dev.img" 'Block count')" = 32768 ]
	mke2fs -q -F -t ext3 "$T/m.img" 32M >/dev/null
	diff <(dumpe2fs_geometry "$T/m.img") <(dumpe2fs_geometry "$T/dev.img")
	assert_fsck_clean "$T/dev.img"
}

@test "the kernel mounts it as ext3 read-write; a file reads back (root)" {
	require_root
	e3mkfs -q -L kernel "$T/k.img" 64M
	mkdir "$T/mnt"
	mount -o loop -t ext3 "$T/k.img" "$T/mnt"
	MNT=$T/mnt
	findmnt -n -o FSTYPE,OPTIONS "$T/mnt" | grep -q '^ext3 *rw'
	[ -d "$T/mnt/lost+found" ]
	head -c 3000000 /dev/urandom > "$T/data"
	cp "$T/data" "$T/mnt/data"
	mkdir "$T/mnt/dir"
	echo hello > "$T/mnt/dir/hello"
	umount "$T/mnt"
	mount -o loop,ro -t ext3 "$T/k.img" "$T/mnt"
	cmp "$T/data" "$T/mnt/data"
	[ "$(cat "$T/mnt/dir/hello")" = hello ]
	umount "$T/mnt"
	assert_fsck_clean "$T/k.img"
}

@test "-d with --alloc and --jobs: every mode fills a clean image; bad values are refused" {
	for mode in rbtree list none; do
		run e3mkfs -q -d "$E3_TOP/sample" --alloc=$mode --jobs 3 "$T/$mode.img" auto
		assert_status 0
		assert_fsck_clean "$T/$mode.img"
		cmp <(debugfs -R "cat /docs/numbers.txt" "$T/$mode.img" 2>/dev/null) \
			"$E3_TOP/sample/docs/numbers.txt"
	done
	run e3mkfs -q -d "$E3_TOP/sample" --alloc=foo "$T/bad.img" auto
	assert_status 16
	assert_output_has "e3mkfs: $T/bad.img: --alloc=foo: rbtree, list or none"
	run e3mkfs -q -d "$E3_TOP/sample" --jobs 0 "$T/bad.img" auto
	assert_status 16
	assert_output_has "--jobs 0: a number of threads"
}

# ---- -d layers and e3cp's copy options (issue 20, items 5, 6 and 10) -----

@test "-d base -d overlay: the overlay's files replace the base's, directories merge; e2fsck clean" {
	mkdir -p "$T/base/etc" "$T/base/bin" "$T/ov/etc"
	echo base > "$T/base/etc/motd"; echo keep > "$T/base/etc/keep"
	echo sh > "$T/base/bin/sh"
	echo overlay > "$T/ov/etc/motd"; echo new > "$T/ov/etc/new"
	run e3mkfs -q -d "$T/base" -d "$T/ov" "$T/l.img" auto
	assert_status 0
	assert_fsck_clean "$T/l.img"
	assert_img_cat "$T/l.img" /etc/motd overlay
	assert_img_cat "$T/l.img" /etc/keep keep
	assert_img_cat "$T/l.img" /etc/new new
	assert_img_cat "$T/l.img" /bin/sh sh
	# the replaced file's inode and blocks went back: one motd, one inode
	[ "$(debugfs -R "ls /etc" "$T/l.img" 2>/dev/null | grep -o motd | wc -l)" -eq 1 ]
	# the same with the layers the other way round
	run e3mkfs -q -d "$T/ov" -d "$T/base" "$T/r.img" auto
	assert_status 0
	assert_img_cat "$T/r.img" /etc/motd base
	assert_fsck_clean "$T/r.img"
}

@test "-d with --owner, --uid-map, -D and -v as in e3cp; e3cp -D TABLE IMAGE alone makes the table's entries" {
	mkdir -p "$T/src/d"
	echo a > "$T/src/d/a"
	printf '/dev d 755 0 0 - - - - -\n/dev/null c 666 0 0 1 3 0 0 -\n' > "$T/dt"
	run e3mkfs --owner 1000:100 -v -D "$T/dt" -d "$T/src" "$T/o.img" 8M
	assert_status 0
	assert_output_has "d/a"
	assert_fsck_clean "$T/o.img"
	run debugfs -R "stat /d/a" "$T/o.img"
	assert_output_has "User:  1000   Group:   100"
	run debugfs -R "stat /dev/null" "$T/o.img"
	assert_output_has "character special"
	assert_output_has "Device major/minor number: 01:03"
	# a map instead of a fixed owner
	run e3mkfs -q --uid-map "$(id -u):4242" -d "$T/src" "$T/m.img" 8M
	assert_status 0
	run debugfs -R "stat /d/a" "$T/m.img"
	assert_output_has "User:  4242"
	run e3mkfs -q --owner nope -d "$T/src" "$T/x.img" 8M
	assert_status 16
	assert_output_has "bad --owner 'nope' (UID:GID)"
	[ ! -e "$T/x.img" ]
	# e3cp: a device table alone, as genext2fs takes it
	e3mkfs -q "$T/c.img" 8M
	run e3cp -D "$T/dt" "$T/c.img"
	assert_status 0
	run debugfs -R "stat /dev/null" "$T/c.img"
	assert_output_has "character special"
	assert_fsck_clean "$T/c.img"
	run e3cp "$T/c.img"
	assert_status 16
	assert_output_has "need at least one SRC and an IMAGE"
}

@test "SIZE auto leaves room for everyone, not only root, and free inodes; the last line says what is free" {
	mkdir -p "$T/t"
	# 12 MB: above the 8 MiB floor, so that the fit is the tree's
	for i in $(seq 1 30); do head -c 400000 /dev/urandom > "$T/t/f$i"; done
	run e3mkfs -d "$T/t" "$T/a.img" auto
	assert_status 0
	assert_output_has "inodes of input + 10%"
	local free resv ifree
	free=$(hdr "$T/a.img" 'Free blocks')
	resv=$(hdr "$T/a.img" 'Reserved block count')
	ifree=$(hdr "$T/a.img" 'Free inodes')
	# 30 files of 98 blocks: 10% is 294 blocks beyond root's reserve
	[ "$free" -ge $((resv + 294)) ] || { echo "free $free, reserve $resv" >&2; return 1; }
	[ "$ifree" -ge 64 ] || { echo "free inodes $ifree" >&2; return 1; }
	assert_output_has "free: $free blocks ($((free - resv)) for non-root users) and $ifree inodes"
	assert_fsck_clean "$T/a.img"
	# auto+0% is the exact fit: root's reserve is all that is left
	run e3mkfs -q -d "$T/t" "$T/e.img" auto+0%
	assert_status 0
	[ "$(hdr "$T/e.img" 'Free blocks')" -le $(($(hdr "$T/e.img" 'Reserved block count') + 64)) ]
}

@test "-d exit codes: 1 when an entry is skipped (named), 8 for a missing source, 16 for a bad option" {
	mkdir -p "$T/h"
	echo x > "$T/h/a"; ln "$T/h/a" "$T/h/b"
	tar cf "$T/h.tar" -C "$T/h" a b
	tar --delete -f "$T/h.tar" a	# b is now a hard link to nothing
	run e3mkfs -q -d "$T/h.tar" "$T/p.img" 8M
	assert_status 1
	assert_output_has "b: skipped: hard link target is not in the image"
	assert_fsck_clean "$T/p.img"
	run e3mkfs -q -d "$T/nope" "$T/n.img" 8M
	assert_status 8
	[ ! -e "$T/n.img" ]
	run e3mkfs -q --jobs x -d "$T/h" "$T/n.img" 8M
	assert_status 16
	assert_output_has "--jobs x: a number of threads"
}

@test "--help: -d is described under its own heading, -j is the journal, threads are --jobs" {
	run e3mkfs --help
	assert_status 0
	assert_output_has "  -j             add a journal"
	assert_output_has "  --jobs N             worker threads"
	assert_output_has "Filling the image (through e3cp's engine):
  -d SRC "
	refute_output_has "-j N "
	# -j as mke2fs means it: ext2 with a journal is ext3
	e3mkfs -q -t ext2 -j "$T/j.img" 8M
	hdr "$T/j.img" 'Filesystem features' | grep -q has_journal
	e3mkfs -q -t ext2 "$T/k.img" 8M
	if hdr "$T/k.img" 'Filesystem features' | grep -q has_journal; then
		echo "-t ext2 has a journal" >&2; return 1
	fi
	assert_fsck_clean "$T/j.img"
	assert_fsck_clean "$T/k.img"
}

@test "-d shows progress on request (--progress), like e3cp, and never with -q" {
	mkdir -p "$T/p"
	for i in $(seq 1 20); do head -c 50000 /dev/urandom > "$T/p/f$i"; done
	run e3mkfs --progress -d "$T/p" "$T/g.img" auto
	assert_status 0
	assert_output_has " of 20 files, "
	assert_output_has " MiB/s"
	run e3mkfs -q --progress -d "$T/p" "$T/h.img" auto
	assert_status 0
	[ -z "$output" ]
}
