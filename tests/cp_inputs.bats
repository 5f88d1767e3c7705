#!/usr/bin/env bats
# tests/cp_inputs.bats: e3cp — what it takes from its inputs: --owner over
# the id maps, atime/mtime/ctime from a tree (and the source's atime left
# alone), the archive formats cpio, tar.xz, tar.bz2 and zip, and what
# --progress and --quiet print when stderr is not a terminal.
load helper

setup_file() {
	export T=/tmp/cp-inputs-bats-$$
	mkdir -p "$T"
	# the tree every archive is made from
	mkdir -p "$T/a/sub/deep"
	printf 'alpha\n' > "$T/a/one.txt"
	: > "$T/a/empty"
	python3 -c 'import random, sys; r = random.Random(7); sys.stdout.buffer.write(bytes(r.getrandbits(8) for _ in range(300000)))' \
		> "$T/a/sub/blob.bin"
	seq 1 20000 > "$T/a/sub/deep/seq.txt"
	chmod 755 "$T/a/sub/deep/seq.txt"
	ln -s ../one.txt "$T/a/sub/link"
}

teardown_file() {
	rm -rf "/tmp/cp-inputs-bats-$$"
}

# newimg PATH: an empty ext3 image, 4 KiB blocks, 256-byte inodes (so that
# the inodes have room for nanoseconds)
newimg() {
	rm -f "$1"
	e3mkfs -q -F -I 256 -b 4096 "$1" 32M
}

# owner_of IMAGE PATH: "UID:GID" from debugfs stat's User:/Group: line
owner_of() {
	debugfs -R "stat $2" "$1" 2>/dev/null |
		sed -n 's/^User: *\([0-9]*\) *Group: *\([0-9]*\).*/\1:\2/p'
}

# img_time IMAGE PATH FIELD: FIELD (atime, mtime, ctime) of PATH as
# SECONDS.NANOSECONDS, from debugfs stat's "FIELD: 0xSEC:EXTRA" line
# (EXTRA holds the nanoseconds above two epoch bits)
img_time() {
	local line lo extra sec
	line=$(debugfs -R "stat $2" "$1" 2>/dev/null | grep -m1 "^ *$3: ") || return 1
	lo=$(sed -n "s/^ *$3: 0x\([0-9a-f]*\).*/\1/p" <<<"$line")
	extra=$(sed -n "s/^ *$3: 0x[0-9a-f]*:\([0-9a-f]*\) .*/\1/p" <<<"$line")
	[ -n "$lo" ] && [ -n "$extra" ] || { echo "no $3 with nanoseconds in: $line" >&2; return 1; }
	sec=$(( 0x$lo ))
	(( sec >= 0x80000000 )) && sec=$(( sec - 0x100000000 ))
	sec=$(( sec + ((0x$extra & 3) << 32) ))
	printf '%d.%09d\n' "$sec" $(( 0x$extra >> 2 ))
}

# expect_eq WHAT GOT WANT
expect_eq() {
	if [ "$2" != "$3" ]; then
		echo "$1: got '$2', expected '$3'" >&2
		return 1
	fi
}

# check_archive ARCHIVE: copied into a fresh image, e2fsck clean, and what
# debugfs reads back is the tree the archive was made from
check_archive() {
	local arc=$1 img=$T/arc.img
	[ -s "$arc" ] || { echo "no archive $arc" >&2; return 1; }
	newimg "$img" || return 1
	run e3cp "$arc" "$img"
	assert_status 0 || return 1
	assert_fsck_clean "$img" || return 1
	# contents, byte for byte, through debugfs cat
	for f in one.txt empty sub/blob.bin sub/deep/seq.txt; do
		assert_img_file "$img" "/$f" "$T/a/$f" || return 1
	done
	# the whole tree: no entry missing or extra, symlink target kept
	rm -rf "$T/rd"; mkdir "$T/rd"
	debugfs -R "rdump / $T/rd" "$img" >/dev/null 2>&1
	run diff -r --no-dereference -x lost+found "$T/a" "$T/rd"
	assert_status 0 || return 1
	run debugfs -R "stat /sub/link" "$img"
	assert_output_has 'Fast link dest: "../one.txt"' || return 1
	run debugfs -R "stat /sub/deep/seq.txt" "$img"
	assert_output_has "Mode:  0755" || return 1
}

@test "--owner UID:GID: every file, directory and symlink of a tree gets it, over --uid-map/--gid-map" {
	local s=$T/own p u g want
	rm -rf "$s"; mkdir -p "$s/d/e"
	echo f > "$s/f"; echo g > "$s/d/g"; ln -s f "$s/l"; ln -s ../f "$s/d/e/l2"
	# other owners where we may give them (root); the maps cover all of them
	if is_root; then
		chown 7:8 "$s/f"
		chown 9:10 "$s/d"
		chown -h 7:10 "$s/l"
	else
		echo "# skipped: not root: sources owned by other users" >&3
	fi
	local maps=(--uid-map 7:42 --uid-map 9:43 --uid-map "$(id -u):44"
		    --gid-map 8:52 --gid-map 10:53 --gid-map "$(id -g):54")

	# the maps alone apply (so --owner below has something to override)
	newimg "$T/m.img"
	run e3cp "${maps[@]}" "$s" "$T/m.img"
	assert_status 0
	assert_fsck_clean "$T/m.img"
	for p in / /f /d /d/g /d/e /l /d/e/l2; do
		u=$(stat -c %u "$s$p"); g=$(stat -c %g "$s$p")
		case $u in 7) u=42;; 9) u=43;; "$(id -u)") u=44;; esac
		case $g in 8) g=52;; 10) g=53;; "$(id -g)") g=54;; esac
		expect_eq "maps only: owner of $p" "$(owner_of "$T/m.img" "$p")" "$u:$g"
	done

	# --owner wins over the maps, for every entry and the destination
	newimg "$T/o.img"
	run e3cp --owner 1234:5678 "${maps[@]}" "$s" "$T/o.img"
	assert_status 0
	assert_fsck_clean "$T/o.img"
	for p in / /f /d /d/g /d/e /l /d/e/l2; do
		expect_eq "--owner: owner of $p" "$(owner_of "$T/o.img" "$p")" "1234:5678"
	done
}

@test "--owner on an archive: every entry, ids above 65535 stored whole" {
	local s=$T/own2 p
	rm -rf "$s"; mkdir -p "$s/d"
	echo f > "$s/f"; echo g > "$s/d/g"; ln -s f "$s/l"
	tar -C "$s" --numeric-owner --owner=7 --group=8 -cf "$T/own.tar" .
	newimg "$T/oa.img"
	run e3cp --owner 100000:200000 --uid-map 7:1 --gid-map 8:1 "$T/own.tar" "$T/oa.img:/arc"
	assert_status 0
	assert_fsck_clean "$T/oa.img"
	for p in /arc/f /arc/d /arc/d/g /arc/l; do
		expect_eq "owner of $p" "$(owner_of "$T/oa.img" "$p")" "100000:200000"
	done
}

@test "atime, mtime and ctime of a file, a directory, a symlink and the tree's top come from the tree, to the nanosecond" {
	local s=$T/times p f want
	rm -rf "$s"; mkdir -p "$s/dd"
	echo x > "$s/f"; echo y > "$s/dd/y"; ln -s f "$s/sl"
	# atimes older than the mtimes: the case relatime would move on a read
	touch -m -d '2020-03-04 05:06:07.123456789 UTC' "$s/f"
	touch -a -d '2019-01-02 03:04:05.987654321 UTC' "$s/f"
	touch -h -m -d '2018-05-06 07:08:09.000000500 UTC' "$s/sl"
	touch -h -a -d '2017-01-01 00:00:01.250000000 UTC' "$s/sl"
	touch -m -d '2021-06-07 08:09:10.5 UTC' "$s/dd"
	touch -a -d '2016-02-03 04:05:06.75 UTC' "$s/dd"
	touch -m -d '2022-01-01 00:00:00.111 UTC' "$s"
	touch -a -d '2015-01-01 00:00:00.222 UTC' "$s"
	# ctime cannot be set: take the source's own, right before the copy
	declare -A ctime
	for p in /f /sl /dd /; do
		ctime[$p]=$(stat -c %.9Z "$s$p")
	done
	newimg "$T/t.img"
	run e3cp "$s" "$T/t.img"
	assert_status 0
	assert_fsck_clean "$T/t.img"

	expect_eq "/f atime" "$(img_time "$T/t.img" /f atime)" 1546398245.987654321
	expect_eq "/f mtime" "$(img_time "$T/t.img" /f mtime)" 1583298367.123456789
	expect_eq "/sl atime" "$(img_time "$T/t.img" /sl atime)" 1483228801.250000000
	expect_eq "/sl mtime" "$(img_time "$T/t.img" /sl mtime)" 1525590489.000000500
	expect_eq "/dd atime" "$(img_time "$T/t.img" /dd atime)" 1454472306.750000000
	expect_eq "/dd mtime" "$(img_time "$T/t.img" /dd mtime)" 1623053350.500000000
	expect_eq "/ atime" "$(img_time "$T/t.img" / atime)" 1420070400.222000000
	expect_eq "/ mtime" "$(img_time "$T/t.img" / mtime)" 1640995200.111000000
	for p in /f /sl /dd /; do
		expect_eq "$p ctime" "$(img_time "$T/t.img" "$p" ctime)" "${ctime[$p]}"
	done
}

@test "reading a tree leaves its files' and directories' atimes alone (opened with O_NOATIME)" {
	local s=$T/noat
	rm -rf "$s"; mkdir -p "$s/dd"
	echo x > "$s/f"; echo y > "$s/dd/y"; echo c > "$T/control"
	for f in "$s/f" "$T/control"; do
		touch -m -d '2020-03-04 05:06:07 UTC' "$f"
		touch -a -d '2019-01-02 03:04:05 UTC' "$f"
	done
	touch -m -d '2021-06-07 08:09:10 UTC' "$s/dd"
	touch -a -d '2016-02-03 04:05:06 UTC' "$s/dd"
	# a plain read must move an atime here, or this test proves nothing
	cat "$T/control" >/dev/null
	if [ "$(stat -c %X "$T/control")" = 1546398245 ]; then
		skip "skipped: reads do not move atimes on $(findmnt -no TARGET -T "$T" 2>/dev/null || echo "$T") (noatime)"
	fi
	newimg "$T/n.img"
	run e3cp "$s" "$T/n.img"
	assert_status 0
	assert_fsck_clean "$T/n.img"
	assert_img_cat "$T/n.img" /f x
	expect_eq "source file atime after the copy" "$(stat -c %X "$s/f")" 1546398245
	expect_eq "source dir atime after the copy" "$(stat -c %X "$s/dd")" 1454472306
	# and so a second copy carries the same atime as the first
	newimg "$T/n2.img"
	run e3cp "$s" "$T/n2.img"
	assert_status 0
	expect_eq "second copy /f atime" "$(img_time "$T/n2.img" /f atime)" 1546398245.000000000
}

@test "cpio (newc): contents, symlink and modes read back by debugfs" {
	local arc=$T/a.cpio
	require_cmd cpio
	rm -f "$arc"
	(cd "$T/a" && find . | cpio -o -H newc > "$arc" 2>/dev/null)
	[ "$(head -c 6 "$arc")" = 070701 ] || { echo "not a newc archive" >&2; return 1; }
	check_archive "$arc"
}

@test "tar.xz: contents, symlink and modes read back by debugfs" {
	require_cmd xz
	tar -C "$T/a" -cJf "$T/a.tar.xz" .
	[ "$(head -c 6 "$T/a.tar.xz" | od -An -tx1 | tr -d ' \n')" = fd377a585a00 ] ||
		{ echo "not xz" >&2; return 1; }
	check_archive "$T/a.tar.xz"
}

@test "tar.bz2: contents, symlink and modes read back by debugfs" {
	require_cmd bzip2
	tar -C "$T/a" -cjf "$T/a.tar.bz2" .
	[ "$(head -c 3 "$T/a.tar.bz2")" = BZh ] || { echo "not bzip2" >&2; return 1; }
	check_archive "$T/a.tar.bz2"
}

@test "zip (by zip and by bsdtar): contents, symlink and modes read back by debugfs" {
	require_cmd zip bsdtar
	rm -f "$T/a.zip" "$T/b.zip"
	(cd "$T/a" && zip -qry "$T/a.zip" .)
	[ "$(head -c 2 "$T/a.zip")" = PK ] || { echo "not a zip" >&2; return 1; }
	check_archive "$T/a.zip"
	bsdtar --format=zip -cf "$T/b.zip" -C "$T/a" .
	[ "$(head -c 2 "$T/b.zip")" = PK ] || { echo "not a zip" >&2; return 1; }
	check_archive "$T/b.zip"
}

@test "--progress with stderr not a terminal: a progress line ending on the file count and bytes" {
	local s=$T/prog i n last
	rm -rf "$s"; mkdir -p "$s/a" "$s/b"
	for i in $(seq 1 30); do echo "$i" > "$s/a/f$i"; done
	head -c 2097152 /dev/zero | tr '\0' z > "$s/b/big"
	ln -s ../a "$s/b/ln"
	n=$(find "$s" -mindepth 1 | wc -l)	# 34 entries
	newimg "$T/p.img"
	local rc=0
	e3cp --progress "$s" "$T/p.img" > "$T/p.out" 2> "$T/p.err" < /dev/null || rc=$?
	expect_eq "exit status" "$rc" 0
	assert_fsck_clean "$T/p.img"
	[ ! -s "$T/p.out" ] || { echo "stdout not empty:" >&2; cat "$T/p.out" >&2; return 1; }
	# the line is redrawn with \r; the last drawing has the totals (of
	# the measured ones), then a closing line says what was copied
	last=$(tr '\r' '\n' < "$T/p.err" | grep -v '^ *$' | tail -n 2 | head -n 1)
	if ! [[ $last =~ ^$n\ of\ $n\ files,\ 2\.0\ of\ 2\.0\ MiB,\ [0-9.]+\ MiB/s ]]; then
		echo "last progress line: '$last' (want '$n of $n files, 2.0 of 2.0 MiB, ... MiB/s')" >&2
		cat -A "$T/p.err" >&2
		return 1
	fi
	[ "$(tail -n 1 "$T/p.err")" = "e3cp: $T/p.img: $n entries, 2.0 MiB of data copied" ] ||
		{ echo "no closing line" >&2; cat -A "$T/p.err" >&2; return 1; }
	# and the line is finished with a newline
	[ "$(tail -c 1 "$T/p.err" | od -An -c | tr -d ' ')" = '\n' ] ||
		{ echo "progress line not ended by a newline" >&2; return 1; }
}

@test "--quiet prints nothing on success, even with --progress; no progress by default off a terminal" {
	local s=$T/quiet opt rc
	rm -rf "$s"; mkdir -p "$s/d"
	echo a > "$s/a"; echo b > "$s/d/b"
	for opt in --quiet "--progress --quiet" "--quiet --progress" ""; do
		newimg "$T/q.img"
		# shellcheck disable=SC2086
		rc=0
		e3cp $opt "$s" "$T/q.img" > "$T/q.out" 2> "$T/q.err" < /dev/null || rc=$?
		expect_eq "exit status with '$opt'" "$rc" 0
		if [ -s "$T/q.out" ] || [ -s "$T/q.err" ]; then
			echo "e3cp $opt printed:" >&2
			cat -A "$T/q.out" "$T/q.err" >&2
			return 1
		fi
		assert_img_cat "$T/q.img" /a a
		assert_img_cat "$T/q.img" /d/b b
	done
	assert_fsck_clean "$T/q.img"
}
