#!/usr/bin/env bats
# tests/selftest.bats: the suite's checks can fail. For each reusable
# check helper — helper.bash's and the composite ones the .bats files
# define — a planted failure (a wrong expected value, or a copy of the
# helper with one expectation inside it changed) must fail, called
# plainly, on the left of `||`, as an `if` condition and under `!`. bash
# switches `set -e` off inside a function called in the last three ways,
# and helpers that leaned on it passed whatever their middle lines found
# (issue 22). The unplanted helper, in the same setup, must pass: so the
# failure is the plant's. Last, the C harness: a failed CHECK followed by
# a SKIP is "not ok", and FAIL() fails.
load helper

setup_file() {
	export S=/tmp/selftest-bats-$$
	mkdir -p "$S"
}

teardown_file() {
	rm -rf "/tmp/selftest-bats-$$"
}

# must_fail CMD...: CMD fails called plainly (set -e on), from `||`, from
# `if` and under `!`. Call it plainly: inside an `if` or `||` nothing
# could switch errexit back on.
must_fail() {
	local rc
	set +e
	( trap - ERR; set -e; "$@" ) >"$S/out" 2>&1
	rc=$?
	set -e
	[ "$rc" -ne 0 ] || { echo "passed, called plainly: $*" >&2; cat "$S/out" >&2; return 1; }
	rc=0
	( trap - ERR; "$@" ) >"$S/out" 2>&1 || rc=$?
	[ "$rc" -ne 0 ] || { echo "passed, called from ||: $*" >&2; cat "$S/out" >&2; return 1; }
	if ( trap - ERR; "$@" ) >"$S/out" 2>&1; then
		echo "passed, called from if: $*" >&2; cat "$S/out" >&2; return 1
	fi
	if ! ( trap - ERR; "$@" ) >"$S/out" 2>&1; then
		:
	else
		echo "passed, called under !: $*" >&2; cat "$S/out" >&2; return 1
	fi
}

# must_pass CMD...: CMD passes (set -e on), so that a failure of the
# planted copy is the plant's and not the setup's.
must_pass() {
	local rc
	set +e
	( trap - ERR; set -e; "$@" ) >"$S/out" 2>&1
	rc=$?
	set -e
	[ "$rc" -eq 0 ] || { echo "failed unplanted (exit $rc): $*" >&2; cat "$S/out" >&2; return 1; }
}

# plant FILE FUNC [SED]: define FUNC as tests/FILE defines it, with the
# sed expression SED applied to its text (the planted wrong expectation);
# SED must change something.
plant() {
	local file=$E3_TOP/tests/$1 fn=$2 def new
	def=$(awk -v fn="$fn" '
		!p && index($0, fn "() {") == 1 { p = 1; print; if ($0 ~ /}$/) exit; next }
		p { print } p && /^}/ { exit }' "$file")
	[ -n "$def" ] || { echo "no function $fn in $1" >&2; return 1; }
	if [ $# -ge 3 ]; then
		new=$(sed "$3" <<<"$def")
		[ "$new" != "$def" ] || { echo "plant '$3' changes nothing in $fn" >&2; return 1; }
		def=$new
	fi
	eval "$def"
}

# ---- helper.bash ------------------------------------------------------------

@test "helper.bash: assert_status, assert_output_has, refute_output_has, assert_line fail on a wrong expectation" {
	status=3 output=$'first line\nsecond' lines=("first line" second)
	must_pass assert_status 3
	must_fail assert_status 4
	must_pass assert_output_has "st li"
	must_fail assert_output_has "third"
	must_pass refute_output_has "third"
	must_fail refute_output_has "second"
	must_pass assert_line second
	must_fail assert_line secon		# a part of a line is not the line
	must_fail assert_line "first"
}

@test "helper.bash: assert_match, refute_match, assert_fails, assert_eq, require_cmd fail on a wrong expectation" {
	must_pass assert_match $'a\nfeatures: has_journal' '^features:.*has_journal'
	must_fail assert_match $'a\nfeatures: none' '^features:.*has_journal'
	must_pass refute_match 'features: none' 'has_journal'
	must_fail refute_match 'features: has_journal' 'has_journal'
	must_pass assert_fails false
	must_fail assert_fails true
	must_pass assert_eq what a a
	must_fail assert_eq what a b
	must_pass require_cmd sh
	must_fail require_cmd sh no-such-program-e3img
}

@test "helper.bash: the image readers fail on a wrong or missing file, not matching debugfs' banner" {
	local img=$S/r.img
	mkdir -p "$S/r"; printf 'b\n' > "$S/r/b"; : > "$S/r/empty"; printf 'other\n' > "$S/other"
	mke2fs -q -F -t ext3 -d "$S/r" "$img" 8M
	# the pattern the suite used: a missing file "contains" b (Feb-2023)
	run debugfs -R "cat /missing" "$img"
	assert_output_has b
	must_pass img_has "$img" /b
	must_fail img_has "$img" /missing
	must_pass assert_img_cat "$img" /b b
	must_fail assert_img_cat "$img" /b bb
	must_fail assert_img_cat "$img" /missing b
	must_pass assert_img_cat "$img" /empty ""
	must_fail assert_img_cat "$img" /missing ""
	must_pass assert_img_file "$img" /b "$S/r/b"
	must_fail assert_img_file "$img" /b "$S/other"
	must_fail assert_img_file "$img" /missing /dev/null
}

@test "helper.bash: assert_fsck_clean and assert_journal_empty fail on a damaged image, a pending journal, no image" {
	local img=$S/f.img
	mke2fs -q -F -t ext3 -b 1024 "$img" 8M
	must_pass assert_fsck_clean "$img"
	must_pass assert_journal_empty "$img"
	cp "$img" "$S/links.img"
	debugfs -w -R "sif <2> links_count 9" "$S/links.img" 2>/dev/null
	must_fail assert_fsck_clean "$S/links.img"
	# needs_recovery set: e2fsck -fn alone calls this clean
	cp "$img" "$S/rec.img"
	debugfs -w -R "feature needs_recovery" "$S/rec.img" >/dev/null 2>&1
	must_fail assert_journal_empty "$S/rec.img"
	must_fail assert_fsck_clean "$S/rec.img"
	must_fail assert_fsck_clean "$S/no-such.img"
}

# ---- the composite helpers of the .bats files ---------------------------------

@test "fsck.bats damage(): a wrong finding id or exit code inside it fails it (the every-kind sweep calls it from ||)" {
	W=$S/fsck; mkdir -p "$W"
	bash "$E3_TOP/tests/corrupt.sh" --base "$W/base.img" >/dev/null
	plant fsck.bats damage
	must_pass damage links_high
	plant fsck.bats damage '/"id/s/\$exp/bogus_$exp/'
	must_fail damage links_high
	plant fsck.bats damage '0,/assert_status "/s/assert_status "[^"]*"/assert_status 99/'
	must_fail damage links_high
}

@test "fsck.bats jfix_y()/jrepaired(): a wrong journal size or message inside them fails them" {
	W=$S/jfsck; mkdir -p "$W"
	plant fsck.bats jdamage
	plant fsck.bats jrepaired
	plant fsck.bats jfix_y
	must_pass jfix_y magic "journal superblock is invalid (bad magic or type)"
	plant fsck.bats jrepaired 's/Total journal size: \*1024k/Total journal size: *2048k/'
	must_fail jfix_y magic "journal superblock is invalid (bad magic or type)"
	plant fsck.bats jrepaired
	plant fsck.bats jfix_y 's/journal recreated: 1024 blocks/journal recreated: 999 blocks/'
	must_fail jfix_y magic "journal superblock is invalid (bad magic or type)"
}

@test "journal.bats check_crashed()/cmp_replays(): a comparison with /dev/null or a check of a missing image inside fails them" {
	T=$S/j; mkdir -p "$T"
	JLOAD=$E3_TOP/bench/jload JREPLAY=$E3_TOP/bench/jreplay SB_WTIME="1073 1074 1075 1076"
	plant journal.bats cmp_replays
	plant journal.bats replay_both
	plant journal.bats new_ext3
	plant journal.bats check_crashed
	new_ext3 "$T/x.img" 16M -b 1024 -g 2048
	run env E3_FAULT=kill:60 "$JLOAD" load "$T/x.img" 120 4 "$T/x.log"
	assert_status 137
	must_pass check_crashed "$T/x.img" 120 4 "$T/x.log"
	must_fail cmp_replays "$T/x.img" /dev/null
	plant journal.bats check_crashed 's|cmp_replays "$1.fsck" "$1.ours"|cmp_replays "$1.fsck" /dev/null|'
	must_fail check_crashed "$T/x.img" 120 4 "$T/x.log"
	plant journal.bats check_crashed 's|assert_fsck_clean "$1.fsck"|assert_fsck_clean "$1.missing"|'
	must_fail check_crashed "$T/x.img" 120 4 "$T/x.log"
}

@test "corrupt_cp.bats refused_damaged()/refused_overwrite(): a wrong exit code or an unchanged-block check inverted inside fails them" {
	T=$S/ccp; mkdir -p "$T"
	bash "$E3_TOP/tests/corrupt.sh" --base "$T/base.img" >/dev/null
	local f bbm
	for f in problems put_victim blk bg_field refused_damaged refused_overwrite refused; do
		plant corrupt_cp.bats "$f"
	done
	put_victim "$T/ovbm.img"
	bbm=$(bg_field "$T/ovbm.img" 0 'Block bitmap')
	debugfs -w -R "sif /victim block[1] $bbm" "$T/ovbm.img" >/dev/null 2>&1
	cp "$T/ovbm.img" "$T/keep.img"
	must_pass refused_overwrite "$T/ovbm.img" "$bbm"
	plant corrupt_cp.bats refused_damaged 's/assert_status 8/assert_status 99/'
	cp "$T/keep.img" "$T/ovbm.img"
	must_fail refused_overwrite "$T/ovbm.img" "$bbm"
	plant corrupt_cp.bats refused_damaged 's/!= "$sum"/= "$sum"/'
	cp "$T/keep.img" "$T/ovbm.img"
	must_fail refused_overwrite "$T/ovbm.img" "$bbm"
	# refused(): an image e3cp takes is not refused
	mkdir -p "$T/src"; echo x > "$T/src/x"
	cp "$T/base.img" "$T/ok.img"
	must_fail refused "$T/ok.img"
}

@test "mkfs.bats same_geometry(), same_bytes(), refused(): a planted difference or wrong exit code fails them" {
	T=$S/mk; mkdir -p "$T"
	UUID=11111111-2222-3333-4444-555555555555 SEED=66666666-7777-8888-9999-aaaaaaaaaaaa EPOCH=1700000000
	local f
	for f in mke2fs_ref e3mk same_geometry same_bytes refused; do
		plant mkfs.bats "$f"
	done
	must_pass same_geometry 8M
	plant mkfs.bats same_geometry 's|mke2fs -q -t ext3 "$@"|mke2fs -q -t ext3 -m 2 "$@"|'
	must_fail same_geometry 8M
	must_pass same_bytes 8M
	plant mkfs.bats same_bytes 's|e3mk "$T/e.img" "$size" "$@"|e3mk "$T/e.img" "$size" -L planted "$@"|'
	must_fail same_bytes 8M
	must_pass refused 16 "e3mkfs: no IMAGE given" e3mkfs
	must_fail refused 1 "e3mkfs: no IMAGE given" e3mkfs
	must_fail refused 2 "no such text" e3mkfs
}

@test "cp_inputs.bats check_archive(), expect_eq(): a wrong file or mode inside fails them" {
	T=$S/cpi; mkdir -p "$T/a/sub/deep"
	printf 'alpha\n' > "$T/a/one.txt"; : > "$T/a/empty"
	head -c 30000 /dev/urandom > "$T/a/sub/blob.bin"
	seq 1 2000 > "$T/a/sub/deep/seq.txt"; chmod 755 "$T/a/sub/deep/seq.txt"
	ln -s ../one.txt "$T/a/sub/link"
	tar -C "$T/a" -cf "$T/a.tar" .
	local f
	for f in newimg expect_eq check_archive; do plant cp_inputs.bats "$f"; done
	must_pass check_archive "$T/a.tar"
	must_fail expect_eq what got want
	plant cp_inputs.bats check_archive 's|assert_img_file "$img" "/$f" "$T/a/$f"|assert_img_file "$img" "/$f" "$T/a/one.txt"|'
	must_fail check_archive "$T/a.tar"
	plant cp_inputs.bats check_archive 's|Fast link dest: "../one.txt"|Fast link dest: "../two.txt"|'
	must_fail check_archive "$T/a.tar"
}

@test "cp.bats replaced(), htree.bats same_dirs(), cp_archive.bats only_line(), corrupt_cp.bats refute_warning(): a wrong expectation fails them" {
	T=$S/cp; mkdir -p "$T/src/d"
	local i
	for i in $(seq 0 2999); do printf 'v2 %s\n' "$i" > "$T/src/d/f$i"; done
	mke2fs -q -F -t ext3 -N 4096 -d "$T/src" "$T/r.img" 16M
	plant cp.bats replaced
	must_pass replaced "$T/r.img"
	plant cp.bats replaced 's/"v2 $i"/"v3 $i"/'
	must_fail replaced "$T/r.img"
	plant cp.bats replaced
	rm "$T/src/d/f1"
	mke2fs -q -F -t ext3 -N 4096 -d "$T/src" "$T/r2.img" 16M
	must_fail replaced "$T/r2.img"	# f1 missing: 2999 names
	# same_dirs: A against itself passes; against an image whose /d lost
	# a name fails
	plant htree.bats all_dirs
	plant htree.bats same_dirs
	must_pass same_dirs "$T/r.img" "$T/r.img" 2
	must_fail same_dirs "$T/r.img" "$T/r2.img" 2
	must_fail same_dirs "$T/r.img" "$T/r.img" 99
	plant cp_archive.bats only_line
	output="one"
	must_pass only_line one
	output=$'one\ntwo'
	must_fail only_line one
	plant corrupt_cp.bats refute_warning
	output="fine"
	must_pass refute_warning
	output="ext2fs: Illegal block number passed to ext2fs_test_block_bitmap"
	must_fail refute_warning
}

@test "load.bats check_dump(): a wrong expected file inside fails it, and so does an empty file list" {
	T=$S/ld; mkdir -p "$T"
	PARLOAD=$E3_TOP/bench/parload
	local f
	for f in mkimg names_of check_dump; do plant load.bats "$f"; done
	mkimg 1G -b 4096
	run "$PARLOAD" --mixed --threads 1 --append 3000 "$T/img"
	assert_status 0
	must_pass check_dump 1 4096
	plant load.bats check_dump 's|cmp "$T/d.$n" "$T/e"|cmp "$T/d.$n" /dev/null|'
	must_fail check_dump 1 4096
	output=""
	must_fail check_dump 1 4096		# parload listed nothing
}

# ---- the C harness (tests/unit/unit.h) -----------------------------------------

@test "unit.h: a failed CHECK then SKIP is not ok, FAIL() fails, the exit code says so; /usr/sbin is on PATH" {
	cat > "$S/u.c" <<'C'
#include "unit.h"
static void t_check_then_skip(void) { CHECK(1 == 2); SKIP("planted skip"); }
static void t_fail(void) { FAIL("planted setup failure"); }
static void t_ok(void) { CHECK(1 == 1); }
static void t_skip(void) { SKIP("a reason outside the project"); }
static void t_path(void) { CHECK(strstr(getenv("PATH"), "/usr/sbin") != NULL); }
int main(void)
{
	RUN(t_check_then_skip); RUN(t_fail); RUN(t_ok); RUN(t_skip); RUN(t_path);
	return unit_done();
}
C
	gcc -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -I"$E3_TOP/tests/unit" -o "$S/u" "$S/u.c"
	run env PATH=/usr/bin:/bin "$S/u"
	assert_status 1
	assert_line "not ok 1 - t_check_then_skip (failed checks, then skipped: planted skip)"
	assert_line "not ok 2 - t_fail"
	assert_line "ok 3 - t_ok"
	assert_line "ok 4 - t_skip # skip a reason outside the project"
	assert_line "ok 5 - t_path"
	assert_line "1..5"
}
