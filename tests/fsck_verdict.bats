#!/usr/bin/env bats
# tests/fsck_verdict.bats: e3fsck -n's verdict equals e2fsck -fn's (issue
# 19, the verdict half). Each damage class is built here (debugfs -w
# sif/ssv/set_bg, dd of chosen bytes, truncate) on four base images —
# 1 KiB and 4 KiB blocks, ext2 and ext3, each with EAs on a file, a FIFO,
# symlinks and devices — and both checkers judge the same image: clean
# (exit 0) or errors (exit 4 or 12). Then, for the classes whose fixes are
# new here, e3fsck -y leaves what e2fsck -fn calls clean; and the writers
# keep off the blocks the bad-block inode lists.
load helper

# base images: NAME BLOCKSIZE TYPE, made once
BASES="k1e2 1024 ext2
k1e3 1024 ext3
k4e2 4096 ext2
k4e3 4096 ext3"

setup_file() {
	export W=/tmp/fsckv-verdict.$$
	mkdir -p "$W/tree/d"
	local i name bs type
	for i in 1 2 3 4 5 6; do head -c $((i * 3000)) /dev/urandom >"$W/tree/f$i"; done
	head -c 300000 /dev/urandom >"$W/tree/big"
	echo x >"$W/tree/d/x"
	mkfifo "$W/tree/fifo"
	ln -s /etc/passwd "$W/tree/sym"
	ln -s "$(printf 'l%.0s' $(seq 1 100))" "$W/tree/longsym"
	while read -r name bs type; do
		# small groups (several per image) for most classes; e2fsck
		# looks for backup superblocks only where the default group
		# size puts them, so the superblock classes use std- images
		mke2fs -q -F -t "$type" -b "$bs" -g $((bs == 1024 ? 2048 : 1024)) \
			-N 512 -d "$W/tree" "$W/$name.img" 16M >/dev/null 2>&1
		mke2fs -q -F -t "$type" -b "$bs" -N 512 -d "$W/tree" \
			"$W/std-$name.img" $((bs == 1024 ? 16 : 200))M >/dev/null 2>&1
		debugfs -w -f - "$W/$name.img" >/dev/null 2>&1 <<-EOF
		mknod cdev c 1 3
		mknod bdev b 7 0
		ea_set /f1 user.a $(printf 'v%.0s' $(seq 1 300))
		ea_set /fifo user.a $(printf 'v%.0s' $(seq 1 300))
		ea_set /sym user.a $(printf 'v%.0s' $(seq 1 300))
		ea_set /longsym user.a $(printf 'v%.0s' $(seq 1 300))
		ea_set /cdev user.a $(printf 'v%.0s' $(seq 1 300))
		ea_set /bdev user.a small
		EOF
	done <<<"$BASES"
	# the std- images get the same EAs and devices, after the backups
	# were written (so these are stale, as a kernel leaves them)
	while read -r name bs type; do
		debugfs -w -f - "$W/std-$name.img" >/dev/null 2>&1 <<-EOF
		mknod cdev c 1 3
		ea_set /fifo user.a $(printf 'v%.0s' $(seq 1 300))
		ea_set /sym user.a small
		EOF
	done <<<"$BASES"
}

teardown_file() {
	rm -rf "$W"
}

# geo IMAGE FIELD: a figure of the image's layout, from dumpe2fs
geo() {
	local img=$1
	case $2 in
	bs) dumpe2fs -h "$img" 2>/dev/null | sed -n 's/^Block size: *//p' ;;
	bpg) dumpe2fs -h "$img" 2>/dev/null | sed -n 's/^Blocks per group: *//p' ;;
	first) dumpe2fs -h "$img" 2>/dev/null | sed -n 's/^First block: *//p' ;;
	bbitmap0) dumpe2fs "$img" 2>/dev/null | sed -n 's/^  Block bitmap at \([0-9]*\).*/\1/p' | head -1 ;;
	bbitmap1) dumpe2fs "$img" 2>/dev/null | sed -n 's/^  Block bitmap at \([0-9]*\).*/\1/p' | sed -n 2p ;;
	itable0) dumpe2fs "$img" 2>/dev/null | sed -n 's/^  Inode table at \([0-9]*\)-.*/\1/p' | head -1 ;;
	free) # a free block of the last group, past what any file uses
		dumpe2fs "$img" 2>/dev/null | sed -n 's/^  Free blocks: \([0-9]*\)-\([0-9]*\).*/\2/p' | tail -1 ;;
	esac
}

# dbg IMAGE CMD...: debugfs -w commands, one per argument
dbg() {
	local img=$1 c; shift
	for c in "$@"; do
		debugfs -w -R "$c" "$img" >/dev/null 2>&1 || { echo "debugfs failed: $c" >&2; return 1; }
	done
}

# group1 IMAGE FIELD: group 1's block_bitmap, inode_bitmap or inode_table
group1() {
	local f
	case $2 in
	block_bitmap) f='Block bitmap at' ;; inode_bitmap) f='Inode bitmap at' ;;
	inode_table) f='Inode table at' ;;
	esac
	dumpe2fs "$1" 2>/dev/null | sed -n "/^Group 1:/,/^Group 2:/s/^  $f \([0-9]*\).*/\1/p"
}

# damage KIND IMAGE: build one damage class. Returns 2 for a class that
# does not apply to this image (a journal on ext2).
damage() {
	local kind=$1 img=$2 bs first bpg free b rc
	bs=$(geo "$img" bs); first=$(geo "$img" first); bpg=$(geo "$img" bpg)
	free=$(geo "$img" free)
	[ -n "$bs" ] && [ -n "$free" ] || { echo "no geometry for $img" >&2; return 1; }
	case $kind in
	# the bad-block inode
	bb_listed) # a list the bitmap agrees with: clean
		dbg "$img" "sif <1> block[0] $free" "sif <1> blocks $((bs / 512))" || return 1
		rc=0; e2fsck -fy "$img" >/dev/null 2>&1 || rc=$?
		[ $rc -le 1 ] || { echo "e2fsck -fy could not settle $img" >&2; return 1; } ;;
	bb_unmarked) dbg "$img" "sif <1> block[0] $free" "sif <1> blocks $((bs / 512))" ;;
	bb_illegal) dbg "$img" "sif <1> block[0] 99999999" "sif <1> blocks $((bs / 512))" ;;
	bb_ind_illegal) dbg "$img" "sif <1> block[IND] 99999999" "sif <1> blocks $((bs / 512))" ;;
	bb_itable) dbg "$img" "sif <1> block[0] $(( $(geo "$img" itable0) + 1 ))" "sif <1> blocks $((bs / 512))" ;;
	bb_bitmap) dbg "$img" "sif <1> block[0] $(geo "$img" bbitmap1)" "sif <1> blocks $((bs / 512))" ;;
	bb_super) dbg "$img" "sif <1> block[0] $((first + 1))" "sif <1> blocks $((bs / 512))" ;;
	bb_backup_super) # e2fsck only warns
		dbg "$img" "sif <1> block[0] $((first + bpg))" "sif <1> blocks $((bs / 512))" ;;
	bb_ind_meta) dbg "$img" "sif <1> block[IND] $(geo "$img" itable0)" "sif <1> blocks $((bs / 512))" ;;
	bb_file) b=$(debugfs -R "bmap /f2 0" "$img" 2>/dev/null)
		dbg "$img" "sif <1> block[0] $b" "sif <1> blocks $((bs / 512))" ;;
	bb_mode) dbg "$img" "sif <1> mode 0100644" ;;
	bb_links) dbg "$img" "sif <1> links_count 1" ;;
	bb_iblocks) dbg "$img" "sif <1> blocks 64" ;;	# not checked: clean
	# reserved inodes 3-6, 9, 10
	r3_block) dbg "$img" "sif <3> block[0] $free" ;;
	r4_links) dbg "$img" "sif <4> links_count 1" ;;
	r5_regular) dbg "$img" "sif <5> mode 0100644" ;;	# allowed: clean
	r5_dir) dbg "$img" "sif <5> mode 040755" ;;
	r6_mode) dbg "$img" "sif <6> mode 0100644" ;;
	r9_iblocks) dbg "$img" "sif <9> blocks 8" ;;
	r10_index) dbg "$img" "sif <10> flags 0x1000" ;;
	r10_garbage) dbg "$img" "sif <10> mode 0100644" "sif <10> block[0] $free" "sif <10> blocks $((bs / 512))" ;;
	r9_size) dbg "$img" "sif <9> size 1000" ;;	# allowed: clean
	r10_ea_range) dbg "$img" "sif <10> file_acl 99999999" ;;	# unreported: clean
	r6_ea_bad) dbg "$img" "sif <6> file_acl $free" "sif <6> blocks $((bs / 512))" ;;
	r7_index) dbg "$img" "sif <7> flags 0x1000" ;;
	r7_casefold) dbg "$img" "sif <7> flags 0x40000000" ;;
	r10_casefold) dbg "$img" "sif <10> flags 0x40000000" ;;
	r7_ea_bad) dbg "$img" "sif <7> file_acl $free" ;;
	r7_ea_range) dbg "$img" "sif <7> file_acl 99999999" ;;	# unreported: clean
	r7_ea_meta) dbg "$img" "sif <7> file_acl $((first + 1))" ;;
	r7_extents) dbg "$img" "sif <7> flags 0x80000" ;;
	r6_extents) dbg "$img" "sif <6> flags 0x80000" ;;	# no links: clean
	# summaries: a wrong superblock total alone is no error to e2fsck -n
	sb_free_total) dbg "$img" "ssv free_blocks_count 17" "ssv free_inodes_count 17" ;;
	bg_free) dbg "$img" "set_bg 1 free_blocks_count 7" ;;
	# extended attributes
	ea_no_feature) dbg "$img" "feature -ext_attr" ;;
	ea_planted_no_feature) dbg "$img" "feature -ext_attr" "sif /f3 file_acl $free" ;;
	# superblock and descriptors
	sb_zero) dd if=/dev/zero of="$img" bs=1024 seek=1 count=1 conv=notrunc status=none ;;
	gd_zero) dd if=/dev/zero of="$img" bs="$bs" seek=$((first + 1)) count=1 conv=notrunc status=none ;;
	bitmap_outside) dbg "$img" "set_bg 1 block_bitmap $((first + 3))" ;;
	ibitmap_outside) dbg "$img" "set_bg 1 inode_bitmap 99999999" ;;
	itable_outside) dbg "$img" "set_bg 0 inode_table $((first + 3 * bpg))" ;;
	# the same with every backup's descriptors alike: nothing sound to
	# fall back on, so the pieces are relocated (check_relocate.c)
	bb_outside_all) set_bg_everywhere "$img" "set_bg 1 block_bitmap $((first + 3))" ;;
	ib_outside_all) set_bg_everywhere "$img" "set_bg 1 inode_bitmap 99999999" ;;
	it_outside_all) set_bg_everywhere "$img" "set_bg 1 inode_table $((first + 3 * bpg))" ;;
	it_outside_g0) set_bg_everywhere "$img" "set_bg 0 inode_table $((first + 3 * bpg))" ;;
	# inside the group, over other metadata: the inode table over the
	# group's bitmaps, a block bitmap inside the group's inode table
	it_overlap) b=$(group1 "$img" block_bitmap)
		set_bg_everywhere "$img" "set_bg 1 inode_table $b" ;;
	# a bitmap on the superblock, inside group 0: e2fsck's descriptor
	# check refuses it, so a sound backup is used; with none, relocated
	ib_on_super) dbg "$img" "set_bg 0 inode_bitmap $first" ;;
	ib_on_super_all) set_bg_everywhere "$img" "set_bg 0 inode_bitmap $first" ;;
	bb_in_itable) b=$(group1 "$img" inode_table)
		set_bg_everywhere "$img" "set_bg 1 block_bitmap $((b + 1))" ;;
	# a directory whose mode says special file (e2fsck: "is really a
	# directory"); a device's number that happens to name a directory
	# block stays a device (one link, nothing past i_block[3])
	sock_dir) dbg "$img" "sif /d mode 0140755" ;;
	fifo_dir) dbg "$img" "sif /d mode 010755" ;;
	bdev_dir) dbg "$img" "sif /d mode 060755" ;;
	cdev_dev) dbg "$img" "sif /cdev block[0] $(debugfs -R 'bmap /d 0' "$img" 2>/dev/null)" ;;
	truncated) truncate -s $(( $(stat -c %s "$img") * 3 / 4 )) "$img" ;;
	# the journal
	jnl_pending)
		dumpe2fs -h "$img" 2>/dev/null | grep -q has_journal || return 2
		printf 'jo\njw -b %s /dev/null\njc\n' "$free" | debugfs -w -f - "$img" >/dev/null 2>&1
		dumpe2fs -h "$img" 2>/dev/null | grep -q needs_recovery || { echo "no pending journal" >&2; return 1; } ;;
	jnl_unannounced) # s_start set, needs_recovery clear: e2fsck -n asks, goes on
		dumpe2fs -h "$img" 2>/dev/null | grep -q has_journal || return 2
		b=$(debugfs -R "bmap <8> 0" "$img" 2>/dev/null)
		printf '\0\0\0\1' | dd of="$img" bs=1 seek=$((b * bs + 28)) conv=notrunc status=none ;;
	jnl_bad_maxlen) # s_maxlen past the journal inode's end: invalid to
		# both (under 1024 blocks e2fsck accepts and the kernel refuses
		# to mount; e3img refuses too: journal_sb.bats)
		dumpe2fs -h "$img" 2>/dev/null | grep -q has_journal || return 2
		b=$(debugfs -R "bmap <8> 0" "$img" 2>/dev/null)
		printf '\0\1\0\0' | dd of="$img" bs=1 seek=$((b * bs + 16)) conv=notrunc status=none ;;
	jnl_ro_feature) # an unknown read-only compat feature of the journal
		dumpe2fs -h "$img" 2>/dev/null | grep -q has_journal || return 2
		b=$(debugfs -R "bmap <8> 0" "$img" 2>/dev/null)
		printf '\0\0\0\1' | dd of="$img" bs=1 seek=$((b * bs + 44)) conv=notrunc status=none ;;
	*) echo "unknown damage $kind" >&2; return 1 ;;
	esac
}

# verdict CODE: clean, errors or failed, from an exit code
verdict() {
	if [ "$1" -eq 0 ]; then echo clean
	elif [ $(($1 & 4)) -ne 0 ]; then echo errors
	else echo "failed($1)"
	fi
}

# same_verdict KIND...: on every base image, each kind's damage judged
# alike by e2fsck -fn and e3fsck -n; a mismatch names image, kind and
# both outputs. Called from `||`: every check says `|| return 1`.
same_verdict() {
	local kind name bs type img rc e2 e3 bad=0
	for kind in "$@"; do
		while read -r name bs type; do
			img=$W/${PREFIX:-}$name-$kind.img
			cp "$W/${PREFIX:-}$name.img" "$img" || return 1
			rc=0; damage "$kind" "$img" || rc=$?
			[ $rc -ne 2 ] || continue
			[ $rc -eq 0 ] || return 1
			rc=0; e2fsck -fn "$img" >"$img.e2" 2>&1 || rc=$?
			e2=$(verdict $rc)
			rc=0; timeout 60 e3fsck -n "$img" >"$img.e3" 2>&1 || rc=$?
			e3=$(verdict $rc)
			if [ "$e2" != "$e3" ]; then
				echo "$name $kind: e2fsck -fn $e2, e3fsck -n $e3" >&2
				sed 's/^/  e2: /' "$img.e2" >&2
				sed 's/^/  e3: /' "$img.e3" >&2
				bad=1
			fi
			rm -f "$img" "$img.e2" "$img.e3"
		done <<<"$BASES"
	done
	[ $bad -eq 0 ] || return 1
}

# fixed_clean KIND...: e3fsck -y on the damage, then e2fsck -fn clean
fixed_clean() {
	local kind name bs type img rc
	for kind in "$@"; do
		while read -r name bs type; do
			img=$W/${PREFIX:-}$name-$kind-y.img
			cp "$W/${PREFIX:-}$name.img" "$img" || return 1
			rc=0; damage "$kind" "$img" || rc=$?
			[ $rc -ne 2 ] || continue
			[ $rc -eq 0 ] || return 1
			run timeout 60 e3fsck -y "$img"
			if [ "$status" -ne 0 ] && [ "$status" -ne 1 ]; then
				echo "$name $kind: e3fsck -y exited $status: $output" >&2
				return 1
			fi
			refute_output_has "with -y" || return 1
			assert_fsck_clean "$img" || { echo "after e3fsck -y of $name $kind" >&2; return 1; }
			rm -f "$img"
		done <<<"$BASES"
	done
}

@test "the base images are clean to both, EAs on FIFOs, symlinks and devices included" {
	local name bs type
	while read -r name bs type; do
		run e2fsck -fn "$W/$name.img"
		assert_status 0
		run e3fsck -n "$W/$name.img"
		assert_status 0
		[ "$(debugfs -R 'stat /cdev' "$W/$name.img" 2>/dev/null | sed -n 's/.*File ACL: \([0-9]*\).*/\1/p')" -gt 0 ]
	done <<<"$BASES"
}

@test "the bad-block inode: illegal, metadata and shared blocks, bad fields; as e2fsck -fn" {
	same_verdict bb_listed bb_unmarked bb_illegal bb_ind_illegal bb_itable \
		bb_bitmap bb_super bb_backup_super bb_ind_meta bb_file bb_mode \
		bb_links bb_iblocks
}

@test "reserved inodes 3-6, 9, 10: garbage in mode, blocks, flags; as e2fsck -fn" {
	same_verdict r3_block r4_links r5_regular r5_dir r6_mode r9_iblocks \
		r10_index r10_garbage r9_size r10_ea_range r6_ea_bad r7_index \
		r7_casefold r10_casefold r7_ea_bad r7_ea_range r7_ea_meta \
		r7_extents r6_extents
}

@test "a wrong superblock total alone: clean to e2fsck -fn and e3fsck -n; a group's count: errors to both" {
	same_verdict sb_free_total bg_free
}

@test "an EA block without ext_attr is an error, as e2fsck -fn" {
	same_verdict ea_no_feature ea_planted_no_feature
}

@test "zeroed superblock or descriptors, bitmaps or inode table outside their group: the backup is used, as e2fsck -fn" {
	PREFIX=std- same_verdict sb_zero gd_zero bitmap_outside ibitmap_outside itable_outside
	local img=$W/sb.img
	cp "$W/std-k1e3.img" "$img"
	damage sb_zero "$img"
	run e3fsck -n "$img"
	[ "$(grep -c 'using backup superblock' <<<"$output")" -eq 1 ]
	# the backup's counts are stale (debugfs wrote after mke2fs): those,
	# not the backup's use, are the errors; on a fresh image, none
	mke2fs -q -F -t ext3 -b 1024 "$img" 16M
	damage sb_zero "$img"
	run e3fsck -n "$img"
	assert_status 0
	assert_output_has "using backup superblock 8193"
	refute_output_has "still has errors"
	# e2fsck looks only where the default group size puts a backup; we
	# look further: a 2048-block group's backup at 2049 is found
	cp "$W/k1e2.img" "$img"
	damage sb_zero "$img"
	run e3fsck -n "$img"
	assert_output_has "using backup superblock 2049"
}

@test "a truncated image: -n says so and judges the rest (exit 0, as e2fsck -fn); -y stops before writing (exit 8)" {
	same_verdict truncated
	PREFIX=std- same_verdict truncated
	# cut where no group's metadata is lost (else both stop: a bitmap
	# cannot be read)
	local img=$W/tr.img sum
	cp "$W/std-k1e3.img" "$img"
	damage truncated "$img"
	run e3fsck -n "$img"
	assert_status 0
	assert_output_has "superblock or image truncated"
	sum=$(md5sum <"$img")
	run e3fsck -y "$img"
	assert_status 8
	assert_output_has "truncated"
	[ "$(md5sum <"$img")" = "$sum" ]
}

@test "a pending journal alone: -n says it needs replay and exits 0, as e2fsck -fn; journal superblocks at odds with the features" {
	same_verdict jnl_pending jnl_unannounced jnl_bad_maxlen jnl_ro_feature
	local img=$W/jp.img
	cp "$W/k1e3.img" "$img"
	damage jnl_pending "$img"
	run e3fsck -n "$img"
	assert_status 0
	assert_output_has "journal needs recovery"
}

@test "e3fsck -y leaves the new classes clean to e2fsck -fn, and never says 'with -y'" {
	fixed_clean bb_unmarked bb_illegal bb_ind_illegal bb_itable bb_super \
		bb_ind_meta bb_file bb_mode r3_block r5_dir r6_mode r9_iblocks \
		r10_index r10_garbage ea_planted_no_feature r7_index r7_ea_bad \
		r10_casefold sb_free_total r7_ea_meta r7_extents
	PREFIX=std- fixed_clean sb_zero gd_zero
}

# plant_bad IMAGE: inode 1 lists 12 free blocks spread over the free
# space of group 0 and 1, the bitmap left saying they are free (as a list
# planted without the bitmap). Prints the blocks.
plant_bad() {
	local img=$1 i b list=
	local runs
	runs=$(dumpe2fs "$img" 2>/dev/null | sed -n 's/^  Free blocks: \([0-9]*\)-\([0-9]*\).*/\1 \2/p' | head -2)
	i=0
	while read -r s e; do
		for b in $(seq "$s" $(( (e - s) / 6 + 1 )) "$e" | head -6); do
			[ $i -lt 12 ] || break
			dbg "$img" "sif <1> block[$i] $b" || return 1
			list="$list $b"; i=$((i + 1))
		done
	done <<<"$runs"
	dbg "$img" "sif <1> blocks $((i * $(geo "$img" bs) / 512))" || return 1
	echo "$list"
}

# nobody_owns IMAGE BLOCKS...: no inode maps any of the blocks
nobody_owns() {
	local img=$1 out; shift
	out=$(debugfs -R "icheck $*" "$img" 2>/dev/null) || return 1
	if grep -v '^Block' <<<"$out" | grep -vq '<block not found>'; then
		echo "blocks on the bad-block list given to files:" >&2
		echo "$out" >&2
		return 1
	fi
}

@test "writers never allocate a block the bad-block inode lists, even when the bitmap says it is free" {
	local img=$W/wr.img list
	mkdir -p "$W/fill"
	head -c 6000000 /dev/urandom >"$W/fill/big"
	for i in $(seq 1 60); do head -c $((i * 1500)) /dev/urandom >"$W/fill/s$i"; done
	# e3cp
	e3mkfs -b 1024 -g 8192 "$img" 16M >/dev/null
	list=$(plant_bad "$img")
	[ -n "$list" ]
	run e3cp "$W/fill" "$img:/"
	assert_status 0
	nobody_owns "$img" $list
	# without the list's blocks held back, the same copy takes them: the
	# test can tell
	e3mkfs -b 1024 -g 8192 "$W/ref.img" 16M >/dev/null
	e3cp "$W/fill" "$W/ref.img:/" >/dev/null
	run debugfs -R "icheck $list" "$W/ref.img"
	[ "$(grep -vc '<block not found>\|^Block' <<<"$output")" -gt 0 ]
	# e3defrag, on fragmented files over a list of the free space
	mke2fs -q -F -t ext3 -b 1024 "$W/df.img" 16M
	for i in 1 2 3 4 5 6; do
		debugfs -w -R "write $W/fill/s$((i * 10)) a$i" "$W/df.img" >/dev/null 2>&1
		debugfs -w -R "write $W/fill/s$((i * 7)) b$i" "$W/df.img" >/dev/null 2>&1
		debugfs -w -R "rm b$i" "$W/df.img" >/dev/null 2>&1
	done
	list=$(plant_bad "$W/df.img")
	# e3defrag checks first and refuses a list the bitmap disagrees with
	run e3defrag "$W/df.img"
	assert_status 8
	assert_output_has "run e3fsck first"
	run e3fsck -y "$W/df.img"
	assert_status 1
	assert_fsck_clean "$W/df.img"
	run e3defrag "$W/df.img"
	[ "$status" -eq 0 ] || [ "$status" -eq 1 ] || { echo "e3defrag: $output" >&2; return 1; }
	nobody_owns "$W/df.img" $list
	assert_fsck_clean "$W/df.img"
	[ "$(debugfs -R 'stat <1>' "$W/df.img" 2>/dev/null | grep -c "$(echo $list | cut -d' ' -f1)")" -ge 1 ]
	# e3fsck -n on the copies: only the bitmap bits the list left free
	run e3fsck -n "$img"
	assert_output_has "in use but marked free"
	refute_output_has "claimed by inode"
}

@test "bitmaps and inode tables outside their group or over other metadata, every backup alike: verdict as e2fsck -fn, -y relocates them" {
	local kinds="bb_outside_all ib_outside_all it_outside_all it_outside_g0 it_overlap bb_in_itable ib_on_super"
	same_verdict $kinds
	# not compared: on the 4 KiB ext2 base e2fsck -n relocates this one
	# (no question asked), fails to write it and exits 0
	fixed_clean $kinds ib_on_super_all
	# -n names the piece; -y moves it to free blocks of its group. The
	# table is claimed first (e2fsck's order): the bitmaps it covers move
	local img=$W/reloc.img it bb ib ipb
	cp "$W/k1e3.img" "$img"
	damage it_overlap "$img"
	run e3fsck -n "$img"
	assert_status 4
	assert_output_has "group 1's block bitmap at 2306 conflicts with other group metadata"
	assert_output_has "group 1's inode bitmap at 2307 conflicts"
	run e3fsck -y "$img"
	assert_status 1
	assert_output_has "relocate it"
	assert_fsck_clean "$img"
	it=$(group1 "$img" inode_table); bb=$(group1 "$img" block_bitmap)
	ib=$(group1 "$img" inode_bitmap)
	ipb=$(dumpe2fs -h "$img" 2>/dev/null | sed -n 's/^Inode blocks per group: *//p')
	[ "$it" -eq 2306 ] || { echo "table moved: $it" >&2; return 1; }
	for b in $bb $ib; do
		[ "$b" -gt 2049 ] && [ "$b" -le 4096 ] || { echo "bitmap at $b" >&2; return 1; }
		[ "$b" -ge $((it + ipb)) ] || { echo "bitmap $b in the table" >&2; return 1; }
	done
}

@test "a directory whose mode says socket, FIFO or device: verdict as e2fsck -fn, -y makes it a directory again" {
	same_verdict sock_dir fifo_dir bdev_dir cdev_dev
	fixed_clean sock_dir fifo_dir bdev_dir
	local img=$W/rd.img
	cp "$W/k4e3.img" "$img"
	damage cdev_dev "$img"
	run e3fsck -n "$img"
	assert_status 0
}
