#!/usr/bin/env bats
# tests/mkfs_dropin.bats: e3mkfs as a drop-in for `mke2fs -t ext3` (issue 20,
# item 9). Each line of the tables below is an mke2fs command line as
# pipelines write it; it runs through mke2fs and, with only the name
# changed, through e3mkfs, both with UUID, hash seed and time pinned.
# Without -d the images must be byte-identical (cmp); with -d, dumpe2fs -h
# must agree on the geometry and the two trees must be the same
# (tests/cmptree.py). What still differs is in doc/mkfs-differences.md.

load helper

UUID=11111111-2222-3333-4444-555555555555
SEED=66666666-7777-8888-9999-aaaaaaaaaaaa
EPOCH=1700000000

setup() {
	T=$(mktemp -d /tmp/mkfs-dropin.XXXXXX)
	mkdir -p "$T/tree/etc/default" "$T/tree/usr/bin" "$T/tree/var/empty"
	echo "hello" > "$T/tree/etc/motd"
	printf 'A=1\nB=2\n' > "$T/tree/etc/default/app"
	head -c 300000 /dev/urandom > "$T/tree/usr/bin/tool"
	chmod 755 "$T/tree/usr/bin/tool"
	ln -s ../usr/bin/tool "$T/tree/etc/tool-link"
	for i in $(seq 1 40); do echo "file $i" > "$T/tree/var/f$i"; done
	# older than the pinned epoch, which e3mkfs clamps times to
	find "$T/tree" -exec touch -h -d @1600000000 {} +
}

teardown() {
	rm -rf "$T"
}

# The command lines: ARGS ... IMG SIZE, with IMG standing for the image and
# TREE for the source tree. A line without -U or hash_seed gets the pinned
# ones appended (mke2fs keeps only the last -E, so a line with -E names
# hash_seed inside it).
NO_D=(
	"-t ext3 IMG 65536"
	"-t ext3 -b 4096 IMG 16384"
	"-t ext3 -L rootfs -U $UUID -E hash_seed=$SEED IMG 64M"
	"-t ext3 -b 4096 -N 20000 -m 0 IMG 128M"
	"-t ext3 -I 128 -i 8192 IMG 100M"
	"-t ext3 -T news IMG 64M"
	"-t ext3 -T largefile -m 1 IMG 200M"
	"-t ext3 -E lazy_itable_init=0,hash_seed=$SEED IMG 128M"
	"-t ext3 -E root_owner=1000:1000,hash_seed=$SEED IMG 32M"
	"-t ext3 -j -b 2048 IMG 48M"
	"-t ext2 IMG 64M"
	"-t ext2 -j IMG 64M"
	"-t ext3 -e remount-ro -M /srv IMG 64M"
	"-t ext3 -E stride=16,stripe_width=64,hash_seed=$SEED IMG 128M"
	"-t ext3 -o Linux -r 1 -E test_fs,nodiscard,hash_seed=$SEED IMG 32M"
	"-t ext3 -T small -b 1024 IMG 262144s"
	"-t ext3 -J size=16 -g 4096 IMG 64M"
	"-t ext3 -q -F -b 1024 -I 256 IMG 8192k"
)
WITH_D=(
	"-t ext3 -d TREE IMG 64M"
	"-t ext3 -b 4096 -N 2000 -L data -d TREE IMG 32768"
	"-t ext3 -E root_owner=0:0,lazy_itable_init=0,hash_seed=$SEED -d TREE IMG 100M"
	"-t ext3 -T small -m 0 -I 256 -d TREE IMG 40000"
)

# words LINE: the line's words, one per line, with TREE filled in, IMG as
# @IMG@, and the pinned identity first where the line has none.
words() {
	local w pin_u=1 pin_s=1
	for w in $1; do
		case "$w" in -U) pin_u=0 ;; -E) pin_s=0 ;; esac
	done
	# options must come before IMG: the pins go first
	if [ $pin_u -eq 1 ]; then printf '%s\n' -U "$UUID"; fi
	if [ $pin_s -eq 1 ]; then printf '%s\n' -E "hash_seed=$SEED"; fi
	for w in $1; do
		case "$w" in
		IMG) printf '%s\n' "@IMG@" ;;
		TREE) printf '%s\n' "$T/tree" ;;
		*) printf '%s\n' "$w" ;;	# not echo: it eats -e and -E
		esac
	done
}

# run_both LINE: the line through mke2fs into $T/m.img and e3mkfs into
# $T/e.img; a failure names the line.
run_both() {
	local -a args
	mapfile -t args < <(words "$1")
	[ "${#args[@]}" -gt 2 ] || return 1
	rm -f "$T/m.img" "$T/e.img"
	E2FSPROGS_FAKE_TIME=$EPOCH mke2fs -q -F "${args[@]/#@IMG@/$T/m.img}" \
		>/dev/null 2>&1 || { echo "mke2fs failed: $1" >&2; return 1; }
	SOURCE_DATE_EPOCH=$EPOCH e3mkfs -q -F "${args[@]/#@IMG@/$T/e.img}" ||
		{ echo "e3mkfs failed: $1" >&2; return 1; }
}

@test "the words helper pins UUID and seed only where the line has none" {
	run words "-t ext3 -U x IMG 8M"
	[ "${lines[0]}" = -E ] || return 1
	run words "-t ext3 -E hash_seed=s IMG 8M"
	[ "${lines[0]}" = -U ] && [ "${lines[2]}" = -t ] || return 1
}

@test "mke2fs command lines without -d: e3mkfs writes the same bytes (${#NO_D[@]} lines)" {
	local line bad=0
	[ "${#NO_D[@]}" -ge 15 ]
	for line in "${NO_D[@]}"; do
		run_both "$line" || { bad=1; continue; }
		if ! cmp -s "$T/m.img" "$T/e.img"; then
			echo "differs: $line" >&2
			diff <(dumpe2fs "$T/m.img" 2>/dev/null) \
				<(dumpe2fs "$T/e.img" 2>/dev/null) | head -20 >&2
			bad=1
			continue
		fi
		assert_fsck_clean "$T/e.img" || { echo "not clean: $line" >&2; bad=1; }
	done
	[ $bad -eq 0 ]
}

# geometry IMG: dumpe2fs -h without what a different allocation of the
# same tree changes (free counts) and what is pinned per run.
geometry() {
	dumpe2fs_geometry "$1" | grep -Ev '^(Free blocks|Free inodes|Filesystem state)'
}

@test "mke2fs -d command lines: the same geometry and the same tree (${#WITH_D[@]} lines)" {
	local line bad=0
	for line in "${WITH_D[@]}"; do
		run_both "$line" || { bad=1; continue; }
		if ! diff <(geometry "$T/m.img") <(geometry "$T/e.img") >&2; then
			echo "geometry differs: $line" >&2
			bad=1
		fi
		assert_fsck_clean "$T/e.img" || { echo "not clean: $line" >&2; bad=1; }
		rm -rf "$T/rm" "$T/re"
		mkdir "$T/rm" "$T/re"
		debugfs -R "rdump / $T/rm" "$T/m.img" >/dev/null 2>&1
		debugfs -R "rdump / $T/re" "$T/e.img" >/dev/null 2>&1
		# the two images hold one tree, and it is the source
		# (cmptree leaves out the copy's lost+found, not the source's)
		rm -rf "$T/rm/lost+found"
		python3 "$E3_TOP/tests/cmptree.py" "$T/rm" "$T/re" --rdump >&2 ||
			{ echo "trees differ: $line" >&2; bad=1; }
		python3 "$E3_TOP/tests/cmptree.py" "$T/tree" "$T/re" --rdump >&2 ||
			{ echo "not the source: $line" >&2; bad=1; }
	done
	[ $bad -eq 0 ]
}

@test "what mke2fs accepts but e3mkfs cannot do for ext3 is refused by name, exit 16, nothing written" {
	local line
	for line in "-t ext4|-t ext4: e3mkfs makes ext3 and ext2 only" \
		    "-o hurd|-o hurd: e3mkfs writes Linux's ext3 only" \
		    "-E resize=1000000|-E resize: a custom resize limit is not offered" \
		    "-E packed_meta_blocks|-E packed_meta_blocks: needs flex_bg" \
		    "-E offset=4096|-E offset: not offered" \
		    "-T bogus|-T bogus: unknown usage type" \
		    "-r 0|-r 0: ext3 needs revision 1" \
		    "-e sometimes|-e sometimes: want continue, remount-ro or panic"; do
		# shellcheck disable=SC2086
		run e3mkfs ${line%%|*} "$T/x.img" 8M
		assert_status 16 || return 1
		assert_output_has "e3mkfs: $T/x.img: ${line#*|}" || return 1
		[ "${#lines[@]}" -eq 1 ] || return 1
		[ ! -e "$T/x.img" ] || return 1
	done
}

@test "SIZE is read as mke2fs reads it: blocks of -b, KiB without, K/M/G/T, s sectors, 0x hex" {
	local size want
	for size in "16384:-b 4096:16384" "65536::65536" "64M::65536" "131072s::65536" \
		    "0x10000::65536" "64m:-b 2048:32768" "100000k:-b 4096:25000"; do
		IFS=: read -r arg opts want <<<"$size"
		rm -f "$T/s.img"
		# shellcheck disable=SC2086
		e3mkfs -q $opts "$T/s.img" "$arg" || return 1
		[ "$(dumpe2fs -h "$T/s.img" 2>/dev/null | sed -n 's/^Block count:[[:space:]]*//p')" = "$want" ] ||
			{ echo "$arg $opts: want $want blocks" >&2; return 1; }
	done
	run e3mkfs "$T/s.img" 12x
	assert_status 16
	assert_output_has "bad size '12x'"
}

@test "-c read-tests what the image holds; a new sparse file has nothing to test" {
	run e3mkfs -c "$T/c.img" 8M
	assert_status 0
	assert_output_has "0 bytes of data read, none bad (a sparse or new file"
	head -c 8388608 /dev/urandom > "$T/d.img"
	run e3mkfs -F -c "$T/d.img" 8M
	assert_status 0
	assert_output_has "8388608 bytes of data read, none bad"
	assert_fsck_clean "$T/d.img"
	run e3mkfs -F -c -c "$T/d.img" 8M
	assert_status 16
	assert_output_has "-c -c: the read-write test is not offered"
}
