#!/usr/bin/env bats
# A repair whose write fails is reported as not fixed, and e3fsck exits as
# e2fsck does after a failed write: 8 (operational error), with errors
# left 12 (4|8). E3_FAULT=eio:N / enospc:N fail the checker's N-th write
# (lib/check_io.c); N*K fails K in a row.
load helper

setup() {
	T=$BATS_TEST_TMPDIR
	mkdir -p "$T/src"
	for i in 1 2 3; do head -c 20000 /dev/urandom > "$T/src/f$i"; done
	e3mkfs -q "$T/a.img" 8M
	e3cp "$T/src" "$T/a.img"
}

# a block of /f1 marked free in the bitmap: its fix is written when the
# round closes the filesystem, not by the fix itself
damage_bitmap() {
	local b
	b=$(debugfs -R "bmap /f1 0" "$T/a.img" 2>/dev/null)
	[ -n "$b" ] || return 1
	debugfs -w -R "freeb $b" "$T/a.img" >/dev/null 2>&1 || return 1
	run e3fsck -n "$T/a.img"
	assert_status 4 || return 1
	assert_output_has "are in use but marked free: not fixed" || return 1
}

# not_fixed IMAGE-OUTPUT ERRTEXT: the run said why and listed nothing fixed
not_fixed() {
	assert_output_has "e3fsck: $T/a.img: writing the repairs: $1" || return 1
	assert_output_has ": not fixed" || return 1
	# the mode asked for the fix: no hint to rerun with the same mode
	[[ "$output" != *"with -y)"* ]] || { echo "hints -y under -y: $output" >&2; return 1; }
	[[ "$output" != *": fixed ("* ]] || { echo "a fix is reported: $output" >&2; return 1; }
	[[ "$output" != *"FILE SYSTEM WAS MODIFIED"* ]] || { echo "says modified" >&2; return 1; }
}

@test "-y: the bitmap write fails (eio:1): not fixed, exit 12, the image marked as having errors; a later -y fixes it" {
	damage_bitmap
	E3_FAULT=eio:1 run e3fsck -y "$T/a.img"
	assert_status 12
	not_fixed "Input/output error"
	run e3fsck -n "$T/a.img"
	assert_status 4
	assert_output_has "are in use but marked free: not fixed"
	assert_output_has "filesystem is marked as having errors"
	run e3cp "$T/src" "$T/a.img:/again"	# writers refuse it
	assert_status 8
	assert_output_has "filesystem has errors"
	run e3fsck -y "$T/a.img"
	assert_status 1
	assert_output_has "are in use but marked free: fixed"
	assert_fsck_clean "$T/a.img"
}

@test "-p: the write fails with ENOSPC: not fixed, exit 12, --json says fixed 0 and why" {
	damage_bitmap
	E3_FAULT=enospc:1 run e3fsck -p --json "$T/a.img"
	assert_status 12
	assert_output_has '"exit_code": 12, "fixed": 0, "errors": 1'
	assert_output_has '"fatal": {"error": "No space left on device", "what": "writing the repairs"}'
	[[ "$output" != *'"fixed": true'* ]] || { echo "$output" >&2; return 1; }
	run e3fsck -y "$T/a.img"
	assert_status 1
	assert_fsck_clean "$T/a.img"
}

@test "-y: every write fails (eio:1*1000): an inode fix is not fixed, exit 12, and the image is byte for byte unchanged" {
	debugfs -w -R "sif /f2 dtime 12345" "$T/a.img" >/dev/null 2>&1
	cp "$T/a.img" "$T/before.img"
	E3_FAULT='eio:1*1000' run e3fsck -y "$T/a.img"
	assert_status 12
	not_fixed "Input/output error"
	assert_output_has "has dtime set: not fixed"
	cmp "$T/a.img" "$T/before.img"
	run e3fsck -y "$T/a.img"
	assert_status 1
	assert_output_has "has dtime set: fixed"
	assert_fsck_clean "$T/a.img"
}

@test "-y: a clean image whose state write fails is an operational error (8), nothing reported fixed" {
	# an unclean state and no damage: the only write is marking it clean
	printf '\x00\x00' | dd of="$T/a.img" bs=1 seek=$((1024 + 0x3A)) conv=notrunc 2>/dev/null
	E3_FAULT='eio:1*1000' run e3fsck -y "$T/a.img"
	assert_status 8
	assert_output_has "e3fsck: $T/a.img: writing the repairs: Input/output error"
	[[ "$output" != *"FILE SYSTEM WAS MODIFIED"* ]] || { echo "$output" >&2; return 1; }
	run e3fsck -y "$T/a.img"
	assert_status 1
	assert_fsck_clean "$T/a.img"
}
