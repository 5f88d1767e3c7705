#!/usr/bin/env bats
# tests/fsck.bats: e3fsck against damage made by tests/corrupt.sh (found
# with -n, fixed with -y, then clean to both e3fsck -n and e2fsck -fn),
# clean images from several writers, layout figures equal to e2fsck's,
# gates, JSON, ext4 refusal, pending journals, and a fixed-seed fuzz sweep.
load helper

setup_file() {
	export W=/tmp/fsck-bats.$$
	mkdir -p "$W"
	bash "$E3_TOP/tests/corrupt.sh" --base "$W/base.img" >/dev/null
}

teardown_file() {
	rm -rf "$W"
}

# summary IMAGE: e2fsck's "N/M files (X% non-contiguous), B/T blocks"
e2_summary() {
	e2fsck -fn "$1" 2>/dev/null | tail -1 | sed 's/^[^:]*: //'
}
e3_summary() {
	e3fsck -n "$1" 2>/dev/null | tail -1 | sed 's/^[^:]*: //'
}

# damage KIND: copy the base image, damage it, check -n, fix -y, recheck;
# the exit codes as corrupt.sh --list says.
# Called from `||` (set -e is off there): every check says `|| return 1`.
damage() {
	local kind=$1 exp fix exits img=$W/$1.img
	read -r _ exp fix exits < <(bash "$E3_TOP/tests/corrupt.sh" --list | grep "^$kind ")
	[ -n "$exits" ] || { echo "$kind: not in corrupt.sh --list" >&2; return 1; }
	cp "$W/base.img" "$img" || return 1
	bash "$E3_TOP/tests/corrupt.sh" "$kind" "$img" || return 1
	run e3fsck --json -n "$img"
	assert_status "${exits%/*}" || return 1
	assert_output_has "\"id\": \"$exp\"" || return 1
	run e3fsck -n "$img"
	assert_status "${exits%/*}" || return 1
	[ "$fix" = y ] || return 0
	run e3fsck -y "$img"
	assert_status "${exits#*/}" || return 1
	if [ "${exits#*/}" = 1 ]; then
		assert_output_has "FILE SYSTEM WAS MODIFIED" || return 1
	else
		assert_output_has ": fixed" || return 1
	fi
	run e3fsck -n "$img"
	assert_status 0 || return 1
	assert_fsck_clean "$img" || return 1
}

@test "the corruption script knows at least 30 kinds of damage" {
	run bash "$E3_TOP/tests/corrupt.sh" --list
	[ "${#lines[@]}" -ge 30 ]
}

@test "the base image is clean to e3fsck and e2fsck" {
	run e3fsck -n "$W/base.img"
	assert_status 0
	[ "$(e3_summary "$W/base.img")" = "$(e2_summary "$W/base.img")" ]
}

@test "damage: every kind found with -n, fixed with -y, then clean" {
	local k failed=()
	local n=0
	for k in $(bash "$E3_TOP/tests/corrupt.sh" --list | awk '$3 == "y" {print $1}'); do
		( damage "$k" ) >"$W/$k.log" 2>&1 || failed+=("$k")
		n=$((n + 1))
	done
	[ "$n" -ge 50 ] || { echo "only $n kinds" >&2; return 1; }
	if [ ${#failed[@]} -gt 0 ]; then
		for k in "${failed[@]}"; do echo "== $k"; cat "$W/$k.log"; done
		return 1
	fi
}

@test "-p fixes counts and bitmaps without asking" {
	cp "$W/base.img" "$W/p.img"
	bash "$E3_TOP/tests/corrupt.sh" freeb "$W/p.img"
	bash "$E3_TOP/tests/corrupt.sh" bg_free_inodes "$W/p.img"
	run e3fsck -p "$W/p.img"
	assert_status 1
	run e3fsck -n "$W/p.img"
	assert_status 0
	assert_fsck_clean "$W/p.img"
}

@test "-p refuses a problem that needs -y: fixes nothing, marks the filesystem as having errors" {
	cp "$W/base.img" "$W/p2.img"
	bash "$E3_TOP/tests/corrupt.sh" unlink "$W/p2.img"
	cp "$W/p2.img" "$W/p2.before"
	run e3fsck -p "$W/p2.img"
	assert_status 4
	assert_output_has "UNEXPECTED INCONSISTENCY"
	# only the primary superblock (bytes 1024-2047) changed: its state
	[ -z "$(cmp -l "$W/p2.before" "$W/p2.img" | awk '$1 < 1025 || $1 > 2048')" ]
	dumpe2fs -h "$W/p2.img" 2>/dev/null | grep -q '^Filesystem state: *clean with errors$'
	run e3cp "$E3_TOP/README.md" "$W/p2.img"	# as e2fsck -p leaves it
	assert_status 8
	assert_output_has "run e3fsck first"
	rm -f "$W/p2.before"
}

@test "the superblock's state alone: exit codes and the state left match e2fsck's (-n, -p, -y)" {
	local st m ours theirs
	for st in 0 1 2 3; do
		for m in n p y; do
			cp "$W/base.img" "$W/st.img"
			debugfs -w -R "ssv state $st" "$W/st.img" 2>/dev/null
			cp "$W/st.img" "$W/st2.img"
			if [ "$m" = y ]; then
				e2fsck -fy "$W/st2.img" >/dev/null 2>&1 && theirs=0 || theirs=$?
			else
				e2fsck -$m "$W/st2.img" >/dev/null 2>&1 && theirs=0 || theirs=$?
			fi
			e3fsck -$m "$W/st.img" >/dev/null && ours=0 || ours=$?
			[ "$ours" = "$theirs" ] ||
				{ echo "state $st -$m: e3fsck $ours, e2fsck $theirs" >&2; false; }
			[ "$(dumpe2fs -h "$W/st.img" 2>/dev/null | grep '^Filesystem state')" = \
			  "$(dumpe2fs -h "$W/st2.img" 2>/dev/null | grep '^Filesystem state')" ] ||
				{ echo "state $st -$m: states differ" >&2; false; }
		done
	done
	rm -f "$W/st.img" "$W/st2.img"
}

@test "an external journal: inode 8 unused is no error, the journal is named as not checked" {
	is_root || skip "skipped: not root (mke2fs -J device= wants a block device)"
	[ -e /dev/loop-control ] || skip "skipped: no loop devices on this machine"
	local dev
	dd if=/dev/zero of="$W/jdev.img" bs=1M count=8 status=none
	mke2fs -q -F -O journal_dev -b 4096 "$W/jdev.img"
	dev=$(losetup -f --show "$W/jdev.img")
	mke2fs -q -F -t ext3 -b 4096 -J device="$dev" "$W/ext.img" 64M >/dev/null 2>&1 ||
		{ losetup -d "$dev"; false; }
	losetup -d "$dev"
	run e3fsck -n "$W/ext.img"
	assert_status 0
	assert_output_has "external journal"
	[[ "$output" != *"journal inode"* ]]
	rm -f "$W/jdev.img" "$W/ext.img"
}

@test "-n never writes, even on a damaged image" {
	cp "$W/base.img" "$W/ro.img"
	bash "$E3_TOP/tests/corrupt.sh" dir_garbage "$W/ro.img"
	local before; before=$(md5sum < "$W/ro.img")
	run e3fsck -n "$W/ro.img"
	assert_status 4
	[ "$(md5sum < "$W/ro.img")" = "$before" ]
}

@test "ext4-only features: exit 8 and the feature named" {
	cp "$W/base.img" "$W/e4.img"
	bash "$E3_TOP/tests/corrupt.sh" ext4_feature "$W/e4.img"
	run e3fsck -n "$W/e4.img"
	assert_status 8
	assert_output_has "extent"
	mke2fs -q -F -t ext4 "$W/e4b.img" 8M
	run e3fsck -n "$W/e4b.img"
	assert_status 8
	assert_output_has "feature"
}

@test "an ext2 image (no journal) is checked" {
	mke2fs -q -F -t ext2 -d "$E3_TOP/lib/fs" "$W/e2.img" 8M
	run e3fsck -n "$W/e2.img"
	assert_status 0
	[ "$(e3_summary "$W/e2.img")" = "$(e2_summary "$W/e2.img")" ]
}

@test "-b uses a backup superblock; a zeroed primary falls back to one" {
	cp "$W/base.img" "$W/sb.img"
	# a backup's free counts are older than the primary's: e2fsck -n
	# finds them wrong (exit 4), and so must we
	run e2fsck -n -b 2049 -B 1024 "$W/sb.img"
	assert_status 4
	run e3fsck -n -b 2049 -B 1024 "$W/sb.img"
	assert_status 4
	assert_output_has "free blocks count wrong for group 1"
	dd if=/dev/zero of="$W/sb.img" bs=1024 seek=1 count=1 conv=notrunc status=none
	run e3fsck -n "$W/sb.img"
	assert_status 4
	assert_output_has "backup superblock"
	run e3fsck -y "$W/sb.img"
	assert_status 1
	run e3fsck -n "$W/sb.img"
	assert_status 0
	assert_fsck_clean "$W/sb.img"
}

@test "-p/-y mark the filesystem clean when nothing is wrong, not clean when errors are left" {
	local img=$W/state.img
	cp "$W/base.img" "$img"
	debugfs -w -R "ssv state 0" "$img" 2>/dev/null
	run e3fsck -n "$img"
	assert_status 0				# -n reports, never writes
	run e3fsck -p "$img"
	assert_status 1				# as e2fsck: it wrote the state
	dumpe2fs -h "$img" 2>/dev/null | grep -q '^Filesystem state: *clean$'
	run e3fsck -y "$img"
	assert_status 0
	# a backup superblock always says not clean, and its counts are old:
	# one round fixes from it, the next checks the primary it wrote
	run e3fsck -y -b 2049 -B 1024 --json "$img"
	assert_status 1
	[[ "$output" == *'"rounds": 2,'* ]]
	run e3fsck -n "$img"
	assert_status 0
	assert_output_has "files ("
	# errors left (-y never touches a journal with unknown feature bits,
	# as e2fsck): not clean
	local jb bs
	jb=$(debugfs -R 'bmap <8> 0' "$img" 2>/dev/null)
	bs=$(dumpe2fs -h "$img" 2>/dev/null | sed -n 's/^Block size: *//p')
	[ -n "$jb" ] && [ -n "$bs" ]
	printf '\x80\x00\x00\x00' | dd of="$img" bs=1 seek=$((jb * bs + 0x28)) conv=notrunc status=none
	run e3fsck -y "$img"
	[ $((status & 4)) -eq 4 ]
	dumpe2fs -h "$img" 2>/dev/null | grep -q '^Filesystem state: *not clean$'
}

# jdamage KIND IMAGE: a fresh 16 MiB e3mkfs image (a 1024-block journal)
# whose internal journal is invalid in one way:
#   magic   the journal superblock's magic zeroed
#   bsize   its block size 2048 on a 1 KiB-block filesystem
#   hole    inode 8's block 5 a hole
#   ptr     inode 8's block 2 past the end of the filesystem
#   feature an unknown incompat feature bit (a valid-looking journal
#           e3fsck must not touch, as e2fsck does not)
jdamage() {
	local kind=$1 img=$2 jblk off bytes
	rm -f "$img"
	e3mkfs -q -F "$img" 16M
	case $kind in
	hole) debugfs -w -R "sif <8> block[5] 0" "$img" 2>/dev/null; return ;;
	ptr) debugfs -w -R "sif <8> block[2] 9999999" "$img" 2>/dev/null; return ;;
	magic) off=0 bytes='\x00\x00\x00\x00' ;;
	bsize) off=12 bytes='\x00\x00\x08\x00' ;;
	feature) off=40 bytes='\x00\x00\x01\x00' ;;
	esac
	jblk=$(debugfs -R "bmap <8> 0" "$img" 2>/dev/null)
	printf "$bytes" | dd of="$img" bs=1 seek=$((jblk * 1024 + off)) conv=notrunc status=none
}

# jrepaired IMAGE: a journal again (e2fsck and dumpe2fs agree), the image
# clean to both checkers, and writable: e3cp copies a small tree in
jrepaired() {
	local img=$1 t=$W/jtree hdr
	run e3fsck -fn "$img"
	assert_status 0 || return 1
	assert_fsck_clean "$img" || return 1
	hdr=$(dumpe2fs -h "$img" 2>/dev/null)
	assert_match "$hdr" '^Filesystem features:.*has_journal' || return 1
	assert_match "$hdr" '^Total journal size: *1024k$' || return 1
	assert_match "$hdr" '^Filesystem state: *clean$' || return 1
	rm -rf "$t"; mkdir -p "$t/sub"
	echo one > "$t/a"; head -c 30000 /dev/urandom > "$t/sub/b"
	run e3cp "$t" "$img"
	assert_status 0 || return 1
	assert_fsck_clean "$img" || return 1
	assert_img_file "$img" /sub/b "$t/sub/b" || return 1
}

# jfix_y KIND MESSAGE: -y clears the invalid journal and recreates it
jfix_y() {
	local img=$W/j$1.img
	jdamage "$1" "$img" || return 1
	run e3fsck -y "$img"
	assert_status 1 || return 1
	assert_output_has "$2: fixed (clear and recreate the journal)" || return 1
	assert_output_has "pass 7: journal recreated: 1024 blocks (1024 KiB): fixed" || return 1
	jrepaired "$img" || return 1
}

@test "an invalid journal (zeroed magic): -y clears and recreates it, e2fsck agrees, e3cp writes" {
	jfix_y magic "journal superblock is invalid (bad magic or type)"
}

@test "an invalid journal (wrong block size): -y clears and recreates it, e2fsck agrees, e3cp writes" {
	jfix_y bsize "journal superblock is invalid (block size differs from the filesystem's)"
}

@test "an invalid journal (hole in inode 8's map): -y clears and recreates it, e2fsck agrees, e3cp writes" {
	jfix_y hole "journal inode is invalid (block map leaves the filesystem, names a block twice or has a hole)"
}

@test "an invalid journal (block pointer past the end): -y clears and recreates it, e2fsck agrees, e3cp writes" {
	jfix_y ptr "journal inode is invalid (block map leaves the filesystem, names a block twice or has a hole)"
}

@test "an invalid journal: -n reports it (exit 4) and writes nothing" {
	local img=$W/jn.img sum
	jdamage magic "$img"
	sum=$(md5sum < "$img")
	run e3fsck -n "$img"
	assert_status 4
	assert_output_has "journal superblock is invalid (bad magic or type): not fixed (clear and recreate the journal with -p or -y)"
	[ "$(md5sum < "$img")" = "$sum" ]
	run e3fsck --json -n "$img"
	assert_status 4
	assert_output_has '"id": "journal_superblock"'
	assert_output_has '"fix": "preen"'
	[ "$(md5sum < "$img")" = "$sum" ]
	jdamage hole "$img"
	sum=$(md5sum < "$img")
	run e3fsck -n "$img"
	assert_status 4
	[ "$(md5sum < "$img")" = "$sum" ]
}

@test "an invalid journal: -p does what e2fsck -p does (recreates; unknown features refused)" {
	local k img e2img e2st
	for k in magic bsize hole feature; do
		img=$W/jp$k.img e2img=$W/jp$k-e2.img
		jdamage "$k" "$img"
		cp "$img" "$e2img"
		run e2fsck -fp "$e2img"		# e3fsck -p always checks
		e2st=$status
		run e3fsck -p "$img"
		echo "$k: e2fsck -p $e2st, e3fsck -p $status" >&2
		[ "$status" -eq "$e2st" ]
		if [ "$k" = feature ]; then
			# e2fsck -p: UNEXPECTED INCONSISTENCY (4), journal untouched
			assert_status 4
			assert_output_has "UNEXPECTED INCONSISTENCY"
			dumpe2fs -h "$img" 2>/dev/null | grep -q '^Journal features:.*FEATURE_I8'
			continue
		fi
		assert_status 1
		assert_output_has "journal recreated: 1024 blocks"
		dumpe2fs -h "$e2img" 2>/dev/null | grep -q '^Total journal size: *1024k$'
		assert_fsck_clean "$e2img"
		jrepaired "$img"
	done
}

# jfull IMAGE: an 8 MiB mke2fs ext3 image (1 KiB blocks, a 1024-block
# journal at 562-1590) with a ~5.5 MB file /big: 1207 blocks left free
jfull() {
	local img=$1
	rm -f "$img"
	mke2fs -q -F -t ext3 -b 1024 -J size=1 "$img" 8M
	head -c 5500000 /dev/urandom > "$W/big"
	debugfs -w -R "write $W/big big" "$img" >/dev/null 2>&1
}

# block_map IMAGE: the block bitmap of an 8 MiB image, as debugfs reads
# it (dumpe2fs stops at a corrupt journal superblock)
block_map() {
	debugfs -R "testb 1 8191" "$1" 2>/dev/null | md5sum
}

@test "an invalid journal with a bogus i_size on a full image: -y recreates it at its real size, e2fsck agrees, -n clean after" {
	local img=$W/jsize.img
	jfull "$img"
	# a hole in the map as recovery sees it, and a size asking for
	# 4000 blocks where 2236 are free once the journal is cleared
	debugfs -w -R "sif <8> size 4096000" "$img" 2>/dev/null
	run e3fsck -fy "$img"
	assert_status 1
	assert_output_has "journal inode is invalid"
	assert_output_has "journal recreated: 1024 blocks (1024 KiB): fixed"
	[[ "$output" != *"not recreated"* ]]
	assert_fsck_clean "$img"
	dumpe2fs -h "$img" 2>/dev/null | grep -q '^Filesystem features:.*has_journal'
	dumpe2fs -h "$img" 2>/dev/null | grep -q '^Total journal size: *1024k$'
	run e3fsck -fn "$img"
	assert_status 0
}

@test "an invalid journal whose s_maxlen grew: -p recreates it at the size its map has, as e2fsck keeps it" {
	local img=$W/jmaxlen.img jb
	rm -f "$img"
	mke2fs -q -F -t ext3 -b 1024 -J size=1 "$img" 8M
	jb=$(debugfs -R "bmap <8> 0" "$img" 2>/dev/null)
	# s_maxlen (offset 16, big-endian) 1024 -> 4096: past i_size, invalid
	printf '\x00\x00\x10\x00' | dd of="$img" bs=1 seek=$((jb * 1024 + 16)) conv=notrunc status=none
	run e3fsck -p "$img"
	assert_status 1
	assert_output_has "journal recreated: 1024 blocks (1024 KiB)"
	assert_fsck_clean "$img"
	dumpe2fs -h "$img" 2>/dev/null | grep -q '^Total journal size: *1024k$'
}

@test "an invalid journal with no room for a new one: -y clears it, says why, and leaves a clean image without a journal" {
	local img=$W/jnofit.img
	jfull "$img"
	# the journal's blocks past the 12 direct ones go to a file, and
	# inode 8 loses its indirect pointers (a hole: invalid): clearing it
	# gives back 12 blocks, far from the 1029 a new journal needs
	debugfs -w -R "freeb 574 1017" "$img" 2>/dev/null
	head -c $((2200 * 1024)) /dev/urandom > "$W/fill"
	debugfs -w -R "write $W/fill fill" "$img" >/dev/null 2>&1
	debugfs -w -R "sif <8> block[IND] 0" "$img" 2>/dev/null
	debugfs -w -R "sif <8> block[DIND] 0" "$img" 2>/dev/null
	run e3fsck -fy "$img"
	assert_status 1
	assert_output_has "journal inode is invalid"
	assert_output_has "the invalid journal was cleared but not recreated (not enough free blocks: a journal of 1024 blocks needs 1029,"
	assert_fsck_clean "$img"
	refute_match "$(dumpe2fs -h "$img" 2>/dev/null)" '^Filesystem features:.*has_journal'
	[ "$(debugfs -R 'stat <8>' "$img" 2>/dev/null | grep -c 'Links: 0')" -eq 1 ]
	run e3fsck -fn "$img"
	assert_status 0
}

@test "an invalid journal sharing a block with a file, and a duplicate block: -p changes nothing and says so, -y repairs all" {
	local img=$W/jshare.img sum b1 b2 before e2before
	jfull "$img"
	b1=$(debugfs -R "blocks big" "$img" 2>/dev/null | awk '{ print $6 }')
	b2=$(debugfs -R "blocks big" "$img" 2>/dev/null | awk '{ print $500 }')
	debugfs -w -R "sif <8> block[3] $b1" "$img" 2>/dev/null
	echo hello > "$W/small"
	debugfs -w -R "write $W/small small" "$img" >/dev/null 2>&1
	debugfs -w -R "sif small block[0] $b2" "$img" 2>/dev/null
	printf '\x00\x00\x00\x00' | dd of="$img" bs=1 seek=$((562 * 1024)) conv=notrunc status=none
	before=$(block_map "$img")
	e2before=$(e2fsck -fn "$img" 2>&1 | grep -v "$img")
	run e3fsck -p "$img"
	assert_status 4
	assert_output_has "UNEXPECTED INCONSISTENCY; run e3fsck -y (nothing was fixed;"
	assert_output_has "journal superblock is invalid (bad magic or type): not fixed"
	[[ "$output" != *": fixed"* ]]
	[[ "$output" != *"MODIFIED"* ]]
	# not made worse: the file's block still in use, the journal still
	# there, the bitmaps as they were, e2fsck finds what it found before
	debugfs -R "testb $b1" "$img" 2>&1 | grep -q "marked in use"
	dumpe2fs -h "$img" 2>/dev/null | grep -q '^Filesystem features:.*has_journal'
	[ "$(block_map "$img")" = "$before" ]
	[ "$(e2fsck -fn "$img" 2>&1 | grep -v "$img")" = "$e2before" ]
	run e3fsck -y "$img"
	assert_status 1
	assert_output_has "block $b2 is claimed by inode 12 and by inode 13: fixed"
	assert_output_has "journal recreated: 1024 blocks (1024 KiB): fixed"
	debugfs -R "testb $b1" "$img" 2>&1 | grep -q "marked in use"
	assert_fsck_clean "$img"
	run e3fsck -fn "$img"
	assert_status 0
}

@test "inode 8 with data while has_journal is clear: -n reports it as e2fsck does, -p and -y clear it, e2fsck agrees" {
	local img=$W/jnotclear.img m
	for m in p y; do
		rm -f "$img"
		mke2fs -q -F -t ext3 -b 1024 -J size=1 "$img" 8M
		debugfs -w -R "feature -has_journal" "$img" >/dev/null 2>&1
		debugfs -w -R "ssv journal_inum 0" "$img" 2>/dev/null
		run e2fsck -fn "$img"
		assert_status 4
		assert_output_has "Journal inode is not in use, but contains data."
		run e3fsck -n "$img"
		assert_status 4
		assert_output_has "pass 2: journal inode 8 is not in use, but contains data: not fixed (clear it with -p or -y)"
		run e3fsck --json -n "$img"
		assert_output_has '"id": "journal_inode_not_clear"'
		run e3fsck -$m "$img"
		assert_status 1
		assert_output_has "journal inode 8 is not in use, but contains data: fixed (clear it)"
		assert_output_has "blocks 562-1590 are free but marked in use: fixed"
		assert_fsck_clean "$img"
		run e3fsck -fn "$img"
		assert_status 0
	done
}

@test "has_journal clear with s_journal_inum still set: -p clears the journal as e2fsck -fp does" {
	local img=$W/jfields.img hdr
	rm -f "$img"
	mke2fs -q -F -t ext3 -b 1024 -J size=1 "$img" 8M
	debugfs -w -R "feature -has_journal" "$img" >/dev/null 2>&1
	cp "$img" "$img.e2"
	run e2fsck -fp "$img.e2"
	assert_status 1
	run e3fsck -p "$img"
	assert_status 1
	assert_output_has "journal fields set but the has_journal feature is clear: fixed (clear them)"
	assert_output_has "journal inode 8 is not in use, but contains data: fixed (clear it)"
	assert_fsck_clean "$img"
	[ "$(dumpe2fs -h "$img" 2>/dev/null | grep '^Free blocks')" = \
	  "$(dumpe2fs -h "$img.e2" 2>/dev/null | grep '^Free blocks')" ]
	hdr=$(dumpe2fs -h "$img" 2>/dev/null)
	assert_match "$hdr" '^Filesystem features:'	# dumpe2fs read it
	refute_match "$hdr" '^Journal inode'
	rm -f "$img.e2"
}

# layout_image N: the N-th varied image for the layout comparison
layout_image() {
	local n=$1 img=$W/lay$1.img t=$W/tree$1 i
	rm -rf "$t"; mkdir -p "$t/d"
	{ case $n in
	1) mke2fs -q -F -t ext3 "$img" 16M ;;
	2) for i in $(seq 1 60); do head -c $((i * 5000)) /dev/zero > "$t/d/f$i"; done
	   mke2fs -q -F -t ext3 -b 1024 -g 1024 -d "$t" "$img" 16M ;;
	3) head -c 6000000 /dev/zero > "$t/big"; cp -r "$E3_TOP/lib" "$t/src"
	   mke2fs -q -F -t ext3 -b 1024 -g 2048 -d "$t" "$img" 32M ;;
	4) # the build tree (objects and binaries: ~16 MiB today, and growing)
	   cp -r "$E3_TOP/lib" "$E3_TOP/misc" "$t/"
	   mke2fs -q -F -t ext2 -b 2048 -d "$t" "$img" 48M ;;
	5) cp -r "$E3_TOP/tests" "$t/"
	   mke2fs -q -F -t ext3 -b 4096 -d "$t" "$img" 32M ;;
	6)	# fragmented by deletes and rewrites through debugfs
	   mke2fs -q -F -t ext3 -b 1024 -g 1024 "$img" 8M
	   for i in $(seq 1 30); do head -c $((i * 3000)) /dev/urandom > "$t/s$i"; done
	   { for i in $(seq 1 30); do echo "write $t/s$i s$i"; done
	     for i in $(seq 1 2 30); do echo "rm s$i"; done
	     echo "write $t/s30 big1"; echo "write $t/s29 big2"; } > "$t/cmds"
	   debugfs -w -f "$t/cmds" "$img" >/dev/null 2>&1 ;;
	7) mke2fs -q -F -t ext3 -b 1024 -g 512 -N 256 "$img" 4M
	   head -c 1500000 /dev/zero > "$t/f"
	   debugfs -w -R "write $t/f f" "$img" >/dev/null 2>&1 ;;
	8) for i in $(seq 1 300); do echo $i > "$t/d/n$i"; done
	   mke2fs -q -F -t ext3 -O dir_index -d "$t" "$img" 8M
	   e2fsck -fyD "$img" >/dev/null 2>&1 || true ;;
	9) cp "$W/base.img" "$img" ;;
	10) mke2fs -q -F -t ext3 -b 1024 -g 1024 "$img" 8M
	   for i in $(seq 1 20); do head -c 20000 /dev/urandom > "$t/r$i"; done
	   { for i in $(seq 1 20); do echo "write $t/r$i r$i"; done
	     for i in 2 5 7 11 13 17; do echo "rm r$i"; done
	     echo "write $E3_TOP/lib/check/check_inodes.c c1"; echo "write $t/r1 again"; } > "$t/cmds"
	   debugfs -w -f "$t/cmds" "$img" >/dev/null 2>&1 ;;
	11) cp "$W/base.img" "$img"
	   bash "$E3_TOP/tests/corrupt.sh" unlink_dir "$img"; e2fsck -fy "$img" >/dev/null 2>&1 || true ;;
	12) for i in $(seq 1 40); do head -c $((i * 900)) /dev/zero > "$t/z$i"; done
	   mke2fs -q -F -t ext3 -b 1024 -g 512 -N 128 -d "$t" "$img" 4M ;;
	esac; } >/dev/null 2>&1
	echo "$img"
}

@test "layout: the summary line equals e2fsck's on 12 varied images" {
	local n img a b bad=0
	for n in $(seq 1 12); do
		img=$(layout_image "$n")
		a=$(e2_summary "$img"); b=$(e3_summary "$img")
		if [ "$a" != "$b" ] || [ -z "$a" ]; then
			echo "image $n: e2fsck: $a / e3fsck: $b"; bad=1
		fi
		e2fsck -fn "$img" >/dev/null 2>&1 || { echo "image $n not clean"; bad=1; }
	done
	[ $bad -eq 0 ]
}

# e2_verbose IMAGE: "files dirs ind dind tind" from e2fsck -fnv
e2_verbose() {
	e2fsck -fnv "$1" 2>/dev/null | awk '
		/non-contiguous file/ { f = $1 } /non-contiguous director/ { d = $1 }
		/ind\/dind\/tind blocks:/ { split($NF, a, "/"); i = a[1]; di = a[2]; t = a[3] }
		END { print f, d, i, di, t }'
}
e3_verbose() {
	e3fsck -n --json "$1" | python3 -c 'import json, sys
l = json.load(sys.stdin)["layout"]
print(l["noncontig_files"], l["noncontig_dirs"], l["ind_files"], l["dind_files"], l["tind_files"])'
}

@test "layout: files, directories and ind/dind/tind counts equal e2fsck -v's on 12 images" {
	local n img a b bad=0
	for n in $(seq 1 12); do
		img=$(layout_image "$n")
		a=$(e2_verbose "$img"); b=$(e3_verbose "$img")
		if [ "$a" != "$b" ]; then
			echo "image $n: e2fsck -v: $a / e3fsck: $b"; bad=1
		fi
	done
	[ $bad -eq 0 ]
}

@test "layout: some varied image is non-contiguous, so the metric is exercised" {
	local img; img=$(layout_image 6)
	run e3fsck -n --json "$img"
	assert_status 0
	python3 -c 'import json, sys; p = json.load(sys.stdin)["layout"]["noncontig_percent"]; sys.exit(0 if p > 0 else "noncontig_percent %r" % p)' <<<"$output"
}

@test "layout gates exit 64 and name the worst files" {
	local img; img=$(layout_image 6)
	run e3fsck -n --max-runs 1 "$img"
	[ $((status & 64)) -eq 64 ]
	assert_output_has "runs, over the limit 1"
	assert_output_has "(/big"	# written into the holes left by rm
	run e3fsck -n --max-noncontig 0 "$img"
	[ $((status & 64)) -eq 64 ]
	run e3fsck -n --max-runs 100000 --max-excess-runs 100000 --max-noncontig 100 "$img"
	assert_status 0
}

@test "--layout and -v print runs and free-space figures" {
	run e3fsck -n --layout "$W/base.img"
	assert_status 0
	assert_output_has "free extents"
	assert_output_has "runs per file"
}

@test "--json is valid JSON with findings and layout" {
	cp "$W/base.img" "$W/j.img"
	bash "$E3_TOP/tests/corrupt.sh" links_high "$W/j.img"
	run e3fsck -n --json "$W/j.img"
	assert_status 4
	python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["findings"][0]["id"]=="inode_link_count"; assert "noncontig_percent" in d["layout"]' <<<"$output"
}

@test "a pending journal: -n reports it (exit 0, as e2fsck -fn), -y replays it" {
	cp "$W/base.img" "$W/jn.img"
	local ino; ino=$(debugfs -R "stat /a/f1" "$W/jn.img" 2>/dev/null | sed -n 's/^Inode: \([0-9]*\).*/\1/p')
	debugfs -w -R "jo" -R "jw -b 333 /dev/zero" -R "jc" "$W/jn.img" >/dev/null 2>&1 || true
	printf 'jo\njw -b 333 /dev/null\njc\n' > "$W/jcmds"
	debugfs -w -f "$W/jcmds" "$W/jn.img" >/dev/null 2>&1
	assert_match "$(dumpe2fs -h "$W/jn.img" 2>/dev/null)" 'needs_recovery'
	run e3fsck -n "$W/jn.img"
	assert_status 0
	assert_output_has "journal needs recovery"
	refute_output_has "still has errors"
	run e3fsck -y "$W/jn.img"
	[ $((status & 1)) -eq 1 ]
	assert_output_has "journal replayed"
	assert_fsck_clean "$W/jn.img"
	[ -n "$ino" ]
}

@test "clean images from mke2fs -d, e3cp and the kernel exit 0" {
	mke2fs -q -F -t ext3 -d "$E3_TOP/lib" "$W/c1.img" 16M
	run e3fsck -n "$W/c1.img"
	assert_status 0
	[ "$(e3_summary "$W/c1.img")" = "$(e2_summary "$W/c1.img")" ]
	e3mkfs -d "$E3_TOP/lib" "$W/c2.img" auto+50% >/dev/null
	img_has "$W/c2.img" /alloc/alloc.c
	run e3fsck -n "$W/c2.img"
	assert_status 0
	[ "$(e3_summary "$W/c2.img")" = "$(e2_summary "$W/c2.img")" ]
	e3mkfs -b 1024 -g 1024 "$W/c3.img" 32M >/dev/null
	e3cp -j2 "$E3_TOP/lib" "$E3_TOP/tests" "$W/c3.img:/" >/dev/null
	img_has "$W/c3.img" /alloc/alloc.c
	img_has "$W/c3.img" /helper.bash
	run e3fsck -n "$W/c3.img"
	assert_status 0
	[ "$(e3_summary "$W/c3.img")" = "$(e2_summary "$W/c3.img")" ]
	if ! is_root || ! [ -e /dev/loop-control ]; then
		echo "# skipped: not root or no loop device: the kernel-written image" >&3
		return 0
	fi
	mke2fs -q -F -t ext3 "$W/k.img" 16M
	mkdir -p "$W/mnt"
	mount -o loop "$W/k.img" "$W/mnt"
	cp -r "$E3_TOP/lib" "$W/mnt/"; mkdir "$W/mnt/x"; ln -s lib "$W/mnt/l"
	umount "$W/mnt"
	run e3fsck -n "$W/k.img"
	assert_status 0
	[ "$(e3_summary "$W/k.img")" = "$(e2_summary "$W/k.img")" ]
}

# asan_e3fsck: the e3fsck to fuzz — this tree's if it was configured with
# --enable-asan, else a sanitized build of a copy of the tree in $W
asan_e3fsck() {
	local d=$W/asan
	if ldd "$E3_TOP/misc/e3fsck" | grep -q libasan; then
		echo "$E3_TOP/misc/e3fsck"
		return
	fi
	mkdir -p "$d"
	tar -C "$E3_TOP" --exclude='*.o' --exclude='*.a' --exclude=.git -cf - . | tar -C "$d" -xf -
	(cd "$d" && autoconf -f && ./configure -q --enable-asan && make -j2 misc/e3fsck) >"$d/build.log" 2>&1 ||
		{ echo "asan build failed: $(tail -3 "$d/build.log")" >&2; return 1; }
	echo "$d/misc/e3fsck"
}

@test "fuzz: a fixed-seed sweep of mutated images under ASan never crashes or hangs" {
	local bin
	# a failed sanitizer build is a failure: bootstrap.sh installs gcc
	# and its libasan
	bin=$(asan_e3fsck)
	E3FSCK=$bin run bash "$E3_TOP/bench/fuzz.sh" --cases 40 --seed 7 --image "$W/base.img"
	assert_status 0
	assert_output_has "crashes 0"
	assert_output_has "hangs 0"
}
