#!/usr/bin/env bats
# tests/fsck_fuzz.bats: what the directory / htree / journal-superblock
# fuzz campaign (bench/fuzz_dirs.sh, bench/results/fsck-fuzz.md) found,
# each damage built here by hand. Every test runs e3fsck and e2fsck on
# the same damaged image and compares: the verdict under -n, e2fsck -fn
# clean after e3fsck -y, and e3fsck -y deleting no more inodes than
# e2fsck -fy (and leaving the same names).
load helper

setup_file() {
	export F=/tmp/fsck-fuzz-bats.$$
	mkdir -p "$F/src/d" "$F/h1"
	local i
	for i in $(seq 1 30); do echo "file $i" > "$F/src/d/f$i"; done
	for i in $(seq 1 300); do : > "$F/h1/$(printf 'name-%04d-of-forty-bytes-%014d' "$i" 0)"; done
}

teardown_file() {
	rm -rf "$F"
}

# used_inodes IMAGE: inodes in use, as e2fsck -fn counts them
used_inodes() {
	e2fsck -fn "$1" 2>/dev/null | tail -1 | sed -n 's|^[^:]*: \([0-9]*\)/.*|\1|p'
}

# like_e2fsck IMAGE: e3fsck -y on IMAGE, e2fsck -fy on IMAGE.e2; then
# e2fsck -fn clean on IMAGE and no fewer inodes in use than in IMAGE.e2
like_e2fsck() {
	local img=$1 e3used e2used
	cp --sparse=always "$img" "$img.e2"
	# e2fsck -fy may leave errors (exit 5: it needs a second run for some)
	run e2fsck -fy "$img.e2"
	[ "$status" -lt 8 ] || { echo "e2fsck -fy exited $status: $output" >&2; return 1; }
	run timeout 60 e3fsck -y "$img"
	[ "$status" -le 1 ] || { echo "e3fsck -y exited $status: $output" >&2; return 1; }
	assert_fsck_clean "$img"
	e3used=$(used_inodes "$img")
	e2used=$(used_inodes "$img.e2")
	echo "inodes in use: after e3fsck -y $e3used, after e2fsck -fy $e2used" >&2
	[ -n "$e3used" ] && [ -n "$e2used" ] || return 1
	[ "$e3used" -ge "$e2used" ] || return 1
}

# jsb_put IMAGE OFFSET VALUE: a be32 field of the journal superblock
jsb_put() {
	local blk
	blk=$(debugfs -R 'bmap <8> 0' "$1" 2>/dev/null)
	[ -n "$blk" ] || return 1
	python3 -c 'import struct,sys; sys.stdout.buffer.write(struct.pack(">I", int(sys.argv[1])))' "$3" |
		dd of="$1" bs=1 seek=$((blk * 1024 + $2)) conv=notrunc status=none
}

@test "a committed log that begins below s_first (s_first 2 or 1023, s_start 1) is replayed, as e2fsck replays it" {
	local img=$F/first.img first
	e3mkfs -q -b 1024 "$F/first-base.img" 16M
	run env E3_FAULT=stop-after-commit:1 e3cp "$F/src" "$F/first-base.img"
	assert_status 137
	# 1023: the log area past s_first is one block, the log itself longer
	# (the replay's bound counts from s_start)
	for first in 2 1023; do
	cp --sparse=always "$F/first-base.img" "$img"
	jsb_put "$img" 20 $first
	# e2fsck -fn: clean (a replay pending is no error); ours the same
	run e2fsck -fn "$img"
	assert_status 0
	run timeout 60 e3fsck -n "$img"
	assert_status 0
	assert_output_has "journal needs recovery"
	like_e2fsck "$img"
	assert_img_cat "$img" /d/f30 "file 30"
	# the log was replayed, not thrown away
	[ "$(used_inodes "$img")" -gt 40 ]
	done
}

# rename_in IMAGE DIR LBLK FROM TO: the entry FROM in DIR's logical block
# LBLK takes the name TO (same length): two entries with one name. FROM
# "-": the block's second named entry takes the first one's name.
rename_in() {
	local blk bs
	blk=$(debugfs -R "bmap $2 $3" "$1" 2>/dev/null)
	bs=$(dumpe2fs -h "$1" 2>/dev/null | sed -n 's/^Block size: *//p')
	[ -n "$blk" ] && [ -n "$bs" ] || return 1
	python3 - "$1" "$blk" "$bs" "$4" "$5" <<'PY'
import struct, sys
path, blk, bs, old, new = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4].encode(), sys.argv[5].encode()
with open(path, 'r+b') as f:
    f.seek(blk * bs); b = bytearray(f.read(bs)); off = 0; first = None
    while off < bs:
        rl, nl = struct.unpack_from('<H', b, off + 4)[0], b[off + 6]
        name = bytes(b[off + 8:off + 8 + nl])
        if old == b'-' and nl and struct.unpack_from('<I', b, off)[0]:
            if first is None:
                first = name
            elif len(name) == len(first):
                old, new = name, first
        if name == old and len(new) == nl:
            b[off + 8:off + 8 + nl] = new
            f.seek(blk * bs); f.write(b); sys.exit(0)
        off += rl
sys.exit('no entry ' + sys.argv[4])
PY
}

@test "two entries with one name (a plain and an htree directory): the later is renamed NAME~0, no file lost" {
	local img=$F/dup.img
	mkdir -p "$F/dsrc"
	for n in abc abd x y; do echo "$n" > "$F/dsrc/$n"; done
	e3mkfs -q -b 1024 "$img" 8M
	e3cp --quiet "$F/dsrc" "$img"
	e3cp --quiet "$F/h1" "$img:/h1"
	run debugfs -R 'htree /h1' "$img"
	assert_output_has "Indirect levels"
	rename_in "$img" / 0 abd abc
	rename_in "$img" / 0 y x
	# two names in one leaf of the index
	rename_in "$img" /h1 2 - -
	run timeout 60 e3fsck -n "$img"
	assert_status 4
	assert_output_has "appears twice"
	like_e2fsck "$img"
	# as e2fsck names it: the name cut to its padded room, then ~0
	run debugfs -R 'ls /' "$img"
	assert_output_has "ab~0"
	assert_output_has "x~0"
	assert_img_cat "$img" /abc abc
	assert_img_cat "$img" /x x
	[ "$(debugfs -R 'ls /h1' "$img" 2>/dev/null | grep -c '~0')" -eq 1 ]
	run timeout 60 e3fsck -n "$img"
	assert_status 0
}

@test "an htree root with the incompatible flag (bit 0 of its flags) loses its index, as e2fsck clears it; other bits stay, as e2fsck leaves them" {
	local img=$F/rootflag.img blk v e2
	e3mkfs -q -b 1024 "$F/rf-base.img" 8M
	e3cp --quiet "$F/h1" "$F/rf-base.img:/h1"
	for v in 001 200; do
		cp --sparse=always "$F/rf-base.img" "$img"
		blk=$(debugfs -R 'bmap /h1 0' "$img" 2>/dev/null)
		[ -n "$blk" ]
		printf "\\$v" | dd of="$img" bs=1 seek=$((blk * 1024 + 31)) conv=notrunc status=none
		run e2fsck -fn "$img"
		e2=$status
		run timeout 60 e3fsck -n "$img"
		assert_status $e2
		if [ $v = 001 ]; then
			assert_status 4
			assert_output_has "bad root (incompatible flag)"
			like_e2fsck "$img"
			run debugfs -R 'ls /h1' "$img"
			[ "$(grep -o 'name-' <<<"$output" | wc -l)" -eq 300 ]
		fi
	done
}

@test "s_errno set in the journal superblock (an aborted journal): -n names it, -y clears it as e2fsck -fy does, the log still replayed" {
	local img=$F/errno.img
	e3mkfs -q -b 1024 "$img" 16M
	run env E3_FAULT=stop-after-commit:1 e3cp "$F/src" "$img"
	assert_status 137
	jsb_put "$img" 32 $(( (1 << 32) - 5 ))		# -EIO
	# e2fsck 1.47 -fn aborts on it (it tries to clear the field); its
	# -fy clears it and replays
	run timeout 60 e3fsck -n "$img"
	assert_status 0
	assert_output_has "journal superblock records error 5"
	run dumpe2fs -h "$img"
	assert_output_has "Journal errno:"
	like_e2fsck "$img"
	run dumpe2fs -h "$img"
	refute_output_has "Journal errno:"
	assert_img_cat "$img" /d/f30 "file 30"
	run timeout 60 e3fsck -n "$img"
	assert_status 0
	refute_output_has "records error"
}

@test "a '.' whose rec_len is off the 4-byte grid (and its inode garbage): the block keeps '..' and the entries after it, as e2fsck keeps them" {
	local img=$F/dotrl.img blk
	mkdir -p "$F/dsrc2/sub"
	echo one > "$F/dsrc2/sub/one"
	echo two > "$F/dsrc2/sub/two"
	e3mkfs -q -b 4096 "$img" 16M
	e3cp --quiet "$F/dsrc2" "$img"
	blk=$(debugfs -R 'bmap /sub 0' "$img" 2>/dev/null)
	[ -n "$blk" ]
	# '.': inode with its top bits flipped, rec_len 45
	printf '\x81\x2d' | dd of="$img" bs=1 seek=$((blk * 4096 + 3)) conv=notrunc status=none
	run timeout 60 e3fsck -n "$img"
	assert_status 4
	assert_output_has "bad rec_len"
	like_e2fsck "$img"
	assert_img_cat "$img" /sub/one one
	assert_img_cat "$img" /sub/two two
	run debugfs -R 'ls /lost+found' "$img"
	refute_output_has "#"
}

@test "a '.' whose rec_len runs past the block (a high bit flipped, and its inode garbage): '..' and the entries after it stay, as e2fsck keeps them" {
	local img=$F/dotlong.img blk
	mkdir -p "$F/dsrc3/sub"
	echo one > "$F/dsrc3/sub/one"
	echo two > "$F/dsrc3/sub/two"
	e3mkfs -q -b 1024 "$img" 16M
	e3cp --quiet "$F/dsrc3" "$img"
	blk=$(debugfs -R 'bmap /sub 0' "$img" 2>/dev/null)
	[ -n "$blk" ]
	# '.': inode's high byte set, rec_len 12 + 0x2000 (fuzz case 41-289)
	printf '\xa0' | dd of="$img" bs=1 seek=$((blk * 1024 + 1)) conv=notrunc status=none
	printf '\x20' | dd of="$img" bs=1 seek=$((blk * 1024 + 5)) conv=notrunc status=none
	run timeout 60 e3fsck -n "$img"
	assert_status 4
	assert_output_has "bad rec_len"
	like_e2fsck "$img"
	assert_img_cat "$img" /sub/one one
	assert_img_cat "$img" /sub/two two
	run debugfs -R 'ls /lost+found' "$img"
	refute_output_has "#"
}

@test "a '.' whose rec_len swallows '..' and the files after it (its inode garbage): -y gives them back, no file cleared as unattached, as e2fsck keeps them" {
	local img=$F/dotbig.img blk
	mkdir -p "$F/dsrc4/sub"
	: > "$F/dsrc4/sub/empty"
	echo two > "$F/dsrc4/sub/two"
	e3mkfs -q -b 4096 "$img" 16M
	e3cp --quiet "$F/dsrc4" "$img"
	blk=$(debugfs -R 'bmap /sub 0' "$img" 2>/dev/null)
	[ -n "$blk" ]
	# '.': inode + 4, rec_len 2092 (fuzz case 52-208): the records of
	# '..', empty and two lie inside it, the last one running on to 4096
	printf '\x2c\x08' | dd of="$img" bs=1 seek=$((blk * 4096 + 4)) conv=notrunc status=none
	printf '\x04' | dd of="$img" bs=1 seek=$((blk * 4096 + 2)) conv=notrunc status=none
	run timeout 60 e3fsck -n "$img"
	assert_status 4
	like_e2fsck "$img"
	assert_img_cat "$img" /sub/two two
	run debugfs -R 'stat /sub/empty' "$img"
	refute_output_has "not found"
	run debugfs -R 'ls /lost+found' "$img"
	refute_output_has "#"
}

@test "a 2-level htree whose index node's header entry has a name: not an index node (e2fsck reads it as a leaf), -y drops the index, every name stays" {
	local img=$F/node.img root lb nb i
	mkdir -p "$F/long/h2"
	for i in $(seq 1 600); do : > "$F/long/h2/$(printf 'n%05d_%0222d' "$i" 0)"; done
	e3mkfs -q -b 1024 "$img" 16M
	e3cp --quiet "$F/long" "$img"
	run debugfs -R 'htree /h2' "$img"
	assert_output_has "Indirect levels: 1"
	# the root's first pointer names the first index node
	root=$(debugfs -R 'bmap /h2 0' "$img" 2>/dev/null)
	lb=$(dd if="$img" bs=1024 skip="$root" count=1 status=none |
		python3 -c 'import struct,sys; print(struct.unpack_from("<I", sys.stdin.buffer.read(), 36)[0] & 0xfffffff)')
	nb=$(debugfs -R "bmap /h2 $lb" "$img" 2>/dev/null)
	[ -n "$nb" ] && [ "$nb" -gt 0 ]
	printf '\004' | dd of="$img" bs=1 seek=$((nb * 1024 + 6)) conv=notrunc status=none
	run e2fsck -fn "$img"
	assert_status 4
	run timeout 60 e3fsck -n "$img"
	assert_status 4
	assert_output_has "is not an index node"
	like_e2fsck "$img"
	[ "$(debugfs -R 'ls /h2' "$img" 2>/dev/null | grep -o ' n[0-9]\{5\}_' | wc -l)" -eq 600 ]
}

@test "a directory block whose '.' record took in '..' (the rest zeroed): -y splits it and sets '..', clean in one run (e2fsck -fy needs two)" {
	local img=$F/bigdot.img blk
	mkdir -p "$F/dsrc3/e" "$F/dsrc3/f"
	echo x > "$F/dsrc3/f/x"
	e3mkfs -q -b 1024 "$img" 8M
	e3cp --quiet "$F/dsrc3" "$img"
	blk=$(debugfs -R 'bmap /e 0' "$img" 2>/dev/null)
	[ -n "$blk" ]
	dd if=/dev/zero of="$img" bs=1 seek=$((blk * 1024 + 12)) count=1012 conv=notrunc status=none
	run timeout 60 e3fsck -n "$img"
	assert_status 4
	like_e2fsck "$img"
	run debugfs -R 'ls -l /e' "$img"
	assert_output_has ".."
	run timeout 60 e3fsck -n "$img"
	assert_status 0
}

@test "a '.' whose name_len runs past its record: only that entry is lost, '..' and the files after it stay, as e2fsck keeps them" {
	local img=$F/dotnl.img blk
	mkdir -p "$F/dsrc4/sub"
	echo one > "$F/dsrc4/sub/one"
	e3mkfs -q -b 4096 "$img" 16M
	e3cp --quiet "$F/dsrc4" "$img"
	blk=$(debugfs -R 'bmap /sub 0' "$img" 2>/dev/null)
	[ -n "$blk" ]
	printf '\073' | dd of="$img" bs=1 seek=$((blk * 4096 + 6)) conv=notrunc status=none
	run timeout 60 e3fsck -n "$img"
	assert_status 4
	assert_output_has "bad name_len"
	like_e2fsck "$img"
	assert_img_cat "$img" /sub/one one
	run debugfs -R 'ls /lost+found' "$img"
	refute_output_has "#"
}

@test "an htree block pointer with a bit flipped in 24-27 points past the directory, as e2fsck reads it (28 bits)" {
	local img=$F/ptr.img root
	e3mkfs -q -b 1024 "$img" 8M
	e3cp --quiet "$F/h1" "$img:/h1"
	root=$(debugfs -R 'bmap /h1 0' "$img" 2>/dev/null)
	[ -n "$root" ]
	# the root's first entry's block: byte 3 of the pointer at 36
	printf '\002' | dd of="$img" bs=1 seek=$((root * 1024 + 39)) conv=notrunc status=none
	run e2fsck -fn "$img"
	assert_status 4
	run timeout 60 e3fsck -n "$img"
	assert_status 4
	assert_output_has "outside the directory"
	like_e2fsck "$img"
}
