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
	assert_status 2
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

blk() { debugfs -R "bmap $2 $3" "$1" 2>/dev/null | tail -1; }

fill_block() {	# fill_block IMAGE BLOCK BYTE(octal)
	head -c 1024 /dev/zero | tr '\0' "\\$3" |
		dd of="$1" bs=1024 seek="$2" conv=notrunc status=none
}

@test "the base image takes the tree cleanly" {
	cp "$T/base.img" "$T/ok.img"
	run e3cp --quiet "$T/src/." "$T/ok.img"
	assert_status 0
	assert_fsck_clean "$T/ok.img"
}

@test "a corrupt directory block met while copying: one line naming the image and the entry" {
	cp "$T/base.img" "$T/dir.img"
	fill_block "$T/dir.img" "$(blk "$T/dir.img" / 0)" 377
	refused "$T/dir.img"
	assert_output_has "copying $T/src/./"
	assert_output_has "directory corrupted"
}
