#!/usr/bin/env bats
# tests/cp.bats: e3cp — trees, archives and stdin copied into ext3 images,
# read back by debugfs and the kernel, reproducible at any -j, and the
# refusals (escaping paths, image full, unreadable source, existing entry).
load helper

setup_file() {
	export T=/tmp/cp-bats-$$
	mkdir -p "$T"
	bash "$E3_TOP/tests/mktree.sh" "$T/tree" forward 3000 >/dev/null
	tar -C "$T/tree" -S --xattrs --xattrs-include='*' --acls -czf "$T/tree.tgz" . 2>/dev/null
	tar -C "$T/tree" -S --format=pax --xattrs --xattrs-include='*' --acls --zstd -cf "$T/tree.tar.zst" . 2>/dev/null
}

teardown_file() {
	rm -rf "/tmp/cp-bats-$$"
}

# newimg PATH [SIZE]: an empty ext3 image with 1 KiB blocks and tiny groups,
# fixed UUID and hash seed so that images can be compared byte for byte
newimg() {
	rm -f "$1"
	mke2fs -q -F -t ext3 -b 1024 -g 2048 -U 11111111-2222-3333-4444-555555555555 \
		-E hash_seed=11111111-2222-3333-4444-555555555555 -N 32768 "$1" "${2:-64M}" || return 1
}

mounted_compare() {	# IMAGE SRC [cmptree options]
	local img=$1 src=$2 mnt=$T/mnt
	shift 2
	mkdir -p "$mnt"
	mount -o loop,ro "$img" "$mnt" || return 1
	run python3 "$E3_TOP/tests/cmptree.py" "$src" "$mnt" "$@"
	umount "$mnt" || return 1
	assert_status 0 || return 1
}

@test "a tree is copied whole: e2fsck clean, debugfs rdump gives back every file" {
	newimg "$T/a.img"
	run_e3 e3cp -j2 "$T/tree" "$T/a.img"
	assert_status 0
	assert_fsck_clean "$T/a.img"
	rm -rf "$T/rd"; mkdir "$T/rd"
	debugfs -R "rdump / $T/rd" "$T/a.img" >/dev/null 2>&1
	# rdump keeps no links, xattrs, fifos, sockets or set-id bits
	run python3 "$E3_TOP/tests/cmptree.py" "$T/tree" "$T/rd" --rdump
	assert_status 0
}

@test "directories over one block get an htree index (two levels on 1 KiB blocks) that e2fsck accepts" {
	mkdir -p "$T/hd/big"
	seq 1 8000 | sed 's/^/entry-/' | (cd "$T/hd/big" && xargs touch)
	newimg "$T/h.img"
	run e3cp "$T/hd" "$T/h.img"
	assert_status 0
	assert_fsck_clean "$T/h.img"
	run debugfs -R "htree /big" "$T/h.img"
	assert_output_has "Indirect levels: 1"
	run debugfs -R "stat /big/entry-7777" "$T/h.img"
	assert_output_has "Type: regular"
}

@test "a tree read back through a kernel loop mount: types, modes, owners, times, links, xattrs, ACLs" {
	require_root
	newimg "$T/m.img"
	run_e3 e3cp -j2 "$T/tree" "$T/m.img"
	assert_status 0
	mounted_compare "$T/m.img" "$T/tree"
}

@test "tar.gz, zstd pax and stdin give the same files (sockets are not in tar)" {
	require_root
	for src in "$T/tree.tgz" "$T/tree.tar.zst" -; do
		newimg "$T/z.img"
		run e3cp "$src" "$T/z.img" < "$T/tree.tar.zst"
		assert_status 0
		assert_fsck_clean "$T/z.img"
		mounted_compare "$T/z.img" "$T/tree" --no-sockets
	done
}

@test "--reproducible alone and SOURCE_DATE_EPOCH=0: runs a second apart give identical images (e3cp, e3mkfs -d)" {
	rm -rf "$T/z"; mkdir -p "$T/z/t/a"; echo hi > "$T/z/t/a/f"
	SOURCE_DATE_EPOCH=1700000000 e3mkfs -q -F -b 4096 "$T/z/base.img" 16M
	# what the input makes without dating it gets the image's clock too:
	# device table entries, directories an archive only implies
	printf '/dev d 755 0 0 - - - - -\n/dev/null c 666 0 0 1 3 - - -\n' > "$T/z/dt"
	mkdir -p "$T/z/ar/x/y"; echo z > "$T/z/ar/x/y/z"
	tar -C "$T/z/ar" -cf "$T/z/ar.tar" x/y/z
	for k in 1 2; do
		cp "$T/z/base.img" "$T/z/r$k.img"
		run e3cp --reproducible -j$k -D "$T/z/dt" "$T/z/t" "$T/z/ar.tar" "$T/z/r$k.img"
		assert_status 0
		SOURCE_DATE_EPOCH=0 run e3mkfs -q -b 4096 -d "$T/z/t" "$T/z/m$k.img" 16M
		assert_status 0
		[ $k = 2 ] || sleep 1.1
	done
	cmp "$T/z/r1.img" "$T/z/r2.img"
	cmp "$T/z/m1.img" "$T/z/m2.img"
	# the image clock is 0; with SOURCE_DATE_EPOCH=0 the files' times too
	TZ=UTC LC_ALL=C dumpe2fs -h "$T/z/r1.img" 2>/dev/null | grep -q "^Last write time: *Thu Jan  1 00:00:00 1970"
	for p in /dev/null /x; do
		run debugfs -R "stat $p" "$T/z/r1.img"
		assert_output_has "mtime: 0x00000000:00000000"
	done
	run debugfs -R "stat /a/f" "$T/z/m1.img"
	assert_output_has "mtime: 0x00000000:00000000"
	assert_fsck_clean "$T/z/r1.img"
	assert_fsck_clean "$T/z/m1.img"
	# --overwrite frees an inode: its dtime follows the clock too, and
	# e2fsck must take it for a time (not 0, not an orphan-list link)
	rm "$T/z/t/a/f"; echo other > "$T/z/t/a/g"; ln "$T/z/t/a/g" "$T/z/t/a/f"
	for k in 1 2; do
		cp "$T/z/m1.img" "$T/z/o$k.img"
		SOURCE_DATE_EPOCH=0 run e3cp --overwrite "$T/z/t" "$T/z/o$k.img"
		assert_status 0
		[ $k = 2 ] || sleep 1.1
	done
	cmp "$T/z/o1.img" "$T/z/o2.img"
	assert_fsck_clean "$T/z/o1.img"
	rm -rf "$T/z"
}

@test "SOURCE_DATE_EPOCH: identical images at -j1, -j2, -j8 and from a tree made in reverse order" {
	# fresh trees: reading the shared one (tar, the comparer) moved its
	# atimes, and atimes are part of the input
	bash "$E3_TOP/tests/mktree.sh" "$T/fwd" forward 3000 >/dev/null
	bash "$E3_TOP/tests/mktree.sh" "$T/rev" reverse 3000 >/dev/null
	newimg "$T/base.img"	# one mke2fs: its own times differ per second
	for j in 1 2 8; do
		cp "$T/base.img" "$T/j$j.img"
		SOURCE_DATE_EPOCH=1600000000 run e3cp -j$j "$T/fwd" "$T/j$j.img"
		assert_status 0
	done
	cp "$T/base.img" "$T/rev.img"
	SOURCE_DATE_EPOCH=1600000000 run e3cp -j8 "$T/rev" "$T/rev.img"
	assert_status 0
	cmp "$T/j1.img" "$T/j2.img"
	cmp "$T/j1.img" "$T/j8.img"
	cmp "$T/j1.img" "$T/rev.img"
	assert_fsck_clean "$T/j8.img"
	# every timestamp clamped
	run debugfs -R "stat /plain.txt" "$T/j1.img"
	assert_output_has "Sep 13 12:26:40 2020"
}

@test "into a subdirectory (a trailing /: a directory even for one file): missing parents made; an existing entry is an error unless --overwrite" {
	newimg "$T/d.img"
	run e3cp -v "$T/tree/plain.txt" "$T/d.img:/a/b/c/"
	assert_status 0
	assert_line "/a/b/c/plain.txt"	# -v: image paths
	run e3cp "$T/tree/plain.txt" "$T/d.img:/a/b/c/"
	assert_status 1
	assert_output_has "plain.txt: name exists"
	printf 'new\n' > "$T/plain.txt"
	run e3cp --overwrite "$T/plain.txt" "$T/d.img:/a/b/c/"
	assert_status 0
	assert_img_cat "$T/d.img" /a/b/c/plain.txt new
	assert_fsck_clean "$T/d.img"
}

# replaced IMAGE: after the --overwrite tests below, /d/f0, f1234 and
# f2999 read "v2 N" and /d lists f0..f2999 once each ($output: the list)
replaced() {
	local i n
	for i in 0 1234 2999; do
		assert_img_cat "$1" "/d/f$i" "v2 $i" || return 1
	done
	run debugfs -R "ls /d" "$1"
	n=$(printf '%s\n' "$output" | tr -s ' ' '\n' | grep -c '^f[0-9]*$')
	[ "$n" -eq 3000 ] || { echo "/d lists $n names f*, want 3000" >&2; return 1; }
}

# dir_size IMAGE PATH: the directory's i_size
dir_size() {
	debugfs -R "stat $2" "$1" 2>/dev/null | sed -n 's/.*Size: \([0-9]*\).*/\1/p' | head -1
}

@test "--overwrite in a big indexed directory: each name found through the htree, no duplicates, the rest kept" {
	local a="$T/ow" i
	mkdir -p "$a/src/d"
	(cd "$a/src/d" && seq 0 2999 | sed 's/^/f/' | xargs touch)
	newimg "$a/x.img"
	run e3cp "$a/src" "$a/x.img"
	assert_status 0
	# the copy indexed it: lookups and removals go through the index
	run debugfs -R "stat /d" "$a/x.img"
	assert_output_has "Flags: 0x1000"
	# without --overwrite every name is found to exist: the first five
	# named, the rest counted
	run e3cp "$a/src" "$a/x.img"
	assert_status 1
	assert_output_has "f1000: name exists"
	assert_output_has "2995 more names exist (3000 in all)"
	for i in 0 1234 2999; do printf 'v2 %s\n' $i > "$a/src/d/f$i"; done
	touch "$a/src/d/new1" "$a/src/d/new2"
	run e3cp --overwrite "$a/src" "$a/x.img"
	assert_status 0
	replaced "$a/x.img"
	assert_output_has "new2"
	assert_fsck_clean "$a/x.img"
}

@test "--overwrite in a big directory without an index (mke2fs -d, no dir_index): names found in their block, freed room reused" {
	local a="$T/owl" i size
	rm -rf "$a"; mkdir -p "$a/src/d"
	(cd "$a/src/d" && seq 0 2999 | sed 's/^/f/' | xargs touch)
	mke2fs -q -F -t ext3 -b 1024 -O ^dir_index -N 8192 -d "$a/src" "$a/x.img" 16M >/dev/null
	size=$(dir_size "$a/x.img" /d)
	[ "$size" -gt 30000 ]
	run e3cp "$a/src" "$a/x.img"
	assert_status 1
	assert_output_has "f0: name exists"
	for i in $(seq 0 2999); do printf 'v2 %s\n' $i > "$a/src/d/f$i"; done
	run e3cp --overwrite "$a/src" "$a/x.img"
	assert_status 0
	replaced "$a/x.img"
	# each name went back into the room its removal left: no block added
	[ "$(dir_size "$a/x.img" /d)" -eq "$size" ]
	run debugfs -R "stat /d" "$a/x.img"
	[[ "$output" != *"Flags: 0x1000"* ]]
	assert_fsck_clean "$a/x.img"
}

@test "--overwrite across sources of one run: a later source replaces files still being written" {
	# the first source's files are still with the workers when the
	# second one replaces them: they are closed first, never freed open
	local a=$T/ow i j
	rm -rf "$a"; mkdir -p "$a/one/d" "$a/two/d"
	for i in $(seq 10 49); do
		head -c $(( (i * 7919 % 40 + 14) * 1024 )) /dev/urandom > "$a/one/d/f$i"
		head -c $(( (i * 104729 % 40 + 14) * 1024 )) /dev/urandom > "$a/two/d/f$i"
	done
	ln "$a/one/d/f10" "$a/one/d/link10"	# keeps f10's inode alive
	# one empty image copied: mke2fs stamps the time it ran
	newimg "$a/base.img" 16M
	for j in 1 2 8; do
		cp "$a/base.img" "$a/x$j.img"
		SOURCE_DATE_EPOCH=1700000000 run e3cp -j$j --overwrite "$a/one" "$a/two" "$a/x$j.img"
		assert_status 0
		assert_fsck_clean "$a/x$j.img"
	done
	cmp "$a/x1.img" "$a/x2.img"
	cmp "$a/x1.img" "$a/x8.img"
	rm -rf "$a/out"; mkdir "$a/out"
	debugfs -R "rdump /d $a/out" "$a/x8.img" 2>/dev/null
	for i in $(seq 10 49); do cmp "$a/out/d/f$i" "$a/two/d/f$i"; done
	cmp "$a/out/d/link10" "$a/one/d/f10"
	newimg "$a/x.img" 16M
	run e3cp -j2 --overwrite "$a/one" "$a/two" "$a/x.img"
	assert_status 0
	assert_fsck_clean "$a/x.img"
	rm -rf "$a"
}

@test "--overwrite frees a file a later source hard-links: the link gets the right file, not a reused inode" {
	# one/y and two/z are one host file, two/y another: replacing /y
	# frees the inode one/y became, so two/z must not link to that
	# inode number (reused by the new /y). one/x and two/x are one host
	# file: replacing /x must not lose it.
	local a=$T/owlink j
	rm -rf "$a"; mkdir -p "$a/one" "$a/two"
	echo old-y > "$a/one/y"; ln "$a/one/y" "$a/two/z"
	echo new-y > "$a/two/y"
	echo same-x > "$a/one/x"; ln "$a/one/x" "$a/two/x"
	for j in 1 2 2r; do	# 2r: ordered (reproducible) mode
		newimg "$a/x$j.img" 16M
		if [ $j = 2r ]; then
			run e3cp -j2 --reproducible --overwrite "$a/one" "$a/two" "$a/x$j.img"
		else
			run e3cp -j$j --overwrite "$a/one" "$a/two" "$a/x$j.img"
		fi
		assert_status 0
		assert_fsck_clean "$a/x$j.img"
		[ "$(debugfs -R 'cat /y' "$a/x$j.img" 2>/dev/null)" = new-y ]
		[ "$(debugfs -R 'cat /z' "$a/x$j.img" 2>/dev/null)" = old-y ]
		[ "$(debugfs -R 'cat /x' "$a/x$j.img" 2>/dev/null)" = same-x ]
	done
	rm -rf "$a"
}

@test "an archive's files are closed in batches: links, repeats and directories in between come out right" {
	local a=$T/batch i out
	rm -rf "$a"; mkdir -p "$a/src/sub"
	for i in $(seq 1 40); do printf 'file %s\n' "$i" > "$a/src/f$i"; done
	printf 'first\n' > "$a/src/dup"
	ln "$a/src/f7" "$a/src/hard7"
	printf 'in sub\n' > "$a/src/sub/s"
	tar -C "$a/src" -cf "$a/x.tar" f1 f2 f3 dup hard7 f4 f5 f6 f7 sub f8 $(cd "$a/src" && ls | grep -E '^f([9]|[1-4][0-9])$')
	printf 'second\n' > "$a/src/dup"
	tar -C "$a/src" -rf "$a/x.tar" dup
	newimg "$a/x.img"
	run e3cp "$a/x.tar" "$a/x.img"
	assert_status 1
	assert_output_has "dup: name exists"
	assert_img_cat "$a/x.img" /dup first
	assert_fsck_clean "$a/x.img"
	newimg "$a/x.img"
	run e3cp --overwrite "$a/x.tar" "$a/x.img"
	assert_status 0
	assert_img_cat "$a/x.img" /dup second
	assert_fsck_clean "$a/x.img"
	rm -rf "$a/out"; mkdir "$a/out"
	debugfs -R "rdump / $a/out" "$a/x.img" 2>/dev/null
	for i in $(seq 1 40); do
		[ "$(cat "$a/out/f$i")" = "file $i" ] || { echo "f$i differs" >&2; return 1; }
	done
	[ "$(cat "$a/out/hard7")" = "file 7" ]
	[ "$(cat "$a/out/sub/s")" = "in sub" ]
	out=$(debugfs -R "stat /f7" "$a/x.img" 2>/dev/null)
	[[ "$out" == *"Links: 2"* ]]
}

@test "an archive's hard link to its own name, or repeated, keeps the file, with and without --overwrite" {
	local a=$T/selflink o
	rm -rf "$a"; mkdir -p "$a"
	# a, then "a" linked to "a"; b linked to a twice
	python3 - "$a/x.tar" <<'PY'
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w", format=tarfile.GNU_FORMAT) as t:
    data = b"keep me\n" * 1000
    ti = tarfile.TarInfo("a"); ti.size = len(data)
    t.addfile(ti, io.BytesIO(data))
    for name in ("a", "b", "b"):
        ti = tarfile.TarInfo(name); ti.type = tarfile.LNKTYPE; ti.linkname = "a"
        t.addfile(ti)
PY
	for o in "" --overwrite; do
		newimg "$a/x.img"
		run e3cp $o "$a/x.tar" "$a/x.img"
		assert_status 0
		run debugfs -R "stat /a" "$a/x.img"
		assert_output_has "Links: 2"
		[ "$(debugfs -R "cat /b" "$a/x.img" 2>/dev/null | head -1)" = "keep me" ]
		assert_fsck_clean "$a/x.img"
	done
}

@test "an archive's hard link to a missing target or to a directory fails that entry only" {
	local a=$T/badlink
	rm -rf "$a"; mkdir -p "$a"
	# b links to "gone" (left out of the archive), d is a directory
	# linked to itself; c comes after both
	python3 - "$a/x.tar" <<'PY'
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w", format=tarfile.GNU_FORMAT) as t:
    ti = tarfile.TarInfo("d"); ti.type = tarfile.DIRTYPE; ti.mode = 0o755
    t.addfile(ti)
    for name, target in (("b", "gone"), ("d", "d")):
        ti = tarfile.TarInfo(name); ti.type = tarfile.LNKTYPE; ti.linkname = target
        t.addfile(ti)
    data = b"after\n"
    ti = tarfile.TarInfo("c"); ti.size = len(data)
    t.addfile(ti, io.BytesIO(data))
PY
	newimg "$a/x.img"
	run e3cp "$a/x.tar" "$a/x.img"
	assert_status 1
	assert_output_has "b: skipped: hard link target is not in the image"
	assert_output_has "d: is a directory"
	[ "$(debugfs -R "cat /c" "$a/x.img" 2>/dev/null)" = after ]
	assert_fsck_clean "$a/x.img"
}

@test "a streamed zip on stdin (sizes after the data) is copied whole" {
	python3 -c '
import sys, zipfile
z = zipfile.ZipFile(sys.stdout.buffer, "w", compression=zipfile.ZIP_DEFLATED)
z.writestr("hello.txt", "hello streamed\n" * 100)
z.writestr("sub/two.txt", "two\n")
z.close()' | cat > "$T/s.zip"
	newimg "$T/z2.img"
	run e3cp - "$T/z2.img" < "$T/s.zip"
	assert_status 0
	run debugfs -R "cat /hello.txt" "$T/z2.img"
	[ "$(grep -c 'hello streamed' <<<"$output")" -eq 100 ]
	assert_img_cat "$T/z2.img" /sub/two.txt two
	assert_fsck_clean "$T/z2.img"
}

@test "a cut archive is the archive's error, not the image's: named, exit 2, the image clean" {
	local a=$T/cut i
	rm -rf "$a"; mkdir -p "$a/src"
	for i in 1 2 3; do head -c 20000 /dev/urandom > "$a/src/f$i"; done
	tar -C "$a/src" -cf "$a/full.tar" f1 f2 f3
	head -c 30000 "$a/full.tar" > "$a/data.tar"		# inside f2's data
	head -c $((512 + 20480 + 100)) "$a/full.tar" > "$a/hdr.tar"	# inside f2's header
	newimg "$a/c.img"
	run e3cp "$a/data.tar" "$a/c.img:/d"
	assert_status 1
	assert_output_has "e3cp: f2: archive is damaged or truncated"
	[[ "$output" != *"c.img"* ]]
	run e3cp - "$a/c.img:/h" < "$a/hdr.tar"
	assert_status 1
	assert_output_has "e3cp: -: archive is damaged or truncated"
	debugfs -R "dump /h/f1 $a/f1.out" "$a/c.img" 2>/dev/null
	cmp "$a/src/f1" "$a/f1.out"			# what came before stays
	assert_fsck_clean "$a/c.img"
}

@test "archive entries escaping the destination are refused and named" {
	python3 - "$T/evil.tar" <<'PY'
import io, sys, tarfile
t = tarfile.open(sys.argv[1], 'w')
def add(name, data=b'x', **kw):
    i = tarfile.TarInfo(name); i.size = len(data)
    for k, v in kw.items(): setattr(i, k, v)
    t.addfile(i, io.BytesIO(data) if i.isfile() else None)
add('ok.txt')
add('../escape.txt')
add('/abs.txt')
add('a/../../up.txt')
add('lnk', type=tarfile.SYMTYPE, linkname='/tmp')
add('lnk/through.txt')
t.close()
PY
	newimg "$T/e.img"
	run e3cp "$T/evil.tar" "$T/e.img:/dest"
	assert_status 1
	assert_output_has "../escape.txt"
	assert_output_has "/abs.txt"
	assert_output_has "a/../../up.txt"
	assert_output_has "lnk/through.txt"
	run debugfs -R "ls -p /" "$T/e.img"
	[[ "$output" != *escape* && "$output" != *abs.txt* && "$output" != *up.txt* ]]
	run debugfs -R "ls -p /dest" "$T/e.img"
	assert_output_has "ok.txt"
	assert_fsck_clean "$T/e.img"
}

@test "image full: known before writing for a tree, as it happens for a stream" {
	rm -f "$T/f.img"
	mke2fs -q -F -t ext3 -b 1024 -N 256 "$T/f.img" 4M
	before=$(md5sum < "$T/f.img")
	run e3cp "$T/tree" "$T/f.img"
	assert_status 8
	assert_output_has "image full: need "
	assert_output_has " free)"
	[ "$(md5sum < "$T/f.img")" = "$before" ]
	head -c 6000000 /dev/zero > "$T/big"
	tar -C "$T" -cf "$T/big.tar" big
	# --keep-zeros: zero blocks would otherwise take no room
	run e3cp --keep-zeros - "$T/f.img" < "$T/big.tar"
	assert_status 8
	assert_output_has "image full"
	assert_fsck_clean "$T/f.img"
}

@test "too few inodes: known before writing for a tree, counted, the image untouched (e3cp and e3mkfs -d)" {
	rm -rf "$T/ni"; mkdir -p "$T/ni/many"
	(cd "$T/ni/many" && seq 300 | xargs touch)
	mke2fs -q -F -t ext3 -b 1024 -N 64 "$T/ni/n.img" 8M
	cp "$T/ni/n.img" "$T/ni/n0.img"
	run e3cp "$T/ni/many" "$T/ni/n.img"
	assert_status 8
	assert_output_has "e3cp: $T/ni/n.img: image full: need 247 more inodes (53 free)"
	cmp "$T/ni/n.img" "$T/ni/n0.img"
	run e3mkfs -q -N 64 -d "$T/ni/many" "$T/ni/m.img" 8M
	assert_status 8
	assert_output_has "image full: the input needs 247 more inodes (53 free)"
	assert_fsck_clean "$T/ni/m.img"
	rm -rf "$T/ni"
}

@test "an image marked with errors or not clean is refused, untouched, until e3fsck checks it; --force writes anyway" {
	local state before
	mkdir -p "$T/c"; printf x > "$T/c/x"
	for state in 3 0; do	# clean with errors; not clean
		newimg "$T/c.img" 16M
		debugfs -w -R "ssv state $state" "$T/c.img" 2>/dev/null
		before=$(md5sum < "$T/c.img")
		run e3cp "$T/c" "$T/c.img"
		assert_status 8
		assert_output_has "$T/c.img: filesystem has errors or was not checked after a crash (run e3fsck first)"
		[ "$(md5sum < "$T/c.img")" = "$before" ]
		run e3fsck -y "$T/c.img"
		# as e2fsck: setting "clean" is a change (1), clearing the
		# error flag of a clean filesystem is not (0)
		if [ "$state" = 0 ]; then assert_status 1; else assert_status 0; fi
		dumpe2fs -h "$T/c.img" 2>/dev/null | grep -q '^Filesystem state: *clean$'
		run e3cp "$T/c" "$T/c.img"
		assert_status 0
		assert_fsck_clean "$T/c.img"
	done
	debugfs -w -R "ssv state 0" "$T/c.img" 2>/dev/null
	run e3cp --force "$T/c" "$T/c.img:/forced"
	assert_status 0
	assert_img_cat "$T/c.img" /forced/x x
	assert_fsck_clean "$T/c.img"
	dumpe2fs -h "$T/c.img" 2>/dev/null | grep -q '^Filesystem state: *not clean$'
}

@test "an unreadable source directory is made empty with its mode, owner and times, named, exit 1, in both modes" {
	# as tar does: its stat was readable, its entries are not. Run as
	# the e3ci user when root (setpriv), else as whoever runs the suite;
	# reproducible mode makes a directory's subdirectories before its
	# files, and must make it there too
	local mode as=() owner
	if is_root; then
		require_cmd setpriv
		as=(setpriv --reuid="$(id -u e3ci)" --regid="$(id -g e3ci)" --clear-groups)
	fi
	mkdir -p "$T/ud/a" "$T/ud/b/deep" "$T/ud/c"
	printf 1 > "$T/ud/a/x"; printf 2 > "$T/ud/b/y"; printf 3 > "$T/ud/c/z"
	chmod 755 "$T" "$T/ud" "$T/ud/a" "$T/ud/c"
	chmod 0750 "$T/ud/b"
	touch -d '2001-02-03 04:05:06' "$T/ud/b"
	if is_root; then chown 1234:5678 "$T/ud/b"; fi	# someone else's
	chmod 000 "$T/ud/b"
	owner="User: +$(stat -c %u "$T/ud/b") +Group: +$(stat -c %g "$T/ud/b") "
	for mode in "" --reproducible; do
		newimg "$T/ud.img"; chmod 666 "$T/ud.img"
		run "${as[@]}" "$E3_TOP/misc/e3cp" $mode "$T/ud" "$T/ud.img"
		assert_status 1
		assert_line "e3cp: $T/ud/b: directory cannot be read: made empty, with its mode, owner and times"
		run debugfs -R "stat /b" "$T/ud.img"
		assert_output_has "Type: directory    Mode:  0000"
		assert_match "$output" "$owner"
		assert_output_has "2001"
		run debugfs -R "ls -p /b" "$T/ud.img"
		refute_output_has "/y/"
		refute_output_has "/deep/"
		[ "$(debugfs -R "cat /c/z" "$T/ud.img" 2>/dev/null)" = 3 ]
		[ "$(debugfs -R "cat /a/x" "$T/ud.img" 2>/dev/null)" = 1 ]
		assert_fsck_clean "$T/ud.img"
	done
	chmod 755 "$T/ud/b"
}

@test "an unreadable source file is skipped with a message, exit 1, whoever opens it" {
	# a file its mode says we cannot read is opened by the scanner (in
	# either mode); a second source brings the same name, readable
	local mode ow
	require_cmd setpriv
	mkdir -p "$T/u" "$T/u2"; printf a > "$T/u/ok"; printf b > "$T/u/secret"
	printf 'later\n' > "$T/u2/secret"
	chmod 000 "$T/u/secret"; chmod 755 "$T" "$T/u" "$T/u2"
	for mode in "" --reproducible; do
		newimg "$T/u.img"; chmod 666 "$T/u.img"
		if [ "$(id -u)" -eq 0 ]; then
			run setpriv --reuid=65534 --regid=65534 --clear-groups "$E3_TOP/misc/e3cp" $mode "$T/u" "$T/u.img"
		else
			run e3cp $mode "$T/u" "$T/u.img"
		fi
		assert_status 1
		assert_output_has "secret"
		run debugfs -R "ls -p /" "$T/u.img"
		assert_output_has "/ok/"
		[[ "$output" != *secret* ]]
		assert_fsck_clean "$T/u.img"
		newimg "$T/u.img"; chmod 666 "$T/u.img"
		if [ "$(id -u)" -eq 0 ]; then
			run setpriv --reuid=65534 --regid=65534 --clear-groups "$E3_TOP/misc/e3cp" $mode "$T/u" "$T/u2" "$T/u.img"
		else
			run e3cp $mode "$T/u" "$T/u2" "$T/u.img"
		fi
		assert_status 1
		[ "$(debugfs -R "cat /secret" "$T/u.img" 2>/dev/null)" = later ]
		assert_fsck_clean "$T/u.img"
		# the image's own /secret stays when the replacement cannot
		# be read, with --overwrite or without
		for ow in "" --overwrite; do
			newimg "$T/u.img"; chmod 666 "$T/u.img"
			e3cp "$T/u2" "$T/u.img"
			if [ "$(id -u)" -eq 0 ]; then
				run setpriv --reuid=65534 --regid=65534 --clear-groups "$E3_TOP/misc/e3cp" $mode $ow "$T/u" "$T/u.img"
			else
				run e3cp $mode $ow "$T/u" "$T/u.img"
			fi
			assert_status 1
			assert_output_has "secret"
			[ "$(debugfs -R "cat /secret" "$T/u.img" 2>/dev/null)" = later ]
			assert_fsck_clean "$T/u.img"
		done
	done
}

@test "root without its capabilities: a worker's open fails, the entry it was made for goes again" {
	# uid 0 takes every file for readable, but with an empty bounding
	# set it cannot read another user's mode-000 file: a worker opens
	# it (the default mode), fails, and removes the entry
	local mode
	is_root || skip "skipped: not root (drops root's capabilities)"
	require_cmd setpriv
	mkdir -p "$T/nocap"; printf a > "$T/nocap/ok"; printf b > "$T/nocap/denied"
	chown 65534 "$T/nocap/denied"; chmod 000 "$T/nocap/denied"
	setpriv --bounding-set -all cat "$T/nocap/denied" 2>/dev/null &&
		skip "capabilities are not dropped here"
	for mode in "" --reproducible; do
		newimg "$T/nocap.img"
		run setpriv --bounding-set -all "$E3_TOP/misc/e3cp" $mode "$T/nocap" "$T/nocap.img"
		assert_status 1
		assert_output_has "denied: skipped: Permission denied"
		run debugfs -R "ls -p /" "$T/nocap.img"
		assert_output_has "/ok/"
		[[ "$output" != *denied* ]]
		assert_fsck_clean "$T/nocap.img"
	done
	# reproducible mode opens in the workers too: the entry comes and
	# goes at the same point of the walk whatever -j, among 60 others
	for k in $(seq 10 69); do printf '%s' $k > "$T/nocap/f$k"; done
	SOURCE_DATE_EPOCH=1700000000 e3mkfs -q -F "$T/nocap-base.img" 16M
	for j in 1 4; do
		cp "$T/nocap-base.img" "$T/nocap-j$j.img"
		run setpriv --bounding-set -all "$E3_TOP/misc/e3cp" --reproducible -j$j "$T/nocap" "$T/nocap-j$j.img"
		assert_status 1
		assert_output_has "denied: skipped: Permission denied"
		assert_fsck_clean "$T/nocap-j$j.img"
	done
	cmp "$T/nocap-j1.img" "$T/nocap-j4.img"
	assert_img_cat "$T/nocap-j4.img" /f42 42
	# a later source brings the unreadable file's name: its entry is
	# gone before that source starts, in reproducible mode too
	mkdir -p "$T/nocap1" "$T/nocap2"
	printf a > "$T/nocap1/a"; printf b > "$T/nocap1/denied"
	chown 65534 "$T/nocap1/denied"; chmod 000 "$T/nocap1/denied"
	printf two > "$T/nocap2/denied"; printf g > "$T/nocap2/g1"
	for mode in "" --reproducible; do
		for ow in "" --overwrite; do
			newimg "$T/nocap.img"
			run setpriv --bounding-set -all "$E3_TOP/misc/e3cp" $mode $ow -j2 "$T/nocap1" "$T/nocap2" "$T/nocap.img"
			assert_status 1
			assert_output_has "denied: skipped: Permission denied"
			assert_img_cat "$T/nocap.img" /denied two
			assert_img_cat "$T/nocap.img" /g1 g
			assert_fsck_clean "$T/nocap.img"
		done
	done
}

@test "a source file shorter than its stat size is named as the failing entry, in reproducible mode too" {
	# sysfs attributes claim 4096 bytes and hold a few: the read comes up
	# short, which is the source's fault, not the image's
	local f
	for f in /sys/kernel/uevent_seqnum /sys/kernel/profiling; do
		[ -r "$f" ] && [ "$(stat -c %s "$f")" -gt "$(wc -c < "$f")" ] && break
		f=
	done
	[ -n "$f" ] || skip "skipped: no sysfs attribute that reads short on this kernel"
	for mode in ordered unordered; do
		newimg "$T/short.img"
		if [ $mode = ordered ]; then
			SOURCE_DATE_EPOCH=1700000000 run e3cp "$f" "$T/short.img"
		else
			run e3cp "$f" "$T/short.img"
		fi
		assert_status 1
		assert_output_has "e3cp: $f: "
		assert_fsck_clean "$T/short.img"
	done
}

@test "a sparse file with blocks preallocated past its end keeps its hole" {
	# as many bytes allocated as its size, yet 1 MiB of it is a hole
	mkdir -p "$T/pre"
	dd if=/dev/urandom of="$T/pre/f" bs=4096 seek=256 count=1 status=none
	fallocate -n -o 1052672 -l 2M "$T/pre/f" 2>/dev/null ||
		skip "skipped: no fallocate --keep-size on the host filesystem"
	[ $(( $(stat -c %b "$T/pre/f") * 512 )) -ge "$(stat -c %s "$T/pre/f")" ] ||
		skip "skipped: the host filesystem did not count the preallocation"
	newimg "$T/pre.img"
	run e3cp "$T/pre" "$T/pre.img"
	assert_status 0
	run debugfs -R "stat /f" "$T/pre.img"
	# 4 KiB of data and its double-indirect path (2 blocks), 1 KiB blocks,
	# counted in 512-byte sectors
	assert_output_has "Blockcount: 12"
	debugfs -R "dump /f $T/pre.out" "$T/pre.img" 2>/dev/null
	cmp "$T/pre.out" "$T/pre/f"
	assert_fsck_clean "$T/pre.img"
}

@test "a dense file's zero blocks stay data with --keep-zeros (holes without), its hole past the first MiB stays a hole" {
	# z: 64 KiB of zeros written out (data, not holes); h: 1 MiB + 4 KiB
	# of data, a 1 MiB hole, 4 KiB of data, and preallocation past its
	# end so that as many bytes are allocated as its size
	mkdir -p "$T/dz"
	dd if=/dev/zero of="$T/dz/z" bs=4096 count=16 status=none
	dd if=/dev/urandom of="$T/dz/h" bs=4096 count=257 status=none
	dd if=/dev/urandom of="$T/dz/h" bs=4096 seek=513 count=1 conv=notrunc status=none
	fallocate -n -o 2101248 -l 2M "$T/dz/h" 2>/dev/null ||
		skip "skipped: no fallocate --keep-size on the host filesystem"
	[ $(( $(stat -c %b "$T/dz/h") * 512 )) -ge "$(stat -c %s "$T/dz/h")" ] ||
		skip "skipped: the host filesystem did not count the preallocation"
	[ "$(stat -c %b "$T/dz/z")" -eq 128 ] || skip "skipped: the host filesystem did not allocate written zeros"
	newimg "$T/dz0.img"
	run e3cp "$T/dz" "$T/dz0.img"
	assert_status 0
	run debugfs -R "stat /z" "$T/dz0.img"
	assert_output_has "Blockcount: 0"	# zeros: holes by default
	newimg "$T/dz.img"
	run e3cp --keep-zeros "$T/dz" "$T/dz.img"
	assert_status 0
	run debugfs -R "stat /z" "$T/dz.img"
	# 64 blocks of 1 KiB and one indirect block, in 512-byte sectors
	assert_output_has "Blockcount: 130"
	run debugfs -R "stat /h" "$T/dz.img"
	# 1032 data blocks; IND, DIND and the 4 second-level blocks that
	# map them (a copied hole would make it 2056 data blocks)
	assert_output_has "Blockcount: 2076"
	for f in z h; do
		debugfs -R "dump /$f $T/dz.$f" "$T/dz.img" 2>/dev/null
		cmp "$T/dz.$f" "$T/dz/$f"
	done
	assert_fsck_clean "$T/dz.img"
}

@test "device table, --owner and --uid-map without root" {
	cat > "$T/devtab" <<'DT'
# name	type mode uid gid major minor start inc count
/dev	d    755  0    0    -    -     -     -   -
/dev/console c 600 0 5  5    1     -     -   -
/dev/tty c    666  0    0    4    0     0     1   4
/dev/hda b    640  0    6    3    1     1     1   4
/etc/plain.txt f 600 7 7 - - - - -
DT
	newimg "$T/v.img"
	mkdir -p "$T/etc"; printf x > "$T/etc/plain.txt"
	# the source is ours: map our ids (0 as root), whoever runs this
	run e3cp --uid-map "$(id -u):1000" --gid-map "$(id -g):1000" -D "$T/devtab" "$T/etc" "$T/v.img:/etc"
	assert_status 0
	run debugfs -R "ls -l /dev" "$T/v.img"
	assert_output_has "tty3"
	assert_output_has "hda3"
	[[ "$output" != *tty4* && "$output" != *hda4* ]]
	run debugfs -R "stat /dev/hda2" "$T/v.img"
	assert_output_has "major/minor number: 03:02"
	run debugfs -R "stat /etc/plain.txt" "$T/v.img"
	assert_output_has "User:     7   Group:     7"
	assert_output_has "Mode:  0600"
	run debugfs -R "stat /etc" "$T/v.img"
	assert_output_has "User:  1000   Group:  1000"
	assert_fsck_clean "$T/v.img"
}

@test "a missing source is named before the image is touched (e3cp), before it is made (e3mkfs -d)" {
	rm -rf "$T/ms"; mkdir -p "$T/ms/t"; echo x > "$T/ms/t/f"
	newimg "$T/ms/i.img"
	cp "$T/ms/i.img" "$T/ms/i0.img"
	run e3cp "$T/ms/t" "$T/ms/nope" "$T/ms/i.img"
	assert_status 8
	assert_output_has "e3cp: $T/ms/nope: No such file or directory"
	cmp "$T/ms/i.img" "$T/ms/i0.img"
	run e3mkfs -q -d "$T/ms/nope" "$T/ms/m.img" 16M
	assert_status 8
	assert_output_has "e3mkfs: $T/ms/nope: No such file or directory"
	[ ! -e "$T/ms/m.img" ]
	rm -rf "$T/ms"
}

@test "e3mkfs -d ARCHIVE auto: sized as the same tree is (implied dirs, sparse, xattrs, links); stdin is refused" {
	rm -rf "$T/aa"; mkdir -p "$T/aa/t/a/b"
	truncate -s 50M "$T/aa/t/a/b/sparse"; echo end >> "$T/aa/t/a/b/sparse"
	head -c 70000 /dev/urandom > "$T/aa/t/a/f"
	setfattr -n user.big -v "$(head -c 300 /dev/zero | tr '\0' x)" "$T/aa/t/a/f"
	ln -s "$(printf 'x%.0s' $(seq 80))" "$T/aa/t/a/longlink"
	ln "$T/aa/t/a/f" "$T/aa/t/a/hard"
	for k in $(seq 1 300); do : > "$T/aa/t/a/b/n$k"; done
	# files only, so the archive implies a and a/b without naming them
	(cd "$T/aa/t" && find . ! -type d | sort) > "$T/aa/list"
	tar --sparse --xattrs -C "$T/aa/t" -czf "$T/aa/t.tgz" -T "$T/aa/list"
	run e3mkfs -d "$T/aa/t" "$T/aa/tree.img" auto
	assert_status 0
	tree_line=$(grep "^auto size" <<<"$output")
	run e3mkfs -d "$T/aa/t.tgz" "$T/aa/x.img" auto
	assert_status 0
	[ "$(grep "^auto size" <<<"$output")" = "$tree_line" ]
	assert_fsck_clean "$T/aa/x.img"
	[ "$(debugfs -R "cat /a/b/sparse" "$T/aa/x.img" 2>/dev/null | tail -c 4)" = end ]
	run e3mkfs -q -d - "$T/aa/s.img" auto < "$T/aa/t.tgz"
	assert_status 8
	assert_output_has "SIZE auto cannot measure standard input (it is read once): give a SIZE"
	[ ! -e "$T/aa/s.img" ]
	rm -rf "$T/aa"
}

@test "e3mkfs -d with a SIZE too small: refused before copying, saying how many blocks; the image is empty and clean" {
	rm -rf "$T/sm"; mkdir -p "$T/sm/t"
	for k in $(seq 1 12); do head -c 1048576 /dev/urandom > "$T/sm/t/f$k"; done
	run e3mkfs -q -d "$T/sm/t" "$T/sm/x.img" 8M
	assert_status 8
	assert_output_has "e3mkfs: $T/sm/x.img: image full: the input needs "
	assert_output_has "SIZE auto fits it"
	assert_fsck_clean "$T/sm/x.img"
	run debugfs -R "ls /" "$T/sm/x.img"
	[[ "$output" != *f1* ]]
	rm -rf "$T/sm"
}

@test "e3mkfs -d SRC IMAGE auto+0%: the smallest image that holds the tree, filled, e2fsck clean" {
	rm -f "$T/auto.img"
	run e3mkfs -d "$T/tree" "$T/auto.img" auto+0%
	assert_status 0
	assert_output_has "auto size: "
	assert_fsck_clean "$T/auto.img"
	assert_img_cat "$T/auto.img" /special/hard-b shared
	run debugfs -R "stat /special/hard-a" "$T/auto.img"
	assert_output_has "Links: 3"		# hard-a, hard-b, names/hard-c
	# exact: the room left is at most the root reserve plus a little
	free=$(dumpe2fs -h "$T/auto.img" 2>/dev/null | awk -F: '/^Free blocks/ {print $2+0}')
	resv=$(dumpe2fs -h "$T/auto.img" 2>/dev/null | awk -F: '/^Reserved block count/ {print $2+0}')
	[ "$free" -le $((resv + 64)) ]
	rm -f "$T/auto10.img"
	run e3mkfs -d "$T/tree" "$T/auto10.img" auto+10%
	assert_status 0
	assert_fsck_clean "$T/auto10.img"
	[ "$(stat -c %s "$T/auto10.img")" -gt "$(stat -c %s "$T/auto.img")" ]
	# a file with many names counts once: 40 files of 64 KiB, 5 names
	rm -rf "$T/hl"; mkdir -p "$T/hl/t"
	for k in $(seq 1 40); do
		head -c 65536 /dev/urandom > "$T/hl/t/f$k"
		for j in 1 2 3 4; do ln "$T/hl/t/f$k" "$T/hl/t/g${k}_$j"; done
	done
	run e3mkfs -d "$T/hl/t" "$T/hl/a.img" auto
	assert_status 0
	assert_output_has " and 40 inodes of input"
	assert_fsck_clean "$T/hl/a.img"
	rm -rf "$T/hl"
}

@test "e3cp: running out of space while a directory grows or gets its htree leaves a consistent image" {
	# 245 names: the htree needs an indirect block the linear directory
	# did not; 400 names: the directory grows past 12 blocks while being
	# filled. Each at a few free-block counts around where it runs out.
	local n k free fill failed
	for n in 245 400; do
		rm -rf "$T/full" && mkdir -p "$T/full/big"
		for ((k = 1; k <= n; k++)); do
			: >"$T/full/big/file_with_a_rather_long_name_number_$k"
		done
		tar -C "$T/full" -cf "$T/full.tar" big
		failed=0
		for k in 11 12 13 14 15; do
			rm -f "$T/full.img" && e3mkfs -q -b 1024 "$T/full.img" 8M
			free=$(dumpe2fs -h "$T/full.img" 2>/dev/null | awk '/^Free blocks:/ {print $3}')
			rm -rf "$T/fill" && mkdir "$T/fill"
			# a filler leaving about k blocks (data + its indirect blocks)
			fill=$((free - k - (free - k) / 256 - 2))
			head -c $((fill * 1024)) /dev/zero >"$T/fill/filler"
			e3cp --keep-zeros "$T/fill" "$T/full.img"
			e3cp - "$T/full.img" <"$T/full.tar" >/dev/null 2>&1 || failed=$((failed + 1))
			assert_fsck_clean "$T/full.img"
		done
		[ "$failed" -gt 0 ]
	done
}
