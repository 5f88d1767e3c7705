#!/usr/bin/env bats
# tests/claims_dest.bats: e3cp's destinations as cp and genext2fs users
# expect them — one file to a name that is not there is that name (cp),
# a relative destination is refused with the reason, and each SRC may
# have its own destination (SRC=/dest, genext2fs' -d dir:path).
load helper

setup_file() {
	export T=/tmp/cli-dest-bats-$$
	mkdir -p "$T/etc" "$T/ov/bin"
	printf 'welcome\n' > "$T/motd2"
	printf 'one\n' > "$T/etc/one"
	printf 'two\n' > "$T/ov/bin/two"
}

teardown_file() {
	rm -rf "/tmp/cli-dest-bats-$$"
}

# entry_type IMG PATH: debugfs' mode of PATH, in octal (40755, 100644...)
entry_type() {
	debugfs -R "stat \"$2\"" "$1" 2>/dev/null | sed -n 's/^Inode: .*Type: \([a-z]*\).*/\1/p'
}

@test "one file to a name that is not there is copied to that name, as cp does" {
	e3mkfs -q "$T/a.img" 8M
	run e3cp --quiet "$T/etc" "$T/a.img:/etc"
	assert_status 0
	run e3cp --quiet "$T/motd2" "$T/a.img:/etc/motd"
	assert_status 0
	assert_eq "type of /etc/motd" "$(entry_type "$T/a.img" /etc/motd)" regular
	assert_img_file "$T/a.img" /etc/motd "$T/motd2"
	# missing parents are made, as for any destination
	run e3cp --quiet "$T/motd2" "$T/a.img:/new/dir/name"
	assert_status 0
	assert_img_file "$T/a.img" /new/dir/name "$T/motd2"
	# a directory, or a trailing slash, still takes the file in
	run e3cp --quiet "$T/motd2" "$T/a.img:/etc"
	assert_status 0
	assert_img_file "$T/a.img" /etc/motd2 "$T/motd2"
	run e3cp --quiet "$T/motd2" "$T/a.img:/made/"
	assert_status 0
	assert_img_file "$T/a.img" /made/motd2 "$T/motd2"
	# an existing file of that name: the existing-entry rules
	run e3cp --quiet "$T/motd2" "$T/a.img:/etc/one"
	assert_status 1
	assert_output_has "motd2: name exists"
	run e3cp --quiet --overwrite "$T/motd2" "$T/a.img:/etc/one"
	assert_status 0
	assert_img_file "$T/a.img" /etc/one "$T/motd2"
	assert_fsck_clean "$T/a.img"
}

@test "a relative destination is refused, saying it must be absolute; the image untouched" {
	e3mkfs -q "$T/r.img" 8M
	cp "$T/r.img" "$T/r0.img"
	run e3cp "$T/motd2" "$T/r.img:etc"
	assert_status 16
	assert_eq "output" "$output" "e3cp: $T/r.img:etc: the destination must be absolute ($T/r.img:/etc) (see 'e3cp --help')"
	cmp "$T/r.img" "$T/r0.img"
}

@test "SRC=/dest gives each source its own destination; the others go to IMAGE's" {
	e3mkfs -q "$T/p.img" 8M
	run e3cp --quiet "$T/etc=/x/etc" "$T/ov=/opt" "$T/motd2" "$T/p.img:/srv"
	assert_status 0
	assert_img_file "$T/p.img" /x/etc/one "$T/etc/one"
	assert_img_file "$T/p.img" /opt/bin/two "$T/ov/bin/two"
	assert_img_file "$T/p.img" /srv/motd2 "$T/motd2"
	# an existing path holding "=/" is a source as it is
	mkdir -p "$T/odd=" && printf 'odd\n' > "$T/odd=/f"
	run e3cp --quiet "$T/odd=/f" "$T/p.img:/o/"
	assert_status 0
	assert_img_file "$T/p.img" /o/f "$T/odd=/f"
	assert_fsck_clean "$T/p.img"
}
