# tests/helper.bash: shared helpers for the bats suites. Load with
#   load helper
# Every image a test writes should end with `assert_fsck_clean IMAGE`.
#
# Every check in a helper (here or in a .bats file) ends in `|| return 1`
# or is an explicit `if ...; then ...; return 1; fi`: bash switches
# `set -e` off inside a function called from `||`, `&&`, `if`, `while` or
# `!`, so a helper that leans on errexit passes whatever its middle lines
# find as soon as someone calls it that way. tests/selftest.bats plants a
# failure into each check helper and demands that it fails, called
# directly and from `||` and `if`. For the same reason a test never says
# `! cmd` (never fatal under set -e): `run cmd` and `assert_status N`, or
# `assert_fails cmd`, or `refute_match`.

E3_TOP="$(cd "$BATS_TEST_DIRNAME/.." && pwd)"
export PATH="$E3_TOP/misc:$E3_TOP/debugfs-ext:/sbin:/usr/sbin:$PATH"
export E3_TOP
# a fixed clock keeps expected output stable
unset SOURCE_DATE_EPOCH

# ---- generic checks -------------------------------------------------------
# run_e3 TOOL ARGS...: like bats' run, with stdout and stderr together.
run_e3() {
	run "$@"
}

# assert_status N: the last run's exit code.
assert_status() {
	if [ "$status" -ne "$1" ]; then
		echo "expected exit $1, got $status; output:" >&2
		printf '%s\n' "$output" >&2
		return 1
	fi
}

# assert_output_has TEXT: the last run's output contains TEXT.
assert_output_has() {
	if [[ "$output" != *"$1"* ]]; then
		echo "output lacks: $1" >&2
		printf '%s\n' "$output" >&2
		return 1
	fi
}

# refute_output_has TEXT: the last run's output does not contain TEXT.
refute_output_has() {
	if [[ "$output" == *"$1"* ]]; then
		echo "output has what it must not: $1" >&2
		printf '%s\n' "$output" >&2
		return 1
	fi
}

# assert_line TEXT: one of the last run's output lines is exactly TEXT.
assert_line() {
	local l
	for l in "${lines[@]}"; do
		[ "$l" = "$1" ] && return 0
	done
	echo "no output line is exactly: $1" >&2
	printf '%s\n' "$output" >&2
	return 1
}

# assert_match TEXT ERE: some line of TEXT matches the extended regex ERE;
# refute_match TEXT ERE: none does.
assert_match() {
	if ! grep -Eq -- "$2" <<<"$1"; then
		echo "no line matches /$2/ in:" >&2
		printf '%s\n' "$1" >&2
		return 1
	fi
}
refute_match() {
	if grep -Eq -- "$2" <<<"$1"; then
		echo "a line matches /$2/, and must not:" >&2
		grep -E -- "$2" <<<"$1" >&2
		return 1
	fi
}

# assert_fails CMD...: CMD exits non-zero (the `! CMD` that counts).
assert_fails() {
	if "$@"; then
		echo "expected to fail, but succeeded: $*" >&2
		return 1
	fi
}

# assert_eq WHAT GOT WANT: two strings are equal; WHAT names the check.
assert_eq() {
	if [ "$2" != "$3" ]; then
		echo "$1: got '$2', expected '$3'" >&2
		return 1
	fi
}

# ---- reading an image back ---------------------------------------------------
# debugfs prints a banner ("debugfs 1.47.0 (5-Feb-2023)") and its errors
# ("File not found by ext2_lookup") on stderr: an output check after
# `run debugfs` matches them. These read only what debugfs writes on
# stdout, and demand that the path exists.

# img_has IMAGE PATH: PATH exists in IMAGE.
img_has() {
	local err
	err=$(debugfs -R "stat \"$2\"" "$1" 2>&1 >/dev/null | sed '/^debugfs [0-9]/d')
	if [ -n "$err" ]; then
		echo "$1: $2: $err" >&2
		return 1
	fi
}

# assert_img_cat IMAGE PATH TEXT: PATH exists in IMAGE and its contents
# are exactly TEXT (as $(...) gives them: trailing newlines dropped).
assert_img_cat() {
	local got
	img_has "$1" "$2" || return 1
	got=$(debugfs -R "cat \"$2\"" "$1" 2>/dev/null) || return 1
	if [ "$got" != "$3" ]; then
		echo "$1: $2 holds '$got', expected '$3'" >&2
		return 1
	fi
}

# assert_img_file IMAGE PATH FILE: PATH exists in IMAGE and its bytes are
# FILE's.
assert_img_file() {
	img_has "$1" "$2" || return 1
	if ! cmp <(debugfs -R "cat \"$2\"" "$1" 2>/dev/null) "$3" >&2; then
		echo "$1: $2 differs from $3" >&2
		return 1
	fi
}

# ---- checking an image -------------------------------------------------------

# assert_fsck_clean IMAGE: e2fsck -fn exits 0, and no replay is pending
# (e2fsck -n says clean even then; see ext3-facts §4.10).
assert_fsck_clean() {
	local img=$1 out rc
	out=$(e2fsck -fn "$img" 2>&1); rc=$?
	if [ $rc -ne 0 ]; then
		echo "e2fsck -fn $img exited $rc:" >&2
		printf '%s\n' "$out" >&2
		return 1
	fi
	assert_journal_empty "$img" || return 1
}

# assert_journal_empty IMAGE: needs_recovery clear and the log empty.
assert_journal_empty() {
	local img=$1 hdr
	hdr=$(dumpe2fs -h "$img" 2>/dev/null) || { echo "dumpe2fs -h $img failed" >&2; return 1; }
	if grep -q 'needs_recovery' <<<"$hdr"; then
		echo "$img: needs_recovery is set" >&2
		return 1
	fi
	if grep -q '^Journal start:' <<<"$hdr" && ! grep -q '^Journal start: *0$' <<<"$hdr"; then
		echo "$img: journal is not empty: $(grep '^Journal start:' <<<"$hdr")" >&2
		return 1
	fi
}

# ---- prerequisites -----------------------------------------------------------
# A test skips only for what the project cannot change: not root, no loop
# device, a host filesystem without a feature. A program bootstrap.sh
# installs that is missing is a broken setup: a failure, not a skip.

# is_root: we are uid 0 (for the root-only half of a test; the other half
# runs for everyone — say `skip "skipped: not root"` or note it).
is_root() { [ "$(id -u)" -eq 0 ]; }

# require_root: skip with a reason unless we may loop-mount.
require_root() {
	if ! is_root; then
		skip "skipped: not root (loop mount)"
	fi
	if ! command -v mount >/dev/null || ! [ -e /dev/loop-control ]; then
		skip "skipped: no loop devices on this machine"
	fi
}

# require_cmd PROGRAM...: fail, naming it, when a program the setup
# (bootstrap.sh) installs is missing.
require_cmd() {
	local p
	for p in "$@"; do
		command -v "$p" >/dev/null && continue
		echo "missing program: $p (bootstrap.sh installs it; run it)" >&2
		return 1
	done
}

# dumpe2fs_geometry IMAGE: the geometry lines of dumpe2fs -h, without the
# fields that differ per run (UUIDs, times, hash seed, checksums).
dumpe2fs_geometry() {
	dumpe2fs -h "$1" 2>/dev/null | grep -Ev \
		'^(Filesystem UUID|Filesystem created|Last (mount time|write time|checked)|Directory Hash Seed|Journal checksum|Checksum|Lifetime writes|Filesystem flags|Last mounted on|Mount count|Maximum mount count|Next check after|Check interval|Journal sequence|Journal start|Journal size)'
}

# set_bg_everywhere IMAGE REQUEST: debugfs -w REQUEST (a set_bg) on the
# primary group descriptors, then the primary's descriptor blocks copied
# over every backup's, so that no sound backup is left to fall back on
# (e2fsck, and e3fsck, then work from the primary's)
set_bg_everywhere() {
	local img=$1 bs first descs s e
	bs=$(dumpe2fs -h "$img" 2>/dev/null | sed -n 's/^Block size: *//p')
	first=$(dumpe2fs -h "$img" 2>/dev/null | sed -n 's/^First block: *//p')
	descs=$(dumpe2fs "$img" 2>/dev/null | sed -n 's/^  Backup superblock at [0-9]*, Group descriptors at \([0-9]*\)-\([0-9]*\)$/\1 \2/p')
	[ -n "$bs" ] && [ -n "$first" ] && [ -n "$descs" ] || { echo "no backup descriptors in $img" >&2; return 1; }
	debugfs -w -R "$2" "$img" >/dev/null 2>&1 || { echo "debugfs failed: $2" >&2; return 1; }
	while read -r s e; do
		dd if="$img" of="$img" bs="$bs" skip=$((first + 1)) seek="$s" \
			count=$((e - s + 1)) conv=notrunc status=none || return 1
	done <<<"$descs"
}
