#!/usr/bin/env bats
# tests/corrupt_cp.bats: e3cp into damaged images (the cases
# bench/fuzz_cp.sh found): one "e3cp: IMAGE: reason" line, exit 2, and an
# image no worse than it was (e2fsck -fn finds no more problems after).
load helper

setup_file() {
	export T=/tmp/corrupt-cp-bats-$$
	mkdir -p "$T/src/newdir"
	bash "$E3_TOP/tests/corrupt.sh" --base "$T/base.img" >/dev/null
	echo small > "$T/src/new1"
	head -c 5000 /dev/zero | tr '\0' z > "$T/src/newbig"
	echo inner > "$T/src/newdir/inner"
	ln -s new1 "$T/src/newlink"
}

teardown_file() {
	rm -rf "/tmp/corrupt-cp-bats-$$"
}

# problems IMAGE: "RC COUNT", e2fsck -fn's exit code and "? no" answers
problems() {
	local out rc
	out=$(e2fsck -fn "$1" 2>&1); rc=$?
	echo "$rc $(grep -c '? no$' <<<"$out")"
}

# refused IMAGE: e3cp of the source tree exits 2 with exactly one line,
# "e3cp: IMAGE: ...", and leaves e2fsck no more to fix than before
refused() {
	local img=$1 before after
	before=$(problems "$img")
	run e3cp --quiet "$T/src/." "$img"
	assert_status 8 || return 1
	if [ "${#lines[@]}" -ne 1 ] || [[ "${lines[0]}" != "e3cp: $img: "?* ]]; then
		echo "want one line 'e3cp: $img: reason', got:" >&2
		printf '%s\n' "$output" >&2
		return 1
	fi
	after=$(problems "$img")
	if [ "${after#* }" -gt "${before#* }" ]; then
		echo "e2fsck rc/problems before $before, after $after" >&2
		return 1
	fi
}

# refute_warning: libext2fs printed nothing of its own (its bitmap
# warnings are what trusting a bad descriptor looks like)
refute_warning() {
	if [[ "$output" == *"Illegal block number"* ]]; then
		printf '%s\n' "$output" >&2
		return 1
	fi
}

blk() { debugfs -R "bmap $2 $3" "$1" 2>/dev/null | tail -1; }

fill_block() {	# fill_block IMAGE BLOCK BYTE(octal)
	head -c 1024 /dev/zero | tr '\0' "\\$3" |
		dd of="$1" bs=1024 seek="$2" conv=notrunc status=none
}

@test "the base image takes the tree cleanly" {
	cp "$T/base.img" "$T/ok.img"
	run e3cp --quiet "$T/src/." "$T/ok.img"
	assert_status 0
	[ -z "$output" ]
	assert_fsck_clean "$T/ok.img"
	assert_img_file "$T/ok.img" /new1 "$T/src/new1"
	assert_img_file "$T/ok.img" /newbig "$T/src/newbig"
	assert_img_file "$T/ok.img" /newdir/inner "$T/src/newdir/inner"
	run debugfs -R "stat /newlink" "$T/ok.img"
	assert_output_has 'Fast link dest: "new1"'
}

@test "a corrupt directory block met while copying: one line naming the image and the entry" {
	cp "$T/base.img" "$T/dir.img"
	fill_block "$T/dir.img" "$(blk "$T/dir.img" / 0)" 377
	refused "$T/dir.img"
	assert_output_has "copying $T/src/./"
	assert_output_has "directory corrupted"
}

# a group descriptor field of group G in the base image, by dumpe2fs
bg_field() { dumpe2fs "$1" 2>/dev/null | sed -n "/^Group $2:/,/^Group/s/.*$3 at \([0-9]*\).*/\1/p" | head -1; }

@test "an inode table outside its group: refused before anything is read from it, image untouched" {
	cp "$T/base.img" "$T/itab.img"
	debugfs -w -R "set_bg 1 inode_table 8388740" "$T/itab.img" >/dev/null 2>&1
	cp "$T/itab.img" "$T/itab.orig"
	refused "$T/itab.img"
	assert_output_has "Corrupt group descriptor"
	refute_warning
	cmp "$T/itab.img" "$T/itab.orig"
}

@test "a block bitmap in another group (corrupt.sh bad_bg_bitmap): refused, image untouched" {
	cp "$T/base.img" "$T/bbm.img"
	bash "$E3_TOP/tests/corrupt.sh" bad_bg_bitmap "$T/bbm.img"
	cp "$T/bbm.img" "$T/bbm.orig"
	refused "$T/bbm.img"
	assert_output_has "bad block for block bitmap"
	cmp "$T/bbm.img" "$T/bbm.orig"
}

@test "a zeroed block bitmap: refused, not blocks in use handed to new files" {
	cp "$T/base.img" "$T/zb.img"
	fill_block "$T/zb.img" "$(bg_field "$T/zb.img" 0 'Block bitmap')" 000
	cp "$T/zb.img" "$T/zb.orig"
	refused "$T/zb.img"
	assert_output_has "block bitmap disagrees"
	cmp "$T/zb.img" "$T/zb.orig"
}

@test "a zeroed inode bitmap: refused, not inodes in use handed to new files" {
	cp "$T/base.img" "$T/zi.img"
	fill_block "$T/zi.img" "$(bg_field "$T/zi.img" 0 'Inode bitmap')" 000
	cp "$T/zi.img" "$T/zi.orig"
	refused "$T/zi.img"
	assert_output_has "inode bitmap disagrees"
	cmp "$T/zi.img" "$T/zi.orig"
}

@test "one block's bit flipped in a bitmap: refused; --force still writes" {
	cp "$T/base.img" "$T/flip.img"
	debugfs -w -R "freeb $(blk "$T/flip.img" /a/f10 0)" "$T/flip.img" >/dev/null 2>&1
	# debugfs freeb also fixes the counts: put group 0's back as it was
	debugfs -w -R "set_bg 0 free_blocks_count 0" "$T/flip.img" >/dev/null 2>&1
	refused "$T/flip.img"
	assert_output_has "block bitmap disagrees"
	run e3cp --quiet --force "$T/src/." "$T/flip.img"
	assert_status 0
}

@test "a root inode that is not a directory: one line, not one per entry" {
	cp "$T/base.img" "$T/root.img"
	debugfs -w -R "set_inode_field <2> mode 0100644" "$T/root.img" >/dev/null 2>&1
	cp "$T/root.img" "$T/root.orig"
	refused "$T/root.img"
	assert_output_has "root inode is not a directory"
	cmp "$T/root.img" "$T/root.orig"
}

@test "a cleared root inode: refused" {
	cp "$T/base.img" "$T/clri.img"
	debugfs -w -R "clri <2>" "$T/clri.img" >/dev/null 2>&1
	refused "$T/clri.img"
	assert_output_has "root inode is not a directory"
}

@test "a superblock whose first data block e2fsck rejects: refused, image untouched" {
	cp "$T/base.img" "$T/fdb.img"
	debugfs -w -R "set_super_value first_data_block 0" "$T/fdb.img" >/dev/null 2>&1
	cp "$T/fdb.img" "$T/fdb.orig"
	refused "$T/fdb.img"
	assert_output_has "superblock is inconsistent"
	cmp "$T/fdb.img" "$T/fdb.orig"
}

@test "a first inode inside the reserved ones: refused" {
	cp "$T/base.img" "$T/fino.img"
	debugfs -w -R "set_super_value first_ino 1" "$T/fino.img" >/dev/null 2>&1
	refused "$T/fino.img"
	assert_output_has "superblock is inconsistent"
}

@test "an image file shorter than its filesystem: refused before reading past its end, untouched" {
	cp "$T/base.img" "$T/short.img"
	truncate -s 7M "$T/short.img"
	cp "$T/short.img" "$T/short.orig"
	refused "$T/short.img"
	assert_output_has "smaller than its filesystem"
	cmp "$T/short.img" "$T/short.orig"
}

@test "a journal whose block map names one block twice: refused, not its superblock overwritten by the log" {
	cp "$T/base.img" "$T/jdup.img"
	debugfs -w -R "set_inode_field <8> block[1] $(blk "$T/jdup.img" '<8>' 0)" "$T/jdup.img" >/dev/null 2>&1
	cp "$T/jdup.img" "$T/jdup.orig"
	refused "$T/jdup.img"
	assert_output_has "journal inode maps"
	cmp "$T/jdup.img" "$T/jdup.orig"
}

@test "a journal whose indirect block maps past the end of the filesystem: refused (fuzz_cp seed 2 case 42)" {
	local ind
	cp "$T/base.img" "$T/jind.img"
	ind=$(debugfs -R "stat <8>" "$T/jind.img" 2>/dev/null | grep -o '(IND):[0-9]*' | head -1 | cut -d: -f2)
	printf '\x7b\x3f\xe0\xc5' | dd of="$T/jind.img" bs=1 seek=$((ind * 1024 + 8)) conv=notrunc status=none
	cp "$T/jind.img" "$T/jind.orig"
	refused "$T/jind.img"
	assert_output_has "journal inode maps"
	cmp "$T/jind.img" "$T/jind.orig"
}

# --overwrite of a file whose block map is damaged: the removal would free
# what the map names, and the allocator hand it to the next file. /victim
# (14 blocks: 12 direct, an indirect block, 2 behind it) is put into a copy
# of the base image, its map is damaged, and e3cp --overwrite must stop
# with one line and change nothing: BLOCK's bytes and the map stay.
put_victim() {
	mkdir -p "$T/ov" || return 1
	head -c 14000 /dev/urandom > "$T/ov/victim"
	cp "$T/base.img" "$1" || return 1
	e3cp --quiet "$T/ov/." "$1" || return 1
	assert_img_file "$1" /victim "$T/ov/victim" || return 1
}

# refused_damaged IMAGE BLOCK WHAT E3CP_ARGS...: e3cp stops with exit 2
# and one line "e3cp: IMAGE: ...WHAT: file's blocks are damaged...",
# BLOCK's bytes are as they were and e2fsck finds no more to fix.
# Called from `||` (set -e is off there): every check says `|| return 1`.
refused_damaged() {
	local img=$1 b=$2 what=$3 sum before after
	shift 3
	[ -n "$b" ] || { echo "refused_damaged: no block given" >&2; return 1; }
	sum=$(dd if="$img" bs=1024 skip="$b" count=1 status=none | md5sum) || return 1
	before=$(problems "$img")
	run e3cp --quiet "$@"
	assert_status 8 || return 1
	if [ "${#lines[@]}" -ne 1 ] ||
	   [[ "${lines[0]}" != "e3cp: $img: "*"$what: file's blocks are damaged"* ]]; then
		printf 'want one line naming the image, %s and the damage, got:\n%s\n' \
			"$what" "$output" >&2
		return 1
	fi
	if [ "$(dd if="$img" bs=1024 skip="$b" count=1 status=none | md5sum)" != "$sum" ]; then
		echo "block $b changed" >&2
		return 1
	fi
	after=$(problems "$img")
	if [ "${after#* }" -gt "${before#* }" ]; then
		echo "e2fsck rc/problems before $before, after $after" >&2
		return 1
	fi
}

refused_overwrite() {
	local img=$1 map
	map=$(debugfs -R "blocks /victim" "$img" 2>/dev/null)
	[ -n "$map" ] || { echo "no /victim in $img" >&2; return 1; }
	refused_damaged "$img" "$2" /victim --overwrite "$T/ov/." "$img" || return 1
	assert_eq "/victim's block map" "$(debugfs -R "blocks /victim" "$img" 2>/dev/null)" "$map" || return 1
}

@test "--overwrite of a file whose map names the block bitmap: refused, the bitmap not given to the new file" {
	local bbm
	put_victim "$T/ovbm.img"
	bbm=$(bg_field "$T/ovbm.img" 0 'Block bitmap')
	debugfs -w -R "sif /victim block[1] $bbm" "$T/ovbm.img" >/dev/null 2>&1
	refused_overwrite "$T/ovbm.img" "$bbm"
}

@test "--overwrite of a file whose map names a journal block: refused" {
	local jb
	put_victim "$T/ovj.img"
	jb=$(blk "$T/ovj.img" '<8>' 3)
	debugfs -w -R "sif /victim block[2] $jb" "$T/ovj.img" >/dev/null 2>&1
	refused_overwrite "$T/ovj.img" "$jb"
}

@test "--overwrite of a file whose map names the journal's indirect block: refused" {
	local ind
	put_victim "$T/ovji.img"
	ind=$(debugfs -R "stat <8>" "$T/ovji.img" 2>/dev/null | grep -o '(IND):[0-9]*' | head -1 | cut -d: -f2)
	[ -n "$ind" ]
	debugfs -w -R "sif /victim block[4] $ind" "$T/ovji.img" >/dev/null 2>&1
	refused_overwrite "$T/ovji.img" "$ind"
}

@test "--overwrite of a file whose map names a free block: refused" {
	local fb
	put_victim "$T/ovf.img"
	fb=$(dumpe2fs "$T/ovf.img" 2>/dev/null | sed -n 's/^ \+Free blocks: \([0-9]\+\).*/\1/p' | head -1)
	[ -n "$fb" ]
	debugfs -w -R "sif /victim block[3] $fb" "$T/ovf.img" >/dev/null 2>&1
	refused_overwrite "$T/ovf.img" "$fb"
}

@test "--overwrite of a file whose map names one block twice: refused" {
	put_victim "$T/ovd.img"
	debugfs -w -R "sif /victim block[5] $(blk "$T/ovd.img" /victim 0)" "$T/ovd.img" >/dev/null 2>&1
	refused_overwrite "$T/ovd.img" "$(blk "$T/ovd.img" /victim 0)"
}

@test "--overwrite of a file whose indirect block is an inode table block: refused before it is read as pointers" {
	local itb
	put_victim "$T/ovi.img"
	itb=$(bg_field "$T/ovi.img" 0 'Inode table')
	debugfs -w -R "sif /victim block[IND] $itb" "$T/ovi.img" >/dev/null 2>&1
	[ "$(debugfs -R "stat /victim" "$T/ovi.img" 2>/dev/null | grep -c "(IND):$itb")" -eq 1 ]
	refused_overwrite "$T/ovi.img" "$itb"
}

# the File ACL (EA block) of a path
ea_of() { debugfs -R "stat $2" "$1" 2>/dev/null | sed -n 's/.*File ACL: \([0-9]*\).*/\1/p'; }

@test "--overwrite of a file whose map names its own EA block: refused, not freed twice" {
	local ea
	put_victim "$T/ovea.img"
	debugfs -w -R "ea_set /victim user.big $(printf 'v%.0s' $(seq 1 300))" "$T/ovea.img" >/dev/null 2>&1
	ea=$(ea_of "$T/ovea.img" /victim)
	[ -n "$ea" ] && [ "$ea" -gt 0 ]
	debugfs -w -R "sif /victim block[3] $ea" "$T/ovea.img" >/dev/null 2>&1
	refused_overwrite "$T/ovea.img" "$ea"
}

@test "--overwrite of a file whose EA block is another file's data: refused before anything is freed" {
	local b
	put_victim "$T/oved.img"
	b=$(blk "$T/oved.img" /a/f10 0)
	debugfs -w -R "sif /victim file_acl $b" "$T/oved.img" >/dev/null 2>&1
	[ "$(ea_of "$T/oved.img" /victim)" = "$b" ]
	refused_overwrite "$T/oved.img" "$b"
}

@test "--overwrite of a healthy file still replaces it (the checks pass a sound map)" {
	put_victim "$T/ovok.img"
	head -c 5000 /dev/urandom > "$T/ov/victim"
	run e3cp --quiet --overwrite "$T/ov/." "$T/ovok.img"
	assert_status 0
	assert_fsck_clean "$T/ovok.img"
	assert_img_file "$T/ovok.img" /victim "$T/ov/victim"
}

@test "new names into a directory whose map names an inode table block that reads as a directory block: refused, the table untouched" {
	local img=$T/dtab.img itb
	cp "$T/base.img" "$img"
	itb=$(bg_field "$img" 0 'Inode table')
	# inode 1 of size 1024: its table block reads as one empty entry
	debugfs -w -R "sif <1> size 1024" "$img" >/dev/null 2>&1
	debugfs -w -R "sif /c block[0] $itb" "$img" >/dev/null 2>&1
	refused_damaged "$img" "$itb" "" "$T/src/." "$img:/c"
}

@test "new names into an indexed directory whose leaves are an inode table block: refused, the table untouched" {
	local img=$T/dxtab.img itb i
	cp "$T/base.img" "$img"
	itb=$(bg_field "$img" 0 'Inode table')
	debugfs -w -R "sif <1> size 1024" "$img" >/dev/null 2>&1
	# every leaf of /d (htree: block 0 is the root) is that block, so
	# the name's leaf is, whatever its hash
	for i in 1 2 3; do
		debugfs -w -R "sif /d block[$i] $itb" "$img" >/dev/null 2>&1
	done
	refused_damaged "$img" "$itb" "" "$T/src/new1" "$img:/d"
}
