#!/usr/bin/env bats
# tests/htree.bats: directories e3cp writes are already in the form
# `e2fsck -fD` gives them — indexed ones (one and two index levels, names
# of every length) and one-block ones (inode order) — so rebuilding them
# changes no byte: same size, same blocks, same directory block contents.
load helper

setup_file() {
	export T=/tmp/htree-bats-$$
	# e2fsck's defaults (20% leaf slack), whatever the host's e2fsck.conf
	export E2FSCK_CONFIG=/dev/null
	mkdir -p "$T/src/big" "$T/src/mid" "$T/src/varied" "$T/src/mixed"
	(cd "$T/src/big" && seq -f "file-%05g.txt" 1 20000 | xargs touch)
	(cd "$T/src/mid" && seq -f "n%g" 1 300 | xargs touch)
	# two names of each length 1..255
	python3 - "$T/src/varied" <<'EOF'
import os, sys
d = sys.argv[1]
for n in range(1, 256):
    for c in "kq":
        name = (str(n) + c * n)[:n] if n > 3 else c * n
        open(os.path.join(d, name), "w").close()
EOF
	# one block: subdirectories get inodes in other groups, and hard
	# links share an inode, so name order is not inode order here
	(cd "$T/src/mixed" && touch a-file z-file && mkdir b-dir y-dir &&
	 touch b-dir/x y-dir/x && ln a-file m-link && ln z-file c-link)
	# merged into the image's lost+found, which keeps all its blocks
	mkdir -p "$T/src/lost+found" && touch "$T/src/lost+found/b" "$T/src/lost+found/a"
}

teardown_file() {
	rm -rf "/tmp/htree-bats-$$"
}

# newimg PATH BLOCKSIZE [MKE2FS_OPTION...]: a sparse ext3 image with small
# groups and a fixed hash seed (dir_index is on by default)
newimg() {
	local img=$1 bs=$2
	shift 2
	rm -f "$img"
	mke2fs -q -F -t ext3 -b "$bs" -g $((8 * bs)) -N 24576 "$@" \
		-E hash_seed=11111111-2222-3333-4444-555555555555 "$img" 96M || return 1
}

# all_dirs IMAGE: every directory path, depth first
all_dirs() {
	local img=$1 d n
	local -a todo=(/)
	while [ ${#todo[@]} -gt 0 ]; do
		d=${todo[-1]}; unset 'todo[-1]'
		echo "$d"
		while IFS= read -r n; do
			todo+=("${d%/}/$n")
		done < <(debugfs -R "ls -p \"$d\"" "$img" 2>/dev/null |
			 awk -F/ '$3 ~ /^0?40/ && $6 != "." && $6 != ".." { print $6 }')
	done
}

# same_dirs A B [MIN]: A has at least MIN (8) directories, and each has,
# in B, the same inode fields (size, flags, block list...) and the same
# bytes in every block
same_dirs() {
	local a=$1 b=$2 d n=0 bad=0
	while IFS= read -r d; do
		n=$((n + 1))
		if ! diff <(debugfs -R "stat \"$d\"" "$a" 2>/dev/null) \
			  <(debugfs -R "stat \"$d\"" "$b" 2>/dev/null) >&2; then
			echo "$d: inode differs after e2fsck -fD" >&2
			bad=1
		elif ! cmp <(debugfs -R "cat \"$d\"" "$a" 2>/dev/null) \
			   <(debugfs -R "cat \"$d\"" "$b" 2>/dev/null) >&2; then
			echo "$d: blocks differ after e2fsck -fD" >&2
			bad=1
		fi
	done < <(all_dirs "$a")
	echo "compared $n directories" >&2
	[ "$n" -ge "${3:-8}" ] && [ $bad -eq 0 ]
}

# rehash_unchanged BLOCKSIZE [MKE2FS_OPTION...]: copy in, check, rebuild a
# copy, compare
rehash_unchanged() {
	local bs=$1 a=$T/a-$1.img b=$T/b-$1.img
	newimg "$a" "$@" || return 1
	run_e3 e3cp --quiet -j2 "$T/src" "$a"
	assert_status 0 || return 1
	assert_fsck_clean "$a" || return 1
	cp --sparse=always "$a" "$b" || return 1
	run e2fsck -fD -y "$b"
	[ "$status" -le 1 ] || { printf '%s\n' "$output" >&2; return 1; }
	assert_fsck_clean "$b" || return 1
	same_dirs "$a" "$b" || return 1
}

@test "4 KiB blocks: e2fsck -fD leaves every directory e3cp wrote as it was" {
	rehash_unchanged 4096
	run debugfs -R "htree /big" "$T/a-4096.img"
	assert_output_has "Indirect levels: 0"
	run debugfs -R "htree /varied" "$T/a-4096.img"
	assert_output_has "Indirect levels: 0"
}

@test "1 KiB blocks: the same, with two index levels for 20,000 names" {
	rehash_unchanged 1024
	run debugfs -R "htree /big" "$T/a-1024.img"
	assert_output_has "Indirect levels: 1"
	run debugfs -R "htree /mid" "$T/a-1024.img"
	assert_output_has "Indirect levels: 0"
	run debugfs -R "stat /big/file-12345.txt" "$T/a-1024.img"
	assert_output_has "Type: regular"
}

@test "without dir_index: every directory packed in inode order, as e2fsck -fD packs it" {
	rehash_unchanged 1024 -O ^dir_index
	run debugfs -R "htree /big" "$T/a-1024.img"
	assert_output_has "Not a hash-indexed directory"
}

@test "a one-block directory is kept in inode order, dots first, names breaking ties" {
	newimg "$T/m.img" 1024
	run_e3 e3cp --quiet "$T/src/mixed" "$T/m.img"
	assert_status 0
	assert_fsck_clean "$T/m.img"
	run bash -c "debugfs -R 'ls -p /' '$T/m.img' 2>/dev/null | awk -F/ 'NF { print \$2, \$6 }'"
	assert_status 0
	local -a ino=() names=()
	local i n k
	while read -r i n; do ino+=("$i"); names+=("$n"); done <<<"$output"
	echo "order: ${names[*]}" >&2
	[ "${names[0]}" = . ] && [ "${names[1]}" = .. ] && [ ${#names[@]} -eq 9 ]
	for ((k = 3; k < ${#ino[@]}; k++)); do
		if [ "${ino[k - 1]}" -gt "${ino[k]}" ] ||
		   { [ "${ino[k - 1]}" -eq "${ino[k]}" ] &&
		     [[ ! "${names[k - 1]}" < "${names[k]}" ]]; }; then
			echo "not in e2fsck's order" >&2
			return 1
		fi
	done
}

@test "names with one hash split over two leaves: the continued bit, as e2fsck sets it" {
	# With this seed c0072590 and c0076704 share a hash (found once with
	# debugfs dx_hash over a few hundred thousand names) and, among
	# c0000001..c0000065, fall on the first leaf boundary of 1 KiB blocks.
	mkdir -p "$T/coll/c"
	(cd "$T/coll/c" && seq -f "c%07g" 1 65 | xargs touch && touch c0072590 c0076704)
	local seed=11111111-2222-3333-4444-555555555555 h1 h2
	h1=$(debugfs -R "dx_hash -h half_md4 -s $seed c0072590" 2>/dev/null | awk '{ print $5 }')
	h2=$(debugfs -R "dx_hash -h half_md4 -s $seed c0076704" 2>/dev/null | awk '{ print $5 }')
	[ -n "$h1" ] && [ "$h1" = "$h2" ]
	newimg "$T/c.img" 1024
	run_e3 e3cp --quiet "$T/coll" "$T/c.img"
	assert_status 0
	assert_fsck_clean "$T/c.img"
	run debugfs -R "htree /c" "$T/c.img"
	assert_output_has "Hash ${h1%?}$(printf '%x' $(( 0x${h1: -1} | 1 ))) (**), block 2"
	cp --sparse=always "$T/c.img" "$T/d.img"
	run e2fsck -fD -y "$T/d.img"
	[ "$status" -le 1 ]
	assert_fsck_clean "$T/d.img"
	same_dirs "$T/c.img" "$T/d.img" 3
}

@test "a directory too big for two index levels stays linear: the copy succeeds, e2fsck is clean" {
	# 48,000 names of 249 bytes need more 1 KiB leaves than a root and
	# one level of nodes can point at; a third level needs largedir
	mkdir -p "$T/wide/w"
	local pad
	pad=$(printf 'n%.0s' $(seq 241))
	(cd "$T/wide/w" && seq -f "%08g$pad" 1 48000 | xargs touch)
	rm -f "$T/w.img"; truncate -s 160M "$T/w.img"
	mke2fs -q -F -t ext3 -b 1024 -N 60000 -J size=8 "$T/w.img" >/dev/null
	run_e3 e3cp --quiet "$T/wide" "$T/w.img"
	assert_status 0
	assert_fsck_clean "$T/w.img"
	run debugfs -R "stat /w" "$T/w.img"
	[[ "$output" != *"Flags: 0x1000"* ]]	# no index flag
	run debugfs -R "ls /w" "$T/w.img"
	assert_output_has "00048000$pad"
}
