#!/usr/bin/env bash
# tests/mktree.sh DIR [reverse] [bigdir_entries]
# Generates the copy-in test tree: every file type, odd names (spaces, a
# newline, UTF-8, a 255-byte name, leading dashes), sparse and large (over
# 4 GiB, sparse) files, deep nesting, a big directory, hard links, xattrs
# and ACLs (when the filesystem under DIR takes them). With "reverse" the
# same tree is created in the opposite order, so inode numbers and readdir
# order differ while the content is identical.
set -eu
dir=$1 order=${2:-forward} nbig=${3:-20000}
mkdir -p "$dir"
cd "$dir"

seq_order() {	# N: 1..N, or N..1 in reverse
	if [ "$order" = reverse ]; then seq "$1" -1 1; else seq 1 "$1"; fi
}

bytes() {	# N SEED: N pseudo-random bytes, the same on every run
	python3 -c 'import random,sys; random.seed(int(sys.argv[2])); sys.stdout.buffer.write(random.randbytes(int(sys.argv[1])))' "$1" "$2"
}

mk_regular() {
	printf 'hello\n' > plain.txt
	: > empty
	head -c 4096 /dev/zero | tr '\0' 'a' > one-block
	bytes 49153 1 > odd-size.bin
	bytes 3000000 2 > three-megs.bin
	# sparse: data, a hole, data, a trailing hole
	printf 'start' > sparse.img
	printf 'middle' | dd of=sparse.img bs=1 seek=1048576 conv=notrunc status=none
	truncate -s 8M sparse.img
	# over 4 GiB, nearly all hole
	printf 'tail' | dd of=huge-sparse bs=1 seek=$((5 * 1024 * 1024 * 1024)) conv=notrunc status=none
}

mk_names() {
	mkdir -p names
	: > "names/with space"
	: > "names/new
line"
	: > "names/ünïcödé-名前"
	: > "names/-leading-dash"
	: > "names/--double"
	: > "names/$(printf 'n%.0s' $(seq 1 255))"
}

mk_special() {
	mkdir -p special names
	ln -s plain.txt special/link-short
	ln -s "$(printf 'x%.0s' $(seq 1 200))" special/link-long
	ln -s ../plain.txt special/link-up
	mkfifo special/fifo
	python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' special/sock
	if [ "$(id -u)" -eq 0 ]; then
		mknod special/chr c 1 3
		mknod special/blk b 7 0
	fi
	printf 'shared\n' > special/hard-a
	ln special/hard-a special/hard-b
	ln special/hard-a names/hard-c
	chmod 4755 special/hard-a
	: > special/sgid; chmod 2750 special/sgid
	mkdir -p special/sticky; chmod 1777 special/sticky
}

mk_deep() {
	local p=deep
	for i in $(seq 1 60); do p=$p/d$i; done
	mkdir -p "$p"
	printf 'bottom\n' > "$p/leaf"
}

mk_bigdir() {
	mkdir -p bigdir
	for i in $(seq_order "$nbig"); do printf '%s\n' "bigdir/entry-$i"; done |
		xargs -d '\n' touch
}

mk_xattrs() {
	printf 'x\n' > xattr-file
	mkdir -p acl-dir
	setfattr -n user.comment -v "a comment" xattr-file 2>/dev/null || return 0
	setfattr -n user.big -v "$(head -c 600 /dev/zero | tr '\0' 'v')" xattr-file
	setfattr -n trusted.t -v tval xattr-file 2>/dev/null || true
	setfattr -n security.selinux -v "system_u:object_r:etc_t:s0" xattr-file 2>/dev/null || true
	setfattr -n security.capability -v 0sAQAAAgAgAAAAAAAAAAAAAAAAAAA= xattr-file 2>/dev/null || true
	setfacl -m u:1234:rw,g:55:r xattr-file 2>/dev/null || true
	setfacl -d -m u:1234:rwx acl-dir 2>/dev/null || true
}

if [ "$order" = reverse ]; then
	mk_xattrs; mk_bigdir; mk_deep; mk_special; mk_names; mk_regular
else
	mk_regular; mk_names; mk_special; mk_deep; mk_bigdir; mk_xattrs
fi
# fixed times, so two generations compare equal
find . -depth -exec touch -h -d '2020-01-02 03:04:05' {} +
