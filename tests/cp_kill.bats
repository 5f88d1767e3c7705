#!/usr/bin/env bats
# tests/cp_kill.bats: e3cp killed in the middle of a copy. After the
# journal is replayed (by e2fsck, an oracle we did not write), every file
# in the image is byte-equal to its source or absent — never a name with
# less than its data, as a commit that took a file's entry before its
# close used to leave (0-byte impostors) — and `e3cp --update` then
# finishes the job: the image holds the tree, e2fsck -fn calls it clean.
load helper

setup_file() {
	export T=/tmp/cli-kill-bats-$$
	mkdir -p "$T/src"
	# 3 directories of 200 files, 1 byte to 60 KiB, a few of 1-2 MiB
	# (about 25 MiB), into a 1 MiB journal: commits to kill between
	python3 - "$T/src" <<'EOF'
import os, random, sys
r = random.Random(20)
for d in "abc":
    os.mkdir(os.path.join(sys.argv[1], d))
    for i in range(200):
        n = r.randrange(1, 60000) if i % 50 else r.randrange(1 << 20, 2 << 20)
        with open(os.path.join(sys.argv[1], d, "f%03d" % i), "wb") as f:
            f.write(r.randbytes(n))
EOF
	e3mkfs -q -J size=1 "$T/base.img" 96M
}

teardown_file() {
	rm -rf "/tmp/cli-kill-bats-$$"
}

# whole_or_absent IMG: replays IMG's journal with e2fsck, then every
# regular file in it equals the source's of the same path; prints how
# many files the image holds.
whole_or_absent() {
	local img=$1 out=$1.out f n=0
	e2fsck -E journal_only -y "$img" >/dev/null 2>&1
	[ $? -le 1 ] || { echo "e2fsck could not replay $img" >&2; return 1; }
	rm -rf "$out"
	mkdir "$out" || return 1
	debugfs -R "rdump / $out" "$img" 2>/dev/null || return 1
	while IFS= read -r -d '' f; do
		n=$((n + 1))
		if ! cmp -s "$out/$f" "$T/src/$f"; then
			echo "$img: $f is not its source's bytes ($(stat -c %s "$out/$f") bytes of $(stat -c %s "$T/src/$f"))" >&2
			return 1
		fi
	done < <(cd "$out" && find . -type f ! -path './lost+found/*' -print0)
	echo "$n"
}

# finish IMG: e3cp --update completes the copy; IMG holds the tree, clean.
finish() {
	local img=$1
	e3cp --quiet --update "$T/src" "$img" || { echo "e3cp --update failed" >&2; return 1; }
	rm -rf "$img.out"
	mkdir "$img.out" || return 1
	debugfs -R "rdump / $img.out" "$img" 2>/dev/null || return 1
	diff -r -x lost+found "$T/src" "$img.out" >&2 || return 1
	assert_fsck_clean "$img" || return 1
}

@test "a kill right after a commit (stop-after-commit:N): every file whole or absent; --update finishes" {
	local n got seen=0
	for n in 1 2 3; do
		cp "$T/base.img" "$T/s$n.img"
		E3_FAULT=stop-after-commit:$n run e3cp --quiet -j2 "$T/src" "$T/s$n.img"
		assert_status 137
		got=$(whole_or_absent "$T/s$n.img") || return 1
		# the kill came before the end: some files are not there yet
		[ "$got" -lt 600 ] || { echo "s$n: all $got files there" >&2; return 1; }
		[ "$got" -gt "$seen" ] || { echo "commit $n kept $got files, fewer than commit $((n - 1))'s $seen" >&2; return 1; }
		seen=$got
		finish "$T/s$n.img" || return 1
	done
}

@test "SIGKILL at random moments (ordered and unordered copies): every file whole or absent; --update finishes" {
	local i delay opt got
	for i in 1 2 3 4; do
		cp "$T/base.img" "$T/k$i.img"
		opt=-j2
		[ $((i % 2)) -eq 0 ] && opt=--reproducible
		delay=$(python3 -c "import random; print(random.uniform(0.05, 0.6))")
		e3cp --quiet "$opt" "$T/src" "$T/k$i.img" &
		sleep "$delay"
		kill -9 $! 2>/dev/null || true
		wait $! || true
		got=$(whole_or_absent "$T/k$i.img") || { echo "after ${delay}s ($opt)" >&2; return 1; }
		finish "$T/k$i.img" || return 1
	done
}

# e3mkfs -d keeps the journal through the fill (see fill() in
# misc/e3mkfs.c and e3mkfs(8), "A kill during -d"): a kill after the format
# leaves a consistent image holding a prefix of the tree, as e3cp's does.
@test "e3mkfs -d killed right after a commit: every file whole or absent; e3cp --update finishes" {
	local n got seen=0
	for n in 1 3; do
		rm -f "$T/m$n.img"
		E3_FAULT=stop-after-commit:$n run e3mkfs -q -J size=1 -d "$T/src" "$T/m$n.img" 96M
		assert_status 137
		got=$(whole_or_absent "$T/m$n.img") || return 1
		[ "$got" -lt 600 ] || { echo "m$n: all $got files there" >&2; return 1; }
		[ "$got" -gt "$seen" ] || { echo "commit $n kept $got files, fewer than commit 1's $seen" >&2; return 1; }
		seen=$got
		finish "$T/m$n.img" || return 1
	done
}

# Killed while it formats, e3mkfs leaves no image, or one without its
# primary superblock (written last, as mke2fs writes it), which e3cp
# refuses in one line naming it; killed while it fills, the case above.
@test "e3mkfs -d SIGKILLed at random moments, the format included: refused in one line, or whole-or-absent and --update finishes" {
	local i delay got refused=0
	for i in 1 2 3 4 5 6; do
		rm -f "$T/r$i.img"
		delay=$(python3 -c "import random; print(random.uniform(0.0, 0.02) if $i <= 3 else random.uniform(0.05, 0.5))")
		e3mkfs -q -J size=1 -d "$T/src" "$T/r$i.img" 96M &
		sleep "$delay"
		kill -9 $! 2>/dev/null || true
		wait $! || true
		# the primary superblock (dumpe2fs reads no backup unless told)
		if dumpe2fs -h "$T/r$i.img" >/dev/null 2>&1; then
			got=$(whole_or_absent "$T/r$i.img") || { echo "after ${delay}s" >&2; return 1; }
			finish "$T/r$i.img" || { echo "after ${delay}s" >&2; return 1; }
		else
			run e3cp --quiet --update "$T/src" "$T/r$i.img"
			assert_status 8
			[ "${#lines[@]}" -eq 1 ] || { echo "after ${delay}s: not one line: $output" >&2; return 1; }
			assert_match "$output" "^e3cp: $T/r$i.img: (No such file or directory|not an ext2/ext3 filesystem|image is smaller than its filesystem)"
			refused=$((refused + 1))
		fi
	done
	echo "refused $refused of 6" >&3
}

@test "--update on a complete image copies nothing, replaces what differs" {
	cp "$T/base.img" "$T/u.img"
	run e3cp --quiet "$T/src" "$T/u.img"
	assert_status 0
	# nothing differs: no file is copied again (-v lists what is)
	ino=$(debugfs -R 'stat /b/f007' "$T/u.img" 2>/dev/null | head -1)
	run e3cp --quiet -v --update "$T/src" "$T/u.img"
	assert_status 0
	refute_match "$output" '/f[0-9]+$'
	assert_eq "inode of /b/f007" "$(debugfs -R 'stat /b/f007' "$T/u.img" 2>/dev/null | head -1)" "$ino"
	# a changed size and a changed mtime are copied again; a same-size,
	# same-mtime change is not (that is what --update promises, as rsync)
	mkdir -p "$T/src2/a"
	printf 'longer now\n' > "$T/src2/a/f001"
	cp -p "$T/src/a/f002" "$T/src2/a/f002"
	touch -d '2001-01-01' "$T/src2/a/f002"
	head -c "$(stat -c %s "$T/src/a/f003")" /dev/zero > "$T/src2/a/f003"
	touch -r "$T/src/a/f003" "$T/src2/a/f003"
	run e3cp --quiet --update "$T/src2" "$T/u.img"
	assert_status 0
	assert_img_file "$T/u.img" /a/f001 "$T/src2/a/f001"
	assert_img_file "$T/u.img" /a/f002 "$T/src2/a/f002"
	assert_eq "f002 mtime" "$(debugfs -R 'stat /a/f002' "$T/u.img" 2>/dev/null | grep -c 'mtime:.*2001')" 1
	assert_img_file "$T/u.img" /a/f003 "$T/src/a/f003"
	assert_fsck_clean "$T/u.img"
}
