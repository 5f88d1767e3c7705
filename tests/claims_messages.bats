#!/usr/bin/env bats
# tests/claims_messages.bats: what the tools say, as a user reads it —
# one exit-code table (misc/exit.h), each error told once, names with
# control characters quoted so they cannot forge a line, a rerun's
# "name exists" summed up with the way out, e3cp's closing line and
# progress in MiB of data (holes are not data).
load helper

setup_file() {
	export T=/tmp/cli-msg-bats-$$
	mkdir -p "$T/src/sub"
	for i in $(seq 1 12); do printf 'file %s\n' "$i" > "$T/src/sub/f$i"; done
	printf 'evil\n' > "$T/src/$(printf 'a\ne3cp: forged')"
	printf 'esc\n' > "$T/src/$(printf 'c\033[31mred')"
	# a 1 GiB file with 8 KiB of data: its holes are not copied bytes
	printf 'start' > "$T/src/sparse"
	truncate -s 1G "$T/src/sparse"
	head -c 1M /dev/zero > "$T/notfs.img"
}

teardown_file() {
	rm -rf "/tmp/cli-msg-bats-$$"
}

@test "an error is told once: no tool doubles the library's message" {
	local t
	for t in e3cp e3fsck e3defrag e3debugfs; do
		case $t in
		e3cp) run e3cp "$T/src" "$T/notfs.img" ;;
		e3debugfs) run e3debugfs -R stats "$T/notfs.img" ;;
		*) run "$t" "$T/notfs.img" ;;
		esac
		assert_status 8
		[ "${#lines[@]}" -eq 1 ] || { echo "$t: want one line: $output" >&2; return 1; }
		assert_match "$output" "^$t: $T/notfs.img: [^:]+$"
	done
}

@test "e3cp: a rerun shows the first few 'name exists', then a count and the hint; exit 1 (partial)" {
	e3mkfs -q "$T/r.img" 16M
	run e3cp --quiet "$T/src" "$T/r.img"
	assert_status 0
	run e3cp --quiet "$T/src" "$T/r.img"
	assert_status 1
	[ "$(grep -c ': name exists$' <<<"$output")" -eq 5 ] ||
		{ echo "want 5 'name exists' lines: $output" >&2; return 1; }
	assert_output_has "e3cp: $T/r.img: 10 more names exist (15 in all) and were left as they are: --update copies what differs or is missing, --overwrite replaces them all"
	# --update: nothing differs, nothing to say
	run e3cp --quiet --update "$T/src" "$T/r.img"
	assert_status 0
	assert_eq "output of a no-op --update" "$output" ""
	assert_fsck_clean "$T/r.img"
}

@test "names with a newline or an escape are quoted in messages: no forged line, no escape reaches the terminal" {
	e3mkfs -q "$T/q.img" 16M
	e3cp --quiet "$T/src" "$T/q.img"
	run e3cp --quiet "$T/src/" "$T/q.img"
	assert_status 1
	assert_line "e3cp: '$T/src/a'\$'\\n''e3cp: forged': name exists"
	assert_line "e3cp: '$T/src/c'\$'\\033''[31mred': name exists"
	refute_match "$output" '^e3cp: forged'
	refute_match "$output" $'\033'
	refute_match "$output" '//'		# "src/" gives src/x, not src//x
	# a plain name is shown as it is
	run e3cp "$T/src/sub/nope" "$T/q.img"
	assert_status 8
	assert_line "e3cp: $T/src/sub/nope: No such file or directory"
}

@test "e3cp --progress: of N files and MiB measured, an ETA, a closing line in MiB of data (holes left out)" {
	e3mkfs -q "$T/p.img" 16M
	run e3cp --progress "$T/src" "$T/p.img"
	assert_status 0
	# the bar's last state, then the closing line
	assert_match "$output" ' of 16 files, [0-9.]+ of 0\.0 MiB'
	assert_line "e3cp: $T/p.img: 16 entries, 0.0 MiB of data copied"
	refute_output_has "1024.0 MiB"
	assert_fsck_clean "$T/p.img"
}

@test "e3fsck --help names every option; --version on e3fsck and e3cp" {
	local o
	run e3fsck --help
	assert_status 0
	for o in --layout --json --max-noncontig --max-runs --max-excess-runs --worst --force-read --version; do
		assert_match "$output" "^  $o " || return 1
	done
	run e3fsck --version
	assert_status 0
	assert_match "$output" '^e3fsck \(e3img\) [0-9]+\.[0-9]+\.[0-9]+, libext2fs '
	run e3cp --version
	assert_status 0
	assert_match "$output" '^e3cp \(e3img\) [0-9]+\.[0-9]+\.[0-9]+, libext2fs '
}

# after_fault IMG: the journal replayed by e2fsck; IMG then clean
after_fault() {
	e2fsck -E journal_only -y "$1" >/dev/null 2>&1
	[ $? -le 1 ] || { echo "e2fsck could not replay $1" >&2; return 1; }
	assert_fsck_clean "$1" || return 1
}

@test "a failed final commit says what the image holds and what replay gives, and replay gives that" {
	local n seen="" out img
	mkdir -p "$T/fc"
	for i in 1 2 3; do printf 'fc %s\n' "$i" > "$T/fc/f$i"; done
	e3mkfs -q "$T/fc.img" 8M
	# every write from the n-th on fails: n sweeps the data, the final
	# commit, its checkpoint and the clearing of the log
	for n in $(seq 2 40); do
		img=$T/fc$n.img
		cp "$T/fc.img" "$img"
		E3_FAULT=eio:$n*100000 run e3cp --quiet "$T/fc" "$img"
		[ "$status" -eq 0 ] && break
		assert_status 8
		[ "${#lines[@]}" -eq 1 ] || { echo "n=$n: want one line: $output" >&2; return 1; }
		case $output in
		*"the final commit failed (Input/output error): the image is as of the last commit before it; its journal holds 0 committed transactions, which the next open or e3fsck replays"*)
			seen="$seen commit"
			after_fault "$img" || return 1
			# nothing was committed before it: nothing is there
			run debugfs -R "ls -p /" "$img"
			refute_output_has "/f1/" ;;
		*"writing the final commit home failed (Input/output error): everything copied is committed, 1 transaction in the journal; the next open or e3fsck replays it and the image is complete"*)
			seen="$seen checkpoint"
			after_fault "$img" || return 1
			assert_img_file "$img" /f3 "$T/fc/f3" || return 1 ;;
		*"clearing the journal after the final commit failed (Input/output error): everything copied is in place"*)
			seen="$seen finish"
			after_fault "$img" || return 1
			assert_img_file "$img" /f1 "$T/fc/f1" || return 1 ;;
		*"e3cp: $img: "*) ;;	# a data write, during the copy
		*) echo "n=$n: $output" >&2; return 1 ;;
		esac
	done
	[ "$status" -eq 0 ] || { echo "every write up to 40 failed" >&2; return 1; }
	for n in commit checkpoint finish; do
		[[ " $seen " == *" $n "* ]] || { echo "no run failed at the $n stage:$seen" >&2; return 1; }
	done
	refute_output_has "Input/output error"	# the last run: clean
}
