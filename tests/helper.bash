# tests/helper.bash: shared helpers for the bats suites. Load with
#   load helper
# Every image a test writes should end with `assert_fsck_clean IMAGE`.

E3_TOP="$(cd "$BATS_TEST_DIRNAME/.." && pwd)"
export PATH="$E3_TOP/misc:$E3_TOP/debugfs-ext:/sbin:/usr/sbin:$PATH"
export E3_TOP
# a fixed clock keeps expected output stable
unset SOURCE_DATE_EPOCH

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
	assert_journal_empty "$img"
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

# require_root: skip with a reason unless we may loop-mount.
require_root() {
	if [ "$(id -u)" -ne 0 ]; then
		skip "needs root (loop mount)"
	fi
	if ! command -v mount >/dev/null || ! [ -e /dev/loop-control ]; then
		skip "no loop devices on this machine"
	fi
}

# dumpe2fs_geometry IMAGE: the geometry lines of dumpe2fs -h, without the
# fields that differ per run (UUIDs, times, hash seed, checksums).
dumpe2fs_geometry() {
	dumpe2fs -h "$1" 2>/dev/null | grep -Ev \
		'^(Filesystem UUID|Filesystem created|Last (mount time|write time|checked)|Directory Hash Seed|Journal checksum|Checksum|Lifetime writes|Filesystem flags|Last mounted on|Mount count|Maximum mount count|Next check after|Check interval|Journal sequence|Journal start|Journal size)'
}
