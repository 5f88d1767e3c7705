#!/usr/bin/env bash
# tests/corrupt.sh: damage an ext3 image in one named way, mostly through
# `debugfs -w`, so fsck tests can check that each kind is found and fixed.
#   corrupt.sh --base IMAGE      make the base image the kinds expect
#   corrupt.sh --list            print "KIND EXPECTED_PROBLEM_ID FIXABLE EXITS"
#                                (EXITS: e3fsck's exit codes with -n and
#                                with -y, "4/1" unless the table says)
#   corrupt.sh KIND IMAGE        apply one kind of damage to IMAGE
# Paths inside the base image: /a/f1../a/f40 (f40 and up use indirect
# blocks), /big (double indirect), /c (a directory), /d/h0..h199 (an htree
# directory), /sym, /longsym, /fifo, /empty, /xa (an EA block).
set -eu
export PATH=/sbin:/usr/sbin:$PATH

die() { echo "corrupt.sh: $*" >&2; exit 2; }

dbg() {	# dbg IMAGE CMD...: one debugfs -w command, quietly
	local img=$1; shift
	debugfs -w -R "$*" "$img" >/dev/null 2>&1 || die "debugfs failed: $*"
}

ino_of() { debugfs -R "stat $2" "$1" 2>/dev/null | sed -n 's/^Inode: \([0-9]*\).*/\1/p'; }
blk_of() { debugfs -R "bmap $2 $3" "$1" 2>/dev/null | tail -1; }
bsize() { dumpe2fs -h "$1" 2>/dev/null | sed -n 's/^Block size: *//p'; }
field() { debugfs -R "stat $2" "$1" 2>/dev/null; }

# put_bytes IMAGE BLOCK OFFSET HEX: write raw bytes into a block
put_bytes() {
	local bs; bs=$(bsize "$1")
	printf "$4" | dd of="$1" bs=1 seek=$(($2 * bs + $3)) conv=notrunc status=none
}

garbage_block() {	# garbage_block IMAGE BLOCK
	local bs; bs=$(bsize "$1")
	head -c "$bs" /dev/urandom | dd of="$1" bs="$bs" seek="$2" conv=notrunc status=none
}

make_base() {
	local img=$1 tree i
	tree=$(mktemp -d /tmp/fsck-corrupt-tree.XXXXXX)
	mkdir -p "$tree/a" "$tree/c/sub" "$tree/d"
	for i in $(seq 1 45); do head -c $((i * 700)) /dev/zero | tr '\0' x > "$tree/a/f$i"; done
	head -c 400000 /dev/zero | tr '\0' y > "$tree/big"
	for i in $(seq 0 199); do echo "$i" > "$tree/d/h$i"; done
	echo hello > "$tree/c/sub/x"
	: > "$tree/empty"
	ln -s /etc/passwd "$tree/sym"
	ln -s "$(printf 'l%.0s' $(seq 1 100))" "$tree/longsym"
	mkfifo "$tree/fifo"
	echo attr > "$tree/xa"
	rm -f "$img"
	mke2fs -q -F -t ext3 -b 1024 -g 2048 -N 512 -O dir_index -d "$tree" "$img" 8M
	rm -rf "$tree"
	# an EA block, and index /d as the kernel would (e2fsck -D)
	debugfs -w -R "ea_set /xa user.big $(printf 'v%.0s' $(seq 1 300))" "$img" >/dev/null 2>&1
	e2fsck -fyD "$img" >/dev/null 2>&1 || true
	e2fsck -fn "$img" >/dev/null 2>&1 || die "base image is not clean"
}

# KIND EXPECTED_ID FIXABLE(y/n) [EXITS -n/-y, default 4/1]
# error_state: the error flag alone is no inconsistency: e2fsck -fn exits
# 0 and -fy, clearing it on a clean filesystem, 0 too, and so does e3fsck
KINDS='
clri                dir_inode_unused        y
links_high          inode_link_count        y
links_zero          dir_inode_unused        y
bad_mode            inode_bad_mode          y
illegal_block       inode_illegal_block     y
bad_indirect        inode_bad_indirect      y
i_blocks            inode_i_blocks          y
i_size              inode_i_size            y
dtime               inode_dtime             y
freeb               bitmap_block_used       y
setb                bitmap_block_free       y
freei               bitmap_inode_used       y
seti                bitmap_inode_free       y
unlink              inode_unattached        y
extra_link          inode_link_count        y
sb_free_blocks      sb_free_blocks          y 0/1
sb_free_inodes      sb_free_inodes          y 0/1
bg_free_blocks      group_free_blocks       y
bg_free_inodes      group_free_inodes       y
bg_used_dirs        group_dirs              y
dup_block           inode_dup_block         y
dup_in_one          inode_dup_block         y
dir_garbage         dir_rec_len             y
ind_garbage         inode_illegal_block     y
unlink_dir          dir_unconnected         y
fast_symlink        inode_fast_symlink      y
fifo_blocks         inode_device            y
orphan              sb_orphan_list          y
extents_flag        inode_flags_ext4        y
ea_range            inode_ea_block_range    y
ea_refcount         inode_ea_refcount       y
ea_header           inode_ea_header         y
no_lost_found       no_lost_found           y
filetype            dir_filetype            y
htree_limit         htree_limit             y
error_state         sb_error_state          y 0/0
metadata_block      inode_block_in_metadata y
bad_bg_bitmap       sb_unusable             y
dotdot              dir_dotdot              y
dir_size            inode_dir_size          y
faddr               inode_field_nonzero     y
dir_size_high       inode_field_nonzero     y
resize_inode        inode_resize_bad        y
htree_hash          htree_hash_range        y
htree_unref         htree_unreferenced      y
extra_isize         inode_extra_isize       y
special_size        inode_special_size      y
low_dtime           inode_low_dtime         y
encrypt_flag        inode_flag              y
index_flag_file     inode_flag              y
dotdot_filetype     dir_filetype            y
bitmap_padding      bitmap_padding          y
resize_backup       inode_resize_bad        y
dir_hole            inode_dir_hole          y
ext4_feature        sb_feature_unsupported  n
'

apply() {
	local kind=$1 img=$2 ino b b2
	case $kind in
	clri) dbg "$img" clri /a/f3 ;;
	links_high) dbg "$img" set_inode_field /a/f4 links_count 5 ;;
	links_zero) dbg "$img" set_inode_field /a/f5 links_count 0 ;;
	bad_mode) dbg "$img" set_inode_field /a/f6 mode 0170644 ;;
	illegal_block) dbg "$img" set_inode_field /a/f7 block[1] 9999999 ;;
	bad_indirect) dbg "$img" set_inode_field /a/f44 block[IND] 8888888 ;;
	i_blocks) dbg "$img" set_inode_field /a/f8 blocks 2 ;;
	i_size) dbg "$img" set_inode_field /a/f20 size 100 ;;
	dtime) dbg "$img" set_inode_field /a/f9 dtime 1234567 ;;
	freeb) dbg "$img" freeb "$(blk_of "$img" /a/f10 0)" ;;
	setb) dbg "$img" setb 8000 ;;
	freei) dbg "$img" freei /a/f11 ;;
	seti) dbg "$img" seti "<500>" ;;
	unlink) dbg "$img" unlink /a/f12 ;;
	extra_link) dbg "$img" link /a/f13 /c/f13link ;;
	sb_free_blocks) dbg "$img" set_super_value free_blocks_count 17 ;;
	sb_free_inodes) dbg "$img" set_super_value free_inodes_count 17 ;;
	bg_free_blocks) dbg "$img" set_bg 1 free_blocks_count 7 ;;
	bg_free_inodes) dbg "$img" set_bg 1 free_inodes_count 7 ;;
	bg_used_dirs) dbg "$img" set_bg 0 used_dirs_count 99 ;;
	dup_block) dbg "$img" set_inode_field /a/f14 block[0] "$(blk_of "$img" /a/f15 0)" ;;
	dup_in_one) dbg "$img" set_inode_field /a/f16 block[1] "$(blk_of "$img" /a/f16 0)" ;;
	dir_garbage) garbage_block "$img" "$(blk_of "$img" /c 0)" ;;
	ind_garbage)
		b=$(field "$img" /a/f43 | grep -o '(IND):[0-9]*' | cut -d: -f2)
		garbage_block "$img" "$b" ;;
	unlink_dir) dbg "$img" unlink /c/sub ;;
	fast_symlink) dbg "$img" set_inode_field /sym size 200 ;;
	fifo_blocks) dbg "$img" set_inode_field /fifo flags 0x1000 ;;
	orphan)
		ino=$(ino_of "$img" /a/f17)
		dbg "$img" unlink /a/f17
		dbg "$img" set_inode_field "<$ino>" links_count 0
		dbg "$img" set_inode_field "<$ino>" dtime 0
		dbg "$img" set_super_value last_orphan "$ino" ;;
	extents_flag) dbg "$img" set_inode_field /a/f18 flags 0x80000 ;;
	ea_range) dbg "$img" set_inode_field /xa file_acl 7777777 ;;
	ea_refcount)
		b=$(field "$img" /xa | sed -n 's/.*File ACL: \([0-9]*\).*/\1/p')
		put_bytes "$img" "$b" 4 '\x05' ;;
	ea_header)
		b=$(field "$img" /xa | sed -n 's/.*File ACL: \([0-9]*\).*/\1/p')
		put_bytes "$img" "$b" 0 '\x00\x00\x00\x00' ;;
	no_lost_found) dbg "$img" rmdir /lost+found ;;
	filetype) dbg "$img" set_inode_field /empty mode 020644 ;;
	htree_limit) put_bytes "$img" "$(blk_of "$img" /d 0)" 32 '\x07\x00' ;;
	error_state) dbg "$img" set_super_value state 3 ;;
	metadata_block)
		b=$(dumpe2fs "$img" 2>/dev/null | sed -n 's/.*Inode table at \([0-9]*\)-.*/\1/p' | head -1)
		dbg "$img" set_inode_field /a/f19 block[0] "$((b + 2))" ;;
	bad_bg_bitmap) dbg "$img" set_bg 1 block_bitmap 3 ;;
	dotdot)	# /c/sub's '..' made to name the root
		b=$(blk_of "$img" /c/sub 0)
		put_bytes "$img" "$b" 12 '\x02\x00\x00\x00' ;;
	dir_size) dbg "$img" set_inode_field /c size 1500 ;;
	faddr) dbg "$img" set_inode_field /a/f21 faddr 77 ;;
	dir_size_high) dbg "$img" set_inode_field /c size $(((1 << 32) + 1024)) ;;
	resize_inode) dbg "$img" set_inode_field "<7>" block[2] 5000 ;;
	htree_hash)	# index entry 1 given entry 2's hash: leaf 1's names fall below it
		b=$(blk_of "$img" /d 0)
		dd if="$img" of="$img" bs=1 skip=$((b * $(bsize "$img") + 48)) \
			seek=$((b * $(bsize "$img") + 40)) count=4 conv=notrunc status=none ;;
	htree_unref)	# index entry 1 pointed at entry 2's leaf: leaf 1 unreferenced
		b=$(blk_of "$img" /d 0)
		dd if="$img" of="$img" bs=1 skip=$((b * $(bsize "$img") + 52)) \
			seek=$((b * $(bsize "$img") + 44)) count=4 conv=notrunc status=none ;;
	extra_isize) dbg "$img" set_inode_field /a/f23 extra_isize 1056 ;;
	special_size) dbg "$img" set_inode_field /fifo size 4096 ;;
	low_dtime)	# an unused inode whose dtime looks like an orphan link
		dbg "$img" set_inode_field "<500>" dtime 3 ;;
	encrypt_flag) dbg "$img" set_inode_field /a/f24 flags 0x800 ;;
	index_flag_file) dbg "$img" set_inode_field /a/f25 flags 0x1000 ;;
	dotdot_filetype)	# '..' of /c typed as a regular file
		put_bytes "$img" "$(blk_of "$img" /c 0)" 19 '\x01' ;;
	bitmap_padding)	# a bit past the group in group 0's block bitmap
		b=$(dumpe2fs "$img" 2>/dev/null | sed -n 's/.*Block bitmap at \([0-9]*\).*/\1/p' | head -1)
		put_bytes "$img" "$b" $(($(bsize "$img") - 1)) '\x7f' ;;
	resize_backup)	# a reserved GDT block's pointer to its backup copy
		b=$(dumpe2fs "$img" 2>/dev/null | sed -n 's/.*Reserved GDT blocks at \([0-9]*\)-.*/\1/p' | head -1)
		put_bytes "$img" "$b" 0 '\x00\x00\x00\x00' ;;
	dir_hole) dbg "$img" set_inode_field /d block[2] 0 ;;
	ext4_feature) dbg "$img" feature extent ;;
	*) die "unknown kind: $kind" ;;
	esac
}

case ${1:-} in
--base) [ $# -eq 2 ] || die "usage: corrupt.sh --base IMAGE"; make_base "$2" ;;
--list) printf '%s\n' "$KINDS" | sed '/^$/d' | awk '{print $1, $2, $3, ($4 == "" ? "4/1" : $4)}' ;;
"") die "usage: corrupt.sh --base IMAGE | --list | KIND IMAGE" ;;
*) [ $# -eq 2 ] || die "usage: corrupt.sh KIND IMAGE"; apply "$1" "$2" ;;
esac
