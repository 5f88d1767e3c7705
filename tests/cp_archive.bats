#!/usr/bin/env bats
# tests/cp_archive.bats: e3cp's archive input where the archive is at
# fault — hard links whose target is missing or escapes (skipped like an
# escaping name, exit 1, nothing made for them), and archives that give no
# entry at all (the source's error, named; the image left as it was).
load helper

setup_file() {
	export T=/tmp/cp-archive-bats-$$
	mkdir -p "$T"
}

teardown_file() {
	rm -rf "/tmp/cp-archive-bats-$$"
}

# newimg PATH: an empty ext3 image, 1 KiB blocks
newimg() {
	rm -f "$1"
	mke2fs -q -F -t ext3 -b 1024 "$1" 8M || return 1
}

# mktar OUT ENTRY...: a tar of the entries in order; ENTRY is name=data
# (a file), name->target (a symlink) or name=>target (a hard link)
mktar() {
	python3 - "$@" <<'PY'
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w", format=tarfile.GNU_FORMAT) as t:
    for arg in sys.argv[2:]:
        for sep, kind in (("=>", tarfile.LNKTYPE), ("->", tarfile.SYMTYPE),
                          ("=", tarfile.REGTYPE)):
            if sep in arg:
                name, rest = arg.split(sep, 1)
                break
        ti = tarfile.TarInfo(name)
        ti.type = kind
        if kind == tarfile.REGTYPE:
            ti.size = len(rest)
            t.addfile(ti, io.BytesIO(rest.encode()))
        else:
            ti.linkname = rest
            t.addfile(ti)
PY
}

# only_line TEXT: the last run printed exactly one line, and it is TEXT
only_line() {
	if [ "$output" != "$1" ]; then
		echo "expected only: $1" >&2
		printf '%s\n' "$output" >&2
		return 1
	fi
}

@test "a hard link whose target is missing is skipped and makes nothing on the target's path" {
	local a=$T/missing
	rm -rf "$a"; mkdir -p "$a"
	# h's target would be under nodir, which then comes as a symlink;
	# sub/h2's target is left out (tar --exclude); f/x goes through a file
	mktar "$a/x.tar" 'h=>nodir/x' 'nodir->target' 'sub/h2=>gone' \
		'f=data' 'h3=>f/x' 'ok=>f'
	newimg "$a/x.img"
	run e3cp "$a/x.tar" "$a/x.img"
	assert_status 1
	assert_output_has "e3cp: h: skipped: hard link target is not in the image"
	assert_output_has "e3cp: sub/h2: skipped: hard link target is not in the image"
	assert_output_has "e3cp: h3: skipped: hard link target is not in the image"
	[ "$(grep -c . <<<"$output")" -eq 3 ]
	run debugfs -R "stat /nodir" "$a/x.img"
	assert_output_has "Type: symlink"
	run debugfs -R "ls /" "$a/x.img"
	[[ "$output" != *sub* ]]
	run debugfs -R "stat /f" "$a/x.img"
	assert_output_has "Links: 2"
	assert_fsck_clean "$a/x.img"
}

@test "a hard link target that escapes is skipped like an escaping name: exit 1" {
	local a=$T/escape
	rm -rf "$a"; mkdir -p "$a"
	mktar "$a/x.tar" 'f=data' 'abs=>/f' 'dots=>../f' 'deep=>d/../../f' \
		'lnk->.' 'through=>lnk/f' 'ok=>f'
	newimg "$a/x.img"
	run e3cp "$a/x.tar" "$a/x.img:/dest"
	assert_status 1
	assert_output_has "e3cp: abs: skipped: path escapes the destination directory"
	assert_output_has "e3cp: dots: skipped: path escapes the destination directory"
	assert_output_has "e3cp: deep: skipped: path escapes the destination directory"
	assert_output_has "e3cp: through: skipped: path goes through a symbolic link"
	[ "$(grep -c . <<<"$output")" -eq 4 ]
	run debugfs -R "ls /dest" "$a/x.img"
	[[ "$output" != *abs* && "$output" != *dots* && "$output" != *deep* &&
	   "$output" != *through* ]]
	run debugfs -R "stat /dest/f" "$a/x.img"
	assert_output_has "Links: 2"
	assert_fsck_clean "$a/x.img"
}

@test "an empty or non-archive stdin is the source's error: one line, exit 2, the image untouched" {
	local a=$T/stdin
	rm -rf "$a"; mkdir -p "$a"
	newimg "$a/x.img"
	cp "$a/x.img" "$a/before.img"
	run e3cp - "$a/x.img" </dev/null
	assert_status 8
	only_line "e3cp: -: source is not a directory, file or archive"
	cmp "$a/x.img" "$a/before.img"
	echo hi > "$a/hi"
	run e3cp - "$a/x.img" <"$a/hi"
	assert_status 8
	only_line "e3cp: -: source is not a directory, file or archive"
	cmp "$a/x.img" "$a/before.img"
	# what comes after it is not copied either: the run stops there
	run e3cp - "$a/hi" "$a/x.img" </dev/null
	assert_status 8
	only_line "e3cp: -: source is not a directory, file or archive"
	cmp "$a/x.img" "$a/before.img"
}

@test "a bad stdin after a source that copied something: named, exit 1 (partial), what came before stays" {
	local a=$T/after
	rm -rf "$a"; mkdir -p "$a/src"
	echo one > "$a/src/one"
	newimg "$a/x.img"
	run e3cp "$a/src" - "$a/x.img" </dev/null
	assert_status 1
	only_line "e3cp: -: source is not a directory, file or archive"
	[ "$(debugfs -R "cat /one" "$a/x.img" 2>/dev/null)" = one ]
	assert_fsck_clean "$a/x.img"
}

@test "a truncated .tar.gz on stdin or as a file is the archive's error, not the image's" {
	local a=$T/cut i
	rm -rf "$a"; mkdir -p "$a/src"
	for i in 1 2 3; do head -c 100000 /dev/urandom > "$a/src/f$i"; done
	tar -C "$a/src" -czf "$a/full.tgz" f1 f2 f3
	head -c 100 "$a/full.tgz" > "$a/early.tgz"	# before the first header
	head -c 150000 "$a/full.tgz" > "$a/late.tgz"	# inside f2's data
	newimg "$a/x.img"
	cp "$a/x.img" "$a/before.img"
	run e3cp - "$a/x.img" <"$a/early.tgz"
	assert_status 8
	only_line "e3cp: -: archive is damaged or truncated"
	cmp "$a/x.img" "$a/before.img"
	run e3cp - "$a/x.img:/s" <"$a/late.tgz"
	assert_status 1
	only_line "e3cp: f2: archive is damaged or truncated"
	assert_fsck_clean "$a/x.img"
	run e3cp "$a/late.tgz" "$a/x.img:/f"
	assert_status 1
	only_line "e3cp: f2: archive is damaged or truncated"
	assert_fsck_clean "$a/x.img"
	debugfs -R "dump /f/f1 $a/f1.out" "$a/x.img" 2>/dev/null
	cmp "$a/src/f1" "$a/f1.out"			# what came before stays
}
