#!/usr/bin/env bats
# tests/fsck_repair.bats: e3fsck's repairs measured against e2fsck's. Each
# test builds one kind of damage, runs e3fsck -y on it and e2fsck -fy on a
# copy; after e3fsck, e2fsck -fn must be clean, and e3fsck may not delete
# more inodes than e2fsck did (nor, for directory damage, leave names
# elsewhere than e2fsck leaves them). Also: writers that walk an htree
# index do not trust a key its node contradicts.
load helper

setup_file() {
	export R=/tmp/fsck-repair-bats.$$
	mkdir -p "$R/tree/dd" "$R/tree/sub"
	local n
	for n in a b c; do echo "$n" > "$R/tree/$n"; done
	echo x > "$R/tree/dd/x"
	: > "$R/tree/a-b"
	mke2fs -q -F -t ext3 -b 1024 -d "$R/tree" "$R/base.img" 4M
}

teardown_file() {
	rm -rf "$R"
}

# used_inodes IMAGE: inodes in use, as e2fsck -fn counts them
used_inodes() {
	e2fsck -fn "$1" 2>/dev/null | tail -1 | sed -n 's|^[^:]*: \([0-9]*\)/.*|\1|p'
}

# root_names IMAGE: the names in /, one line
root_names() {
	debugfs -R 'ls /' "$1" 2>/dev/null | tr -s ' \n' '\n\n' |
		grep -v '^([0-9]*)$' | grep -v '^[0-9]*$' | grep . | tr '\n' ' '
}

# put_root IMAGE OFFSET BYTES: printf-style bytes at OFFSET of the root
# directory's first block
put_root() {
	local blk
	blk=$(debugfs -R 'bmap / 0' "$1" 2>/dev/null) || return 1
	[ -n "$blk" ] || return 1
	printf "$3" | dd of="$1" bs=1 seek=$((blk * 1024 + $2)) conv=notrunc status=none
}

# entry_offset IMAGE NAME: offset of NAME's entry in the root's first block
entry_offset() {
	local blk
	blk=$(debugfs -R 'bmap / 0' "$1" 2>/dev/null) || return 1
	python3 - "$1" "$blk" "$2" <<'EOF'
import struct, sys
img, blk, name = sys.argv[1], int(sys.argv[2]), sys.argv[3].encode()
with open(img, "rb") as f:
    f.seek(blk * 1024)
    b = f.read(1024)
off = 0
while off + 8 <= 1024:
    ino, rec, nlen, ft = struct.unpack_from("<IHBB", b, off)
    if b[off + 8:off + 8 + nlen] == name:
        print(off)
        break
    if rec < 8:
        break
    off += rec
EOF
}

# repaired_like_e2fsck IMAGE: e3fsck -y repairs IMAGE (exit 1),
# e2fsck -fn is clean afterwards, and e2fsck -fy on a copy deleted at
# least as many inodes (left no more in use).
# Called from `||`: every check says `|| return 1`.
repaired_like_e2fsck() {
	local img=$1 e2=$1.e2 before e3used e2used
	cp "$img" "$e2" || return 1
	before=$(used_inodes "$img")
	run e3fsck -y "$img"
	printf '%s\n' "$output" >&2
	assert_status 1 || return 1
	assert_fsck_clean "$img" || return 1
	run e2fsck -fy "$e2"
	[ "$status" -le 1 ] || { echo "e2fsck -fy exited $status" >&2; return 1; }
	e3used=$(used_inodes "$img")
	e2used=$(used_inodes "$e2")
	echo "inodes in use: before $before, after e3fsck -y $e3used, after e2fsck -fy $e2used" >&2
	[ -n "$e3used" ] && [ -n "$e2used" ] || return 1
	# the same image before: fewer in use after e3fsck is more deleted
	[ "$e3used" -ge "$e2used" ] || return 1
}

@test "a '.' entry naming inode 0 is mended in one pass, as e2fsck -fy does" {
	local img=$R/dot.img blk
	cp "$R/base.img" "$img"
	blk=$(debugfs -R 'bmap /dd 0' "$img" 2>/dev/null)
	printf '\0\0\0\0' | dd of="$img" bs=1 seek=$((blk * 1024)) conv=notrunc status=none
	run e3fsck -n "$img"
	assert_status 4
	repaired_like_e2fsck "$img"
	# one round of fixes, then the round that finds nothing: no finding
	# printed twice
	run e3fsck -y "$R/dot.img.e2"
	assert_status 0
	cp "$R/base.img" "$img"
	printf '\0\0\0\0' | dd of="$img" bs=1 seek=$((blk * 1024)) conv=notrunc status=none
	run e3fsck -y "$img"
	assert_status 1
	[ "$(grep -c "no '.' entry first" <<<"$output")" -eq 1 ]
	refute_output_has "ref count"
	[ "$(root_names "$img")" = "$(root_names "$R/dot.img.e2")" ]
}

@test "a bad name_len in the root's first block loses one entry, not the rest of the block" {
	local img=$R/nlen.img off
	cp "$R/base.img" "$img"
	off=$(entry_offset "$img" lost+found)
	[ -n "$off" ]
	# lost+found's name_len: 200, far past its 20-byte record
	put_root "$img" $((off + 6)) '\310'
	run e3fsck -n "$img"
	assert_status 4
	assert_output_has "bad name_len"
	repaired_like_e2fsck "$img"
	# /a /b /c stay in place with their names, as e2fsck leaves them
	[ "$(root_names "$img")" = "$(root_names "$img.e2")" ]
	assert_img_cat "$img" /a a
	assert_img_cat "$img" /b b
	assert_img_cat "$img" /c c
}

@test "a bad rec_len in the root's first block: the entries e2fsck keeps are kept" {
	local img=$R/rlen.img off
	cp "$R/base.img" "$img"
	off=$(entry_offset "$img" a)
	[ -n "$off" ]
	# /a's record: 14, off the 4-byte grid
	put_root "$img" $((off + 4)) '\016\000'
	repaired_like_e2fsck "$img"
	[ "$(root_names "$img")" = "$(root_names "$img.e2")" ]
}

@test "a '/' or NUL inside a stored name becomes '.', the file stays in place" {
	local img ch off
	for ch in '/' '\0'; do
		img=$R/name-$([ "$ch" = / ] && echo slash || echo nul).img
		cp "$R/base.img" "$img"
		off=$(entry_offset "$img" a-b)
		[ -n "$off" ]
		put_root "$img" $((off + 9)) "$ch"
		run e3fsck -n "$img"
		assert_status 4
		assert_output_has "'/' or NUL in its name"
		repaired_like_e2fsck "$img"
		[ "$(root_names "$img")" = "$(root_names "$img.e2")" ]
		run debugfs -R 'stat /a.b' "$img"
		assert_output_has "Type: regular"
	done
}

@test "an htree leaf entry whose rec_len is not a multiple of 4: found, repaired, no misaligned read" {
	local img=$R/htleaf.img blk
	bash "$E3_TOP/tests/corrupt.sh" --base "$img" >/dev/null
	blk=$(debugfs -R 'bmap /d 1' "$img" 2>/dev/null)
	[ -n "$blk" ]
	# the first entry of leaf 1: rec_len + 2
	python3 - "$img" "$blk" <<'EOF'
import struct, sys
img, blk = sys.argv[1], int(sys.argv[2])
with open(img, "r+b") as f:
    f.seek(blk * 1024 + 4)
    rec, = struct.unpack("<H", f.read(2))
    f.seek(blk * 1024 + 4)
    f.write(struct.pack("<H", rec + 2))
EOF
	UBSAN_OPTIONS=halt_on_error=1 run e3fsck -n "$img"
	assert_status 4
	refute_output_has "runtime error"
	repaired_like_e2fsck "$img"
}

# ---- an htree key its node contradicts --------------------------------------

# make_bad_htree IMAGE: /big with 9,000 long names in two index levels
# (1 KiB blocks), the root's second key raised to just below its third;
# prints a name filed under the raised key's node whose hash is below it
make_bad_htree() {
	local img=$1 src=$R/htsrc blk
	if [ ! -e "$R/ht-clean.img" ]; then
		mkdir -p "$src/big"
		(cd "$src/big" && python3 -c '
for i in range(9000):
    open("name-%05d-%s" % (i, "x" * 100), "w").close()') || return 1
		mke2fs -q -F -t ext3 -b 1024 -N 12000 "$R/ht-clean.img" 40M >&2 || return 1
		e3cp --quiet "$src" "$R/ht-clean.img" || return 1
	fi
	cp --sparse=always "$R/ht-clean.img" "$img" || return 1
	debugfs -R 'htree_dump /big' "$img" 2>/dev/null | grep -q 'Indirect levels: 1' || return 1
	blk=$(debugfs -R 'bmap /big 0' "$img" 2>/dev/null)
	[ -n "$blk" ] || return 1
	debugfs -R 'htree_dump /big' "$img" 2>/dev/null | python3 -c '
import re, sys
keys = []
for l in sys.stdin:
    m = re.match(r"Entry #\d+: Hash 0x([0-9a-f]+), block", l)
    if m and len(keys) < 3:
        keys.append(int(m.group(1), 16))
        continue
    m = re.match(r"\d+ 0x([0-9a-f]+)-[0-9a-f]+ \(\d+\) (\S+)", l)
    if m and keys[1] <= int(m.group(1), 16) < keys[2] - 2:
        print(m.group(2))
        break' > "$R/victim" || return 1
	[ -s "$R/victim" ] || return 1
	python3 - "$img" "$blk" <<'EOF' || return 1
import struct, sys
img, blk = sys.argv[1], int(sys.argv[2])
with open(img, "r+b") as f:
    f.seek(blk * 1024 + 0x28 + 8)
    k2, = struct.unpack("<I", f.read(4))
    f.seek(blk * 1024 + 0x28)
    f.write(struct.pack("<I", (k2 - 2) & ~1))
EOF
	cat "$R/victim"
}

@test "a root htree key raised past its node's hashes: e3fsck -n reports it (e2fsck: bad min hash), -y repairs it" {
	local img=$R/badkey.img
	make_bad_htree "$img" >/dev/null
	run e2fsck -fn "$img"
	assert_output_has "bad min hash"
	run e3fsck -n "$img"
	assert_status 4
	assert_output_has "outside the range its index gives"
	repaired_like_e2fsck "$img"
}

@test "a root htree key raised past its node's hashes: e3cp adding an existing name finds it" {
	local img=$R/badkey-cp.img name
	name=$(make_bad_htree "$img")
	[ -n "$name" ]
	mkdir -p "$R/dup/big"
	echo second > "$R/dup/big/$name"
	run e3cp --quiet "$R/dup" "$img"
	assert_output_has "name exists"
	[ "$status" -ne 0 ]
	# one entry with that name, still the empty file
	[ "$(debugfs -R 'ls /big' "$img" 2>/dev/null | tr -s ' ' '\n' | grep -c "^$name\$")" -eq 1 ]
	[ -z "$(debugfs -R "cat /big/$name" "$img" 2>/dev/null)" ]
	# with --overwrite the one entry is replaced, not doubled
	run e3cp --quiet --overwrite "$R/dup" "$img"
	assert_status 0
	[ "$(debugfs -R 'ls /big' "$img" 2>/dev/null | tr -s ' ' '\n' | grep -c "^$name\$")" -eq 1 ]
	[ "$(debugfs -R "cat /big/$name" "$img" 2>/dev/null)" = second ]
}

# ---- repair parity: what e3fsck -y used to leave for e2fsck -fn -------------

# on_cbase NAME DEBUGFS_COMMAND...: a copy of tests/corrupt.sh's base image
# damaged by the commands, in $R/NAME.img
on_cbase() {
	local name=$1 c
	shift
	if [ ! -e "$R/cbase.img" ]; then
		bash "$E3_TOP/tests/corrupt.sh" --base "$R/cbase.img" >/dev/null || return 1
	fi
	cp "$R/cbase.img" "$R/$name.img" || return 1
	for c in "$@"; do
		debugfs -w -R "$c" "$R/$name.img" >/dev/null 2>&1 || return 1
	done
}

# garbage_dir_block NAME PATH: random bytes over PATH's first block
garbage_dir_block() {
	local blk
	on_cbase "$1" || return 1
	blk=$(debugfs -R "bmap $2 0" "$R/$1.img" 2>/dev/null)
	[ -n "$blk" ] || return 1
	head -c 1024 /dev/urandom |
		dd of="$R/$1.img" bs=1024 seek="$blk" conv=notrunc status=none
}

@test "repair parity: immutable and append-only flags on a symlink and a fifo are cleared" {
	on_cbase flags 'sif /sym flags 0x10' 'sif /fifo flags 0x20'
	run e3fsck -n "$R/flags.img"
	assert_status 4
	assert_output_has "immutable or append-only"
	repaired_like_e2fsck "$R/flags.img"
}

@test "repair parity: a short file whose mode says symlink is an invalid fast symlink, as e2fsck 1.47 judges it" {
	# 3 bytes ("42\n"); its block number's bytes, read as text, end sooner
	on_cbase symmode 'sif /d/h42 mode 0120644'
	run e3fsck -n "$R/symmode.img"
	assert_status 4
	assert_output_has "symlink"
	run e2fsck -fn "$R/symmode.img"
	assert_output_has "is invalid"
	repaired_like_e2fsck "$R/symmode.img"
}

@test "repair parity: a fifo's size and i_blocks both cleared" {
	on_cbase fifo 'sif /fifo size 100' 'sif /fifo blocks 2'
	repaired_like_e2fsck "$R/fifo.img"
}

@test "repair parity: a dtime on the root is cleared" {
	on_cbase rootdtime 'sif <2> dtime 12345'
	run e3fsck -n "$R/rootdtime.img"
	assert_status 4
	repaired_like_e2fsck "$R/rootdtime.img"
}

@test "repair parity: the htree flag on an unindexed directory is cleared" {
	on_cbase idx 'sif /c flags 0x1000'
	repaired_like_e2fsck "$R/idx.img"
}

@test "repair parity: a directory block of random bytes (in /c, in the root, in lost+found)" {
	local d n
	for d in /c / /lost+found; do
		n=garbage$(tr / _ <<<"$d")
		garbage_dir_block "$n" "$d"
		repaired_like_e2fsck "$R/$n.img"
	done
}

@test "repair parity: '.' and '..' zeroed, or '..' not NUL-terminated, rebuilt" {
	local blk
	on_cbase dots
	blk=$(debugfs -R 'bmap /c 0' "$R/dots.img" 2>/dev/null)
	dd if=/dev/zero of="$R/dots.img" bs=1 seek=$((blk * 1024)) count=24 conv=notrunc status=none
	repaired_like_e2fsck "$R/dots.img"
	on_cbase dotnul
	printf 'xx' | dd of="$R/dotnul.img" bs=1 seek=$((blk * 1024 + 22)) conv=notrunc status=none
	run e3fsck -n "$R/dotnul.img"
	assert_status 4
	assert_output_has "not NUL-terminated"
	repaired_like_e2fsck "$R/dotnul.img"
}

@test "repair parity: a directory without a block is cleared, as e2fsck clears it" {
	on_cbase zerodir 'sif /c/sub block[0] 0'
	repaired_like_e2fsck "$R/zerodir.img"
}

@test "repair parity: a cleared root inode is recreated, its directories and files go to a new lost+found" {
	on_cbase noroot 'clri <2>'
	run e3fsck -n "$R/noroot.img"
	assert_status 4
	repaired_like_e2fsck "$R/noroot.img"
	[ "$(debugfs -R 'ls /lost+found' "$R/noroot.img" 2>/dev/null | tr -s ' ' '\n' | grep -c '^#')" -ge 5 ]
	on_cbase rootfile 'sif <2> mode 0100644'
	repaired_like_e2fsck "$R/rootfile.img"
}

@test "repair parity: /lost+found missing, or a regular file, is made a directory again" {
	on_cbase nolf 'rmdir /lost+found'
	repaired_like_e2fsck "$R/nolf.img"
	on_cbase lffile 'unlink /lost+found' 'write /etc/hostname lost+found'
	run e3fsck -n "$R/lffile.img"
	assert_status 4
	repaired_like_e2fsck "$R/lffile.img"
	[ "$(debugfs -R 'ls /lost+found' "$R/lffile.img" 2>/dev/null)" = \
	  "$(debugfs -R 'ls /lost+found' "$R/lffile.img.e2" 2>/dev/null)" ]
}

# ---- journals ----------------------------------------------------------------

# old_style_image IMAGE: an ext2 image given a journal by tune2fs -j while
# loop-mounted (an old-style /.journal in an ordinary inode), then
# mounted as ext3 with data=journal, written to, synced, and copied while
# still mounted: the copy has needs_recovery and committed transactions
old_style_image() {
	local img=$1 mnt=$R/mnt dev i
	mkdir -p "$mnt"
	mke2fs -q -F -t ext2 -b 1024 "$img.base" 16M >&2 || return 1
	mount -o loop "$img.base" "$mnt" || return 1
	dev=$(findmnt -n -o SOURCE "$mnt")
	tune2fs -j "$dev" >&2
	umount "$mnt" || return 1
	[ "$(debugfs -R 'stat /.journal' "$img.base" 2>/dev/null | sed -n 's/^Inode: \([0-9]*\).*/\1/p')" = \
	  "$(dumpe2fs -h "$img.base" 2>/dev/null | sed -n 's/^Journal inode: *//p')" ] || return 1
	mount -o loop,data=journal "$img.base" "$mnt" || return 1
	for i in $(seq 1 20); do echo "file $i" > "$mnt/f$i"; done
	mkdir "$mnt/dir"
	sync
	cp "$img.base" "$img"
	umount "$mnt" || return 1
	dumpe2fs -h "$img" 2>/dev/null | grep -q needs_recovery || return 1
}

@test "an old-style journal (tune2fs -j on a mounted fs): -n clean as e2fsck, -y replays it and moves it to inode 8" {
	require_root
	local img=$R/oldj.img
	old_style_image "$img"
	# nothing pending: a valid filesystem, e2fsck -fn says clean too
	run e3fsck -n "$img.base"
	assert_status 0
	assert_output_has "ordinary inode"
	run e2fsck -fn "$img.base"
	assert_status 0
	cp "$img" "$img.e2"
	run e3fsck -y "$img"
	assert_status 1
	assert_output_has "journal replayed"
	assert_output_has "move it to inode 8"
	assert_fsck_clean "$img"
	e2fsck -fy "$img.e2" >/dev/null 2>&1 || [ $? -le 1 ]
	# as e2fsck leaves it: inode 8, the backup, no /.journal, the files
	dumpe2fs -h "$img" 2>/dev/null | grep -q '^Journal inode: *8$'
	dumpe2fs -h "$img" 2>/dev/null | grep -q '^Journal backup: *inode blocks'
	[ "$(root_names "$img")" = "$(root_names "$img.e2")" ]
	refute_match "$(root_names "$img")" '\.journal'
	assert_img_cat "$img" /f20 "file 20"
	[ "$(used_inodes "$img")" = "$(used_inodes "$img.e2")" ]
}

@test "an external journal (mke2fs -O journal_dev, -J device=) is replayed with -j, as e2fsck -j replays it" {
	require_root
	local img=$R/ext.img jdev=$R/ext.jnl mnt=$R/mnt jl fl i
	mkdir -p "$mnt"
	mke2fs -q -F -O journal_dev -b 1024 "$jdev" 4M >&2
	jl=$(losetup -f --show "$jdev")
	mke2fs -q -F -t ext3 -b 1024 -J device="$jl" "$img.base" 16M >&2 ||
		{ losetup -d "$jl"; false; }
	fl=$(losetup -f --show "$img.base")
	if ! mount -t ext3 -o data=journal,journal_path="$jl" "$fl" "$mnt"; then
		losetup -d "$fl"; losetup -d "$jl"
		false
	fi
	for i in $(seq 1 20); do echo "file $i" > "$mnt/f$i"; done
	sync
	# copies while mounted: a filesystem that needs recovery and its log
	cp "$img.base" "$img"
	cp "$jdev" "$jdev.dirty"
	umount "$mnt"
	losetup -d "$fl"
	losetup -d "$jl"
	dumpe2fs -h "$img" 2>/dev/null | grep -q needs_recovery
	cp "$img" "$img.e2"
	cp "$jdev.dirty" "$jdev.e2"
	cp "$jdev.dirty" "$jdev.e3"
	# without -j: never touched, as before
	run e3fsck -n "$img"
	assert_output_has "external journal"
	# -n: the verdict e2fsck -fn gives the same pair (a pending journal
	# alone is no error to it)
	run e2fsck -fn -j "$jdev.e2" "$img.e2"
	e2n=$status
	run e3fsck -n -j "$jdev.e3" "$img"
	assert_status "$e2n"
	assert_output_has "journal needs recovery"
	run e3fsck -y -j "$jdev.e3" "$img"
	assert_status 1
	assert_output_has "journal replayed"
	run e2fsck -fy -j "$jdev.e2" "$img.e2"
	[ "$status" -le 1 ]
	run e2fsck -fn -j "$jdev.e3" "$img"
	assert_status 0
	refute_match "$(dumpe2fs -h "$img" 2>/dev/null | grep features)" needs_recovery
	[ "$(root_names "$img")" = "$(root_names "$img.e2")" ]
	assert_img_cat "$img" /f20 "file 20"
	# the logs end alike: empty, the same next sequence
	[ "$(dumpe2fs -h "$jdev.e3" 2>/dev/null | grep -E '^Journal (start|sequence)')" = \
	  "$(dumpe2fs -h "$jdev.e2" 2>/dev/null | grep -E '^Journal (start|sequence)')" ]
	# a journal device of another filesystem is refused, untouched
	mke2fs -q -F -O journal_dev -b 1024 "$jdev.other" 4M >&2
	cp "$jdev.other" "$jdev.other.orig"
	run e3fsck -y -j "$jdev.other" "$img"
	assert_output_has "external journal"
	cmp "$jdev.other" "$jdev.other.orig"
}

@test "--jobs N sets the scan workers; -j takes a journal, as in e2fsck" {
	on_cbase jobs
	run e3fsck -n --jobs 2 "$R/jobs.img"
	assert_status 0
	run e3fsck -n --jobs 9 "$R/jobs.img"
	assert_status 16
	assert_output_has "bad value for --jobs: '9'"
	# a filesystem with an internal journal does not use -j's file
	run e3fsck -n -j "$R/jobs.img" "$R/base.img"
	assert_status 0
	run e3fsck --help
	assert_output_has "--jobs N"
}

# spill_base IMAGE BLOCKSIZE TYPE: small groups, and enough files that
# group 1's inodes are in use
spill_base() {
	local i
	if [ ! -d "$R/spill" ]; then
		mkdir -p "$R/spill/d" "$R/spill/e" || return 1
		for i in $(seq 1 150); do echo "$i" > "$R/spill/d/f$i"; done
		echo hi > "$R/spill/e/x"
	fi
	mke2fs -q -F -t "$3" -b "$2" -g $(($2 == 1024 ? 2048 : 1024)) -N 512 \
		-d "$R/spill" "$1" 16M >/dev/null 2>&1 || return 1
}

@test "repair parity: a group's inode table outside the group or over its bitmaps, every backup alike: relocated, inodes lost as e2fsck loses them" {
	local bs type img first bpg bb
	for bs in 1024 4096; do
		for type in ext2 ext3; do
			img=$R/reloc-$bs-$type.img
			spill_base "$img" "$bs" "$type"
			first=$((bs == 1024)); bpg=$((bs == 1024 ? 2048 : 1024))
			[ "$(dumpe2fs "$img" 2>/dev/null | sed -n '/^Group 1:/,/^Group 2:/s/^  \([0-9]*\) free blocks, \([0-9]*\) free inodes.*/\2/p')" -lt \
			  "$(dumpe2fs -h "$img" 2>/dev/null | sed -n 's/^Inodes per group: *//p')" ]
			cp "$img" "$img.0"
			# outside: the group's inodes cannot be read
			set_bg_everywhere "$img" "set_bg 1 inode_table $((first + 3 * bpg))"
			run e3fsck -n "$img"
			assert_status 4
			assert_output_has "group 1's inode table at $((first + 3 * bpg)) is not in the group"
			repaired_like_e2fsck "$img"
			# over the group's bitmaps: they move, the table stays
			cp "$img.0" "$img"
			bb=$(dumpe2fs "$img" 2>/dev/null | sed -n '/^Group 1:/,/^Group 2:/s/^  Block bitmap at \([0-9]*\).*/\1/p')
			set_bg_everywhere "$img" "set_bg 1 inode_table $bb"
			repaired_like_e2fsck "$img"
		done
	done
}

@test "repair parity: a directory whose mode says socket, FIFO or device is made a directory again, its entries in place (not sent to lost+found)" {
	local m img
	for m in 0140755 010755 020755 060755; do
		img=$R/rdir-$m.img
		on_cbase "rdir-$m" "sif /c mode $m"
		run e3fsck -n "$img"
		assert_status 4
		assert_output_has "but it looks like it is really a directory"
		repaired_like_e2fsck "$img"
		[ "$(debugfs -R 'ls -l /c' "$img" 2>/dev/null)" = "$(debugfs -R 'ls -l /c' "$img.e2" 2>/dev/null)" ]
		[ "$(debugfs -R 'ls /lost+found' "$img" 2>/dev/null)" = "$(debugfs -R 'ls /lost+found' "$img.e2" 2>/dev/null)" ]
		debugfs -R 'stat /c' "$img" 2>/dev/null | grep -q 'Type: directory'
	done
}

@test "repair parity: a directory with 65,600 subdirectories (its count wrapped to 66): dir_nlink set and the count 1, as e2fsck -fy; writers refuse the result" {
	local img=$R/nlink.img
	mkdir -p "$R/nl/d"
	mke2fs -q -F -t ext3 -b 1024 -N 66000 -d "$R/nl" "$img" 90M
	# the library writer: a 16-bit count after 65,600 more links holds 66
	run "$E3_TOP/bench/manydirs" "$img" /d 65600
	assert_status 0
	[ "$(debugfs -R 'stat /d' "$img" 2>/dev/null | sed -n 's/.*Links: \([0-9]*\).*/\1/p')" -eq 66 ]
	run e2fsck -fn "$img"
	assert_status 4
	assert_output_has "Directory exceeds max links, but no DIR_NLINK feature"
	run e3fsck -n "$img"
	assert_status 4
	assert_output_has "directory 12 has 65602 links, more than 65000, but the dir_nlink feature is not set"
	assert_output_has "ref count is 66, should be 1"
	repaired_like_e2fsck "$img"
	dumpe2fs -h "$img" 2>/dev/null | grep -q '^Filesystem features:.* dir_nlink'
	[ "$(debugfs -R 'stat /d' "$img" 2>/dev/null | sed -n 's/.*Links: \([0-9]*\).*/\1/p')" -eq 1 ]
	run e3fsck -n "$img"
	assert_status 0
	# and e3fsck checks what e2fsck -fy left (it indexed /d too)
	run e3fsck -n "$img.e2"
	assert_status 0
	# dir_nlink is no ext3 feature: the writers refuse the image
	echo x > "$R/nl/x"
	run e3cp "$R/nl/x" "$img:/"
	assert_status 8
	assert_output_has "feature"
	rm -f "$img" "$img.e2"
}

@test "repair parity: a directory with an 8-block hole is filled in one round (was one block a round, past the round limit)" {
	local img=$R/holes.img i
	mkdir -p "$R/ht/big"
	for i in $(seq 1 300); do : > "$R/ht/big/$(printf 'name-%040d' "$i")"; done
	mke2fs -q -F -t ext3 -b 1024 -O ^dir_index -d "$R/ht" "$img" 8M
	for i in 2 3 4 5 6 7 8 9; do
		debugfs -w -R "sif /big block[$i] 0" "$img" >/dev/null 2>&1
	done
	run e3fsck -n "$img"
	assert_status 4
	[ "$(grep -c 'has a hole at block' <<<"$output")" -eq 8 ]
	repaired_like_e2fsck "$img"
	refute_output_has "not fixed"
}

@test "repair parity: a file's EA block on the bad-block list gets a copy of its own, as e2fsck clones it" {
	local img=$R/bbea.img b
	mkdir -p "$R/bt"; echo data > "$R/bt/f"
	mke2fs -q -F -t ext3 -b 1024 -d "$R/bt" "$img" 4M
	debugfs -w -R "ea_set /f user.a $(printf 'v%.0s' $(seq 1 300))" "$img" >/dev/null 2>&1
	b=$(debugfs -R 'stat /f' "$img" 2>/dev/null | sed -n 's/.*File ACL: \([0-9]*\).*/\1/p')
	[ "$b" -gt 0 ]
	debugfs -w -R "sif <1> block[0] $b" "$img" >/dev/null 2>&1
	debugfs -w -R "sif <1> blocks 2" "$img" >/dev/null 2>&1
	run e3fsck -n "$img"
	assert_status 4
	assert_output_has "block $b is claimed by inode 1 and by inode 12"
	repaired_like_e2fsck "$img"
	[ "$(debugfs -R 'stat /f' "$img" 2>/dev/null | sed -n 's/.*File ACL: \([0-9]*\).*/\1/p')" -ne "$b" ]
	[ "$(debugfs -R 'ea_get /f user.a' "$img" 2>/dev/null | tr -d '\n' | grep -o v | wc -l)" -eq 300 ]
}
