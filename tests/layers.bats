#!/usr/bin/env bats
# tests/layers.bats: the layering check (scripts/layers.py, `make layers`)
# passes on this tree and fails, naming the file, on each kind of planted
# violation: an upward include, a sideways include between folders of one
# rank, a call into a higher layer (found in the objects by nm), a tool
# including an internal header, and a folder missing from the rank table.

load helper

setup() {
	T=$(mktemp -d /tmp/layers-bats.XXXXXX)
	# the sources only (a tree without .git too, as CI's copy for an
	# ordinary user): a copy the plants cannot leak out of
	(cd "$E3_TOP" && find lib misc debugfs-ext scripts -type f \
		\( -name '*.[ch]' -o -name '*.py' -o -name '*.et' -o -name '*.ct' \) \
		-print0 | xargs -0 cp --parents -t "$T")
}

teardown() {
	rm -rf "$T"
}

# planted_fails WHAT...: the check on the copy exits 1 and says WHAT.
planted_fails() {
	run python3 "$T/scripts/layers.py" --root "$T" "${LAYERS_OPTS[@]}"
	assert_status 1 || return 1
	for w in "$@"; do
		assert_output_has "$w" || return 1
	done
}

@test "the tree as it is passes, includes and calls (after make)" {
	run python3 "$E3_TOP/scripts/layers.py" --root "$E3_TOP"
	assert_status 0
	[ -z "$output" ]
}

@test "the untouched copy passes, so the plants below are what fails it" {
	run python3 "$T/scripts/layers.py" --root "$T" --no-symbols
	assert_status 0
}

@test "an upward include (alloc -> fs) fails the check, naming file and line" {
	printf '#include "fs/image.h"\n' >> "$T/lib/alloc/alloc_window.c"
	LAYERS_OPTS=(--no-symbols)
	planted_fails "lib/alloc/alloc_window.c:" '"fs/image.h"' "alloc may not use fs"
}

@test "a sideways include between layers of one rank (journal -> alloc) fails" {
	printf '#include "alloc/alloc.h"\n' >> "$T/lib/journal/journal.c"
	LAYERS_OPTS=(--no-symbols)
	planted_fails "lib/journal/journal.c:" "journal may not use alloc"
}

@test "a tool including an internal header fails" {
	printf '#include "fs/image.h"\n' >> "$T/misc/e3fsck.c"
	LAYERS_OPTS=(--no-symbols)
	planted_fails "misc/e3fsck.c:" "misc may not use fs"
}

@test "a folder missing from the rank table fails" {
	mkdir "$T/lib/newlayer"
	printf 'int x;\n' > "$T/lib/newlayer/x.c"
	LAYERS_OPTS=(--no-symbols)
	planted_fails "lib/newlayer/" "rank table"
}

@test "a call into a higher layer, with no include to show it, fails (nm of the objects)" {
	# fs/ defines a function; alloc/ declares and calls it by hand
	printf 'int e3_planted_fs_helper(void) { return 1; }\n' > "$T/lib/fs/planted.c"
	printf 'int e3_planted_fs_helper(void);\nint e3_planted_user(void) { return e3_planted_fs_helper(); }\n' \
		> "$T/lib/alloc/planted.c"
	gcc -c -o "$T/lib/fs/planted.o" "$T/lib/fs/planted.c"
	gcc -c -o "$T/lib/alloc/planted.o" "$T/lib/alloc/planted.c"
	LAYERS_OPTS=()
	planted_fails "lib/alloc/planted.o: calls e3_planted_fs_helper" "alloc may not use fs"
}

@test "make check runs the layering check" {
	# check depends on layers (read from the generated Makefile, since a
	# make -n run from inside make check inherits its flags) ...
	run grep -E '^check:.* layers( |$)' "$E3_TOP/Makefile"
	assert_status 0
	# ... and layers runs the script
	run make -n -C "$E3_TOP" layers
	assert_status 0
	assert_output_has "python3 scripts/layers.py"
}
