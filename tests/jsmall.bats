#!/usr/bin/env bats
# tests/jsmall.bats: a journal too small for the largest transaction the
# library can build is refused when the image is opened for writing
# (E3_JOURNAL_TOO_SMALL), before any work, leaving the image untouched;
# one that holds it takes a copy that commits more than once.
#
# The images: 1 KiB blocks and mke2fs' smallest journal (-J size=1: 1024
# log blocks), 1024 blocks per group, 1 KiB inodes (-I 1024: each new file
# dirties an inode table block of its own, so 300 files fill the running
# transaction past a quarter of the log and force a commit mid-copy).
# 512 groups: the final flush alone writes 1024 bitmap blocks — more than
# the log. 256 groups: it writes about 520, which fits with room for what
# a quarter-full transaction and one operation add.
load helper

setup_file() {
	export T=/tmp/undo-jsmall-$$
	mkdir -p "$T/src"
	for i in $(seq 1 300); do : >"$T/src/f$i"; done
}

teardown_file() {
	rm -rf "/tmp/undo-jsmall-$$"
}

# tinyjournal PATH SIZE: ext3 with a 1024-block journal and 1 KiB groups
tinyjournal() {
	rm -f "$1"
	truncate -s "$2" "$1" || return 1
	mke2fs -q -F -t ext3 -b 1024 -g 1024 -I 1024 -N 4096 -J size=1 \
		-U 11111111-2222-3333-4444-555555555555 "$1" || return 1
}

@test "e3cp refuses an image whose journal cannot hold its largest transaction, before copying" {
	tinyjournal "$T/big.img" 512M
	[ "$(dumpe2fs -h "$T/big.img" 2>/dev/null | awk -F: '/^Total journal blocks/ {print $2+0}')" -eq 1024 ]
	cp --sparse=always "$T/big.img" "$T/big.orig"
	run e3cp -j1 "$T/src" "$T/big.img"
	[ "$status" -ne 0 ]
	# untouched: before the up-front check, the copy committed once and
	# the final flush then failed, leaving a live log behind
	cmp "$T/big.img" "$T/big.orig"
	assert_fsck_clean "$T/big.img"
	[ "${#lines[@]}" -eq 1 ]
	assert_output_has "e3cp: $T/big.img: journal too small"
}

@test "e3cp copies into the same geometry with half the groups: its journal holds every transaction" {
	tinyjournal "$T/ok.img" 256M
	run e3cp -j1 "$T/src" "$T/ok.img"
	assert_status 0
	assert_fsck_clean "$T/ok.img"
	run debugfs -R "ls -l /" "$T/ok.img"
	[ "$(grep -c ' f[0-9]*$' <<<"$output")" -eq 300 ]
}

@test "e3mkfs -d with a journal too small for the geometry refuses before formatting, naming the image and the reason" {
	rm -f "$T/mk.img"
	run e3mkfs -q -b 1024 -g 1024 -I 256 -N 4096 -J size=1 -d "$T/src" "$T/mk.img" 512M
	[ "$status" -ne 0 ]
	assert_output_has "e3mkfs: $T/mk.img: journal too small"
	[ "$(grep -c . <<<"$output")" -eq 1 ]
	[ ! -e "$T/mk.img" ]
	# an existing image (-F) is left as it was
	tinyjournal "$T/keep.img" 256M
	cp --sparse=always "$T/keep.img" "$T/keep.orig"
	run e3mkfs -q -F -b 1024 -g 1024 -I 256 -N 4096 -J size=1 -d "$T/src" "$T/keep.img" 512M
	[ "$status" -ne 0 ]
	cmp "$T/keep.img" "$T/keep.orig"
	# without -d the image is made (the kernel can use it), as mke2fs would
	run e3mkfs -q -b 1024 -g 1024 -I 256 -N 4096 -J size=1 "$T/mk.img" 512M
	assert_status 0
	assert_fsck_clean "$T/mk.img"
}
