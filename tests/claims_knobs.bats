#!/usr/bin/env bats
# Environment knobs read by the library (lib/journal.c, lib/fault.c):
#  - E3_JOURNAL=bypass turns crash safety off, so it works only with the
#    test switch E3_TEST_KNOBS=1, and is refused (not ignored) without it;
#  - E3_JOURNAL_MEM is validated: decimal KiB, 1..4194304;
#  - a simulated crash (E3_FAULT=kill:N, stop-after-commit:N) is a
#    SIGKILL, the library's one way to end the process, never an exit 0.
load helper

setup() {
	T=$BATS_TEST_TMPDIR
	mkdir -p "$T/src"
	for i in 1 2 3 4 5 6 7 8; do head -c $((i * 3000)) /dev/urandom > "$T/src/f$i"; done
	e3mkfs -q "$T/a.img" 16M
	cp "$T/a.img" "$T/before.img"
}

jseq() {	# jseq IMAGE: the journal's next sequence number
	dumpe2fs -h "$1" 2>/dev/null | sed -n 's/^Journal sequence:[[:space:]]*//p'
}

# refused_knob TEXT ENV...: e3cp with the environment refuses, one line
# naming the image and the reason, exit 8, the image untouched.
refused_knob() {
	local text=$1
	shift
	run env "$@" e3cp "$T/src" "$T/a.img"
	assert_status 8 || return 1
	[ "${#lines[@]}" -eq 1 ] || { echo "want one line: $output" >&2; return 1; }
	[ "$output" = "e3cp: $T/a.img: $text" ] || { echo "got: $output" >&2; return 1; }
	cmp "$T/a.img" "$T/before.img" || return 1
}

@test "E3_JOURNAL=bypass without E3_TEST_KNOBS=1 is refused before the image is touched" {
	refused_knob "E3_JOURNAL=bypass turns crash safety off: it works only with the test switch E3_TEST_KNOBS=1" \
		E3_JOURNAL=bypass
	refused_knob "E3_JOURNAL=bypass turns crash safety off: it works only with the test switch E3_TEST_KNOBS=1" \
		E3_JOURNAL=bypass E3_TEST_KNOBS=yes
	refused_knob "E3_JOURNAL must be unset or bypass" E3_JOURNAL=off E3_TEST_KNOBS=1
}

@test "E3_JOURNAL=bypass with E3_TEST_KNOBS=1 bypasses the journal; without E3_JOURNAL the switch changes nothing" {
	local seq0
	seq0=$(jseq "$T/a.img")
	E3_TEST_KNOBS=1 E3_JOURNAL=bypass run e3cp "$T/src" "$T/a.img"
	assert_status 0
	[ "$(jseq "$T/a.img")" = "$seq0" ]	# nothing went through the log
	assert_fsck_clean "$T/a.img"
	E3_TEST_KNOBS=1 run e3cp "$T/src" "$T/a.img:/j"
	assert_status 0
	[ "$(jseq "$T/a.img")" != "$seq0" ]	# journaled
	assert_fsck_clean "$T/a.img"
}

@test "E3_JOURNAL_MEM: garbage, 0, negative and out of range are refused; 8 works" {
	local v
	for v in abc 0 -8 8k " 8" 4194305 99999999999999999999; do
		refused_knob "E3_JOURNAL_MEM must be a number of KiB from 1 to 4194304" \
			E3_JOURNAL_MEM="$v"
	done
	E3_JOURNAL_MEM=8 run e3cp "$T/src" "$T/a.img"
	assert_status 0
	E3_JOURNAL_MEM=4194304 run e3cp "$T/src" "$T/a.img:/big"
	assert_status 0
	assert_fsck_clean "$T/a.img"
}

@test "E3_FAULT=stop-after-commit:N is a crash (SIGKILL, not exit 0): the log is left to replay" {
	E3_FAULT=stop-after-commit:1 run e3cp --quiet --reproducible "$T/src" "$T/a.img"
	assert_status 137
	run dumpe2fs -h "$T/a.img"
	assert_output_has "needs_recovery"
	run e3fsck -p "$T/a.img"
	[ "$status" -le 1 ] || { echo "e3fsck -p exited $status: $output" >&2; return 1; }
	assert_fsck_clean "$T/a.img"
}

@test "E3_FAULT=kill:N is still a crash a sweep can see (137), and a bad E3_FAULT is refused" {
	E3_FAULT=kill:3 run e3cp --quiet "$T/src" "$T/a.img"
	assert_status 137
	run e2fsck -fy "$T/a.img"
	[ "$status" -le 1 ] || { echo "e2fsck -fy exited $status: $output" >&2; return 1; }
	assert_fsck_clean "$T/a.img"
	cp "$T/a.img" "$T/before.img"
	E3_FAULT=explode:3 run e3cp --quiet "$T/src" "$T/a.img:/x"
	assert_status 8
	cmp "$T/a.img" "$T/before.img"
}
