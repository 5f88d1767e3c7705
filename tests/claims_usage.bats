#!/usr/bin/env bats
# Usage errors are one line: "prog: reason (see 'prog --help')" on stderr,
# nothing on stdout, and the tool's usage exit code (e3fsck 16 as
# e2fsck; e3cp and e3mkfs 16 as misc/exit.h says); --help prints the usage on stdout, exit 0.
load helper

# usage_error CODE REASON TOOL ARGS...: exactly one line on stderr, the
# reason and the hint in it, no path in the program name, nothing on stdout.
usage_error() {
	local code=$1 reason=$2 tool=$3 out err rc=0
	shift 3
	out=$("$@" 2>"$BATS_TEST_TMPDIR/err") || rc=$?
	err=$(cat "$BATS_TEST_TMPDIR/err")
	[ "$rc" -eq "$code" ] || { echo "exit $rc, want $code: $err" >&2; return 1; }
	[ -z "$out" ] || { echo "stdout not empty: $out" >&2; return 1; }
	[ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] ||
		{ echo "not one line:"; printf '%s\n' "$err"; } >&2 || return 1
	[ "$err" = "$tool: $reason (see '$tool --help')" ] ||
		{ echo "got: $err" >&2; return 1; }
}

# help_ok TOOL: --help prints "usage" text on stdout, nothing on stderr.
help_ok() {
	local out rc=0
	out=$("$1" --help 2>"$BATS_TEST_TMPDIR/err") || rc=$?
	[ "$rc" -eq 0 ] || { echo "--help exited $rc" >&2; return 1; }
	[ ! -s "$BATS_TEST_TMPDIR/err" ] || { cat "$BATS_TEST_TMPDIR/err" >&2; return 1; }
	grep -qi '^usage: .*'"$1" <<<"$out" || { echo "no usage line: $out" >&2; return 1; }
}

@test "e3cp: unknown and incomplete options are one line, exit 16; --version" {
	usage_error 16 "unknown option '--bogus'" e3cp "$E3_TOP/misc/e3cp" --bogus a b
	usage_error 16 "option -Z is unknown" e3cp "$E3_TOP/misc/e3cp" -Z a b
	usage_error 16 "option -j needs a value" e3cp "$E3_TOP/misc/e3cp" -j
	usage_error 16 "option '--jobs' needs a value" e3cp "$E3_TOP/misc/e3cp" --jobs
	usage_error 16 "option '--overwrite' takes no value" e3cp "$E3_TOP/misc/e3cp" --overwrite=1 a b
	help_ok e3cp
	run e3cp --version
	assert_status 0
	assert_match "$output" '^e3cp \(e3img\) [0-9]'
}

@test "e3fsck: unknown and incomplete options are one line, exit 16" {
	usage_error 16 "unknown option '--bogus'" e3fsck "$E3_TOP/misc/e3fsck" --bogus x.img
	usage_error 16 "option -Z is unknown" e3fsck "$E3_TOP/misc/e3fsck" -Z x.img
	usage_error 16 "option -b needs a value" e3fsck "$E3_TOP/misc/e3fsck" -b
	usage_error 16 "option '--max-runs' needs a value" e3fsck "$E3_TOP/misc/e3fsck" --max-runs
	help_ok e3fsck
}

@test "e3mkfs: unknown and incomplete options are one line, exit 16" {
	usage_error 16 "unknown option '--bogus'" e3mkfs "$E3_TOP/misc/e3mkfs" --bogus x.img 8M
	usage_error 16 "option -Z is unknown" e3mkfs "$E3_TOP/misc/e3mkfs" -Z x.img 8M
	usage_error 16 "option -b needs a value" e3mkfs "$E3_TOP/misc/e3mkfs" x.img -b
	usage_error 16 "option '--alloc' needs a value" e3mkfs "$E3_TOP/misc/e3mkfs" x.img --alloc
	help_ok e3mkfs
}
