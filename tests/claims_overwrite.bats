#!/usr/bin/env bats
# e3cp --overwrite measured as replacement (lib/copyin_credit.c): copying
# again what the image holds costs what the first copy did, for a tree and
# for an archive, even into an image sized exactly for it (e3mkfs auto);
# what really does not fit is still refused before anything is written.
load helper

setup() {
	T=$BATS_TEST_TMPDIR
	mkdir -p "$T/src/d1/d2"
	local i
	for i in $(seq 1 40); do head -c $((i * 1500)) /dev/urandom > "$T/src/f$i"; done
	for i in $(seq 1 12); do head -c 70000 /dev/urandom > "$T/src/d1/g$i"; done
	head -c 300000 /dev/urandom > "$T/src/d1/d2/big"	# indirect blocks
	echo x > "$T/src/d1/d2/small"
	ln -s f1 "$T/src/fast"
	ln -s "$(printf 'long%.0s' $(seq 1 30))" "$T/src/slow"	# a block of its own
	export SOURCE_DATE_EPOCH=1700000000
}

# same_files IMAGE TREE: every regular file of TREE reads back from IMAGE
same_files() {
	local img=$1 tree=$2 f n=0
	while IFS= read -r f; do
		debugfs -R "dump /$f $T/out" "$img" >/dev/null 2>&1 || return 1
		cmp "$T/out" "$tree/$f" || { echo "/$f differs" >&2; return 1; }
		n=$((n + 1))
	done < <(cd "$tree" && find . -type f | sed 's|^\./||')
	[ "$n" -gt 50 ] || { echo "only $n files compared" >&2; return 1; }
}

free_blocks() {
	dumpe2fs -h "$1" 2>/dev/null | sed -n 's/^Free blocks:[[:space:]]*//p'
}

@test "tree: --overwrite of the tree an auto-sized image holds succeeds, e2fsck clean, contents new" {
	e3mkfs -q -d "$T/src" "$T/a.img" auto+0%
	assert_fsck_clean "$T/a.img"
	# the same names, new contents of the same sizes
	for f in "$T"/src/f* "$T"/src/d1/g* "$T/src/d1/d2/big"; do
		head -c "$(stat -c %s "$f")" /dev/urandom > "$f.new" && mv "$f.new" "$f"
	done
	run e3cp -j2 --overwrite "$T/src" "$T/a.img"
	assert_status 0
	assert_fsck_clean "$T/a.img"
	same_files "$T/a.img" "$T/src"
	# and again, and at -j1
	run e3cp -j1 --overwrite "$T/src" "$T/a.img"
	assert_status 0
	assert_fsck_clean "$T/a.img"
	same_files "$T/a.img" "$T/src"
}

@test "tree: a replacement that outgrows the free space is refused before anything is written" {
	e3mkfs -q -d "$T/src" "$T/a.img" auto+5%
	cp "$T/a.img" "$T/before.img"
	local free
	free=$(free_blocks "$T/a.img")
	# f1 grows by more than is free (4 KiB blocks: free * 4 KiB + 1 MiB)
	head -c $(((free + 256) * 4096)) /dev/zero | tr '\0' z > "$T/src/f1"
	run e3cp --overwrite "$T/src" "$T/a.img"
	assert_status 8
	assert_output_has "e3cp: $T/a.img: image full: need "
	cmp "$T/a.img" "$T/before.img"
}

@test "tree: an entry never borrows what a later one frees: f1 outgrows the free space, zbig shrinks more; refused, nothing written" {
	head -c 2000000 /dev/urandom > "$T/src/zbig"	# after f1 in the walk
	e3mkfs -q -d "$T/src" "$T/a.img" auto+0%
	cp "$T/a.img" "$T/before.img"
	local free
	free=$(free_blocks "$T/a.img")
	# f1 needs free + 20 blocks more; zbig gives back all of its 489:
	# the total fits, but f1 is copied (and would run out) first
	head -c $((1500 + (free + 20) * 4096)) /dev/urandom > "$T/src/f1"
	: > "$T/src/zbig"
	run e3cp --overwrite "$T/src" "$T/a.img"
	assert_status 8
	assert_output_has "e3cp: $T/a.img: image full: need "
	cmp "$T/a.img" "$T/before.img"
}

@test "tree: in an image sized exactly for it, --overwrite gives the same bytes at -j1 and -j2" {
	e3mkfs -q -d "$T/src" "$T/a.img" auto+0%
	cp "$T/a.img" "$T/b.img"
	run e3cp -j1 --overwrite "$T/src" "$T/a.img"
	assert_status 0
	run e3cp -j2 --overwrite "$T/src" "$T/b.img"
	assert_status 0
	cmp "$T/a.img" "$T/b.img"
	assert_fsck_clean "$T/a.img"
}

@test "archive: --overwrite of the archive an auto-sized image holds succeeds (it ran out half way), e2fsck clean" {
	tar cf "$T/src.tar" -C "$T/src" .
	e3mkfs -q -d "$T/src.tar" "$T/a.img" auto+0%
	for f in "$T"/src/f* "$T"/src/d1/g*; do
		head -c "$(stat -c %s "$f")" /dev/urandom > "$f.new" && mv "$f.new" "$f"
	done
	tar cf "$T/src.tar" -C "$T/src" .
	run e3cp --overwrite "$T/src.tar" "$T/a.img"
	assert_status 0
	assert_fsck_clean "$T/a.img"
	same_files "$T/a.img" "$T/src"
	run e3cp --overwrite - "$T/a.img" < "$T/src.tar"
	assert_status 0
	assert_fsck_clean "$T/a.img"
}
