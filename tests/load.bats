#!/usr/bin/env bats
# tests/load.bats: the bulk-load library through bench/parload — files of
# mixed sizes from 1 to 256 threads read back byte for byte by debugfs and
# the kernel, the name operations (symlinks, links, devices, xattrs, ACLs,
# limits and errors), and the exclusive writer lock. Every image ends
# e2fsck -fn clean with an empty journal.

load helper

PARLOAD="$E3_TOP/bench/parload"

setup() {
	T="$(mktemp -d /tmp/load-bats.XXXXXX)"
	MNT=""
}

teardown() {
	if [ -n "$MNT" ] && mountpoint -q "$MNT"; then
		umount "$MNT"
	fi
	rm -rf "$T"
}

# mkimg SIZE [mke2fs options...]: an ext3 image in $T/img.
mkimg() {
	local size=$1
	shift
	rm -f "$T/img"
	truncate -s "$size" "$T/img" || return 1
	mke2fs -t ext3 -F -q "$@" "$T/img" || return 1
}

# mount_ro: the image mounted read-only by the kernel at $MNT.
mount_ro() {
	MNT="$T/mnt"
	mkdir -p "$MNT"
	mount -o loop,ro "$T/img" "$MNT" || return 1
}

# names_of OUTPUT: the file names parload listed.
names_of() {
	awk '$1 == "file" { print $2 }' <<<"$1"
}

# check_dump THREADS BS [SKIP]: every mixed-set file but SKIP, dumped by
# debugfs, equals what the generator says.
check_dump() {
	local threads=$1 bs=$2 skip=${3:-m008_over4GiB} n cmds=""
	for n in $(names_of "$output"); do
		[ "$n" = "$skip" ] && continue
		cmds+="dump /$n $T/d.$n"$'\n'
	done
	[ -n "$cmds" ] || { echo "parload listed no files" >&2; return 1; }
	debugfs -f - "$T/img" <<<"$cmds" >/dev/null 2>&1
	for n in $(names_of "$output"); do
		[ "$n" = "$skip" ] && continue
		"$PARLOAD" --expect "$n" --mixed --threads "$threads" --bs "$bs" >"$T/e" || return 1
		cmp "$T/d.$n" "$T/e" || { echo "debugfs dump of $n differs" >&2; return 1; }
		rm -f "$T/d.$n"
	done
}

# run_mixed THREADS BS [mke2fs options]: load the mixed set, verify it
# through libext2fs and debugfs, fsck clean.
run_mixed() {
	local threads=$1 bs=$2
	shift 2
	mkimg 1G -b "$bs" "$@" || return 1
	run "$PARLOAD" --mixed --threads "$threads" --append 3000 --verify "$T/img"
	assert_status 0 || return 1
	assert_output_has "verify $((threads > 9 ? threads : 9)) files ok" || return 1
	check_dump "$threads" "$bs" || return 1
	assert_fsck_clean "$T/img" || return 1
}

@test "load: 1 thread writes the mixed-size set, 4 KiB blocks, debugfs reads it back" {
	run_mixed 1 4096
}

@test "load: 8 threads, mixed sizes, 1 KiB blocks (100 MiB file reaches TIND), small groups" {
	run_mixed 8 1024 -g 2048
}

@test "load: 64 threads, mixed sizes" {
	run_mixed 64 4096
}

@test "load: 256 threads, mixed sizes, 1 KiB blocks" {
	run_mixed 256 1024
}

@test "load: 16 threads streaming 4 KiB appends in every allocation mode" {
	for mode in rbtree list none; do
		mkimg 512M -g 8192
		run "$PARLOAD" --alloc=$mode --threads 16 --total 64M --verify "$T/img"
		assert_status 0
		assert_output_has "verify 16 files ok"
		assert_fsck_clean "$T/img"
	done
}

@test "load: 8 threads keep 8 files open each, odd-sized appends in turn" {
	mkimg 512M
	run "$PARLOAD" --threads 8 --open 8 --total 64M --append 3000 --verify "$T/img"
	assert_status 0
	assert_output_has "verify 64 files ok"
	names=$(names_of "$output")
	for n in f000 f037 f063; do
		grep -qx "$n" <<<"$names"
		debugfs -R "dump /$n $T/d" "$T/img" >/dev/null 2>&1
		cmp "$T/d" <("$PARLOAD" --expect "$n" --threads 64 --total 64M)
	done
	assert_fsck_clean "$T/img"
}

@test "load: size hints put every file in one run (beyond group crossings)" {
	mkimg 1G
	run "$PARLOAD" --threads 32 --total 256M --hint "$T/img"
	assert_status 0
	run "$PARLOAD" --report "$T/img"
	assert_status 0
	assert_output_has "files 32 "
	assert_output_has "excess_total 0 "
	assert_fsck_clean "$T/img"
}

@test "load: in-line indirect blocks: a sequential file is one run to e2fsck" {
	mkimg 256M -b 4096
	run "$PARLOAD" --threads 1 --total 20M "$T/img"
	assert_status 0
	run debugfs -R "stat /f000" "$T/img"
	# D0-D11, IND, D12.. with the IND right after D11
	[[ "$output" =~ \(0-11\):([0-9]+)-([0-9]+),\ \(IND\):([0-9]+), ]]
	[ "${BASH_REMATCH[3]}" -eq $((BASH_REMATCH[2] + 1)) ]
	run "$PARLOAD" --report "$T/img"
	assert_output_has "avg_runs 1.00 worst_runs 1 "
	assert_fsck_clean "$T/img"
}

@test "load: a file over 4 GiB on a sparse image: large_file, TIND, data intact" {
	mkimg 1G
	# mke2fs always sets large_file; the first file over 2 GiB must
	debugfs -w -R "feature -large_file" "$T/img" >/dev/null 2>&1
	hdr=$(dumpe2fs -h "$T/img" 2>/dev/null)
	assert_match "$hdr" '^Filesystem features:'
	refute_match "$hdr" 'features:.*large_file'
	run "$PARLOAD" --mixed --threads 9 --verify "$T/img"
	assert_status 0
	run debugfs -R "stat /m008_over4GiB" "$T/img"
	assert_output_has "Size: 4303355904"
	assert_output_has "(TIND):"
	dumpe2fs -h "$T/img" 2>/dev/null | grep -q 'features:.*large_file'
	debugfs -R "cat /m008_over4GiB" "$T/img" 2>/dev/null |
		cmp - <("$PARLOAD" --expect m008_over4GiB --mixed --threads 9 --bs 4096)
	assert_fsck_clean "$T/img"
}

@test "load: a sparse file keeps its holes unallocated" {
	mkimg 256M -b 4096
	run "$PARLOAD" --mixed --threads 9 "$T/img"
	assert_status 0
	run debugfs -R "stat /m007_sparse" "$T/img"
	assert_output_has "Size: 20971520"
	# data blocks 0, 100-102 and 5000-5001 and the IND, DIND, IND that
	# map them: nothing else
	assert_output_has "(0):"
	assert_output_has "(100-102):"
	assert_output_has "(5000-5001):"
	assert_output_has "TOTAL: 9"
	assert_fsck_clean "$T/img"
}

@test "load: files read back byte for byte through a kernel loop mount" {
	require_root
	mkimg 1G
	run "$PARLOAD" --mixed --threads 16 --append 5000 "$T/img"
	assert_status 0
	mount_ro
	for n in $(names_of "$output"); do
		if [ "$n" = m008_over4GiB ]; then
			# the data at both ends; the hole between is the kernel's
			cmp <(head -c $((1 << 20)) "$MNT/$n") \
			    <("$PARLOAD" --expect "$n" --range 0:1048576 --mixed --threads 16 --bs 4096)
			cmp <(tail -c $((9 << 20)) "$MNT/$n") \
			    <("$PARLOAD" --expect "$n" --range $(((4 << 30) - (1 << 20))):$((9 << 20)) --mixed --threads 16 --bs 4096)
			continue
		fi
		cmp "$MNT/$n" <("$PARLOAD" --expect "$n" --mixed --threads 16 --bs 4096)
	done
	umount "$MNT"
	assert_fsck_clean "$T/img"
}

# ops SCRIPT: run parload --ops on $T/img with SCRIPT on stdin.
ops() {
	run "$PARLOAD" --ops "$T/img" <<<"$1"
}

@test "load: fast and slow symlinks, hard links, devices, FIFOs, sockets" {
	mkimg 64M
	long=/$(printf 'x%.0s' {1..100})/target
	ops "mkdir /d 0755
create /d/f 5000 5
symlink /d/fast short/target
symlink /d/slow $long
link /d/hard /d/f
mknod /d/null c 1 3
mknod /d/wide c 300 70000
mknod /d/sda b 8 0
mknod /d/fifo p
mknod /d/sock s"
	assert_status 0
	run debugfs -R "stat /d/fast" "$T/img"
	assert_output_has 'Fast link dest: "short/target"'
	run debugfs -R "stat /d/slow" "$T/img"
	assert_output_has "Size: ${#long}"
	assert_output_has "(0):"
	run debugfs -R "stat /d/f" "$T/img"
	assert_output_has "Links: 2"
	run debugfs -R "stat /d/null" "$T/img"
	assert_output_has "Device major/minor number: 01:03"
	run debugfs -R "stat /d/wide" "$T/img"
	assert_output_has "(New-style) Device major/minor number: 300:70000"
	run debugfs -R "ls -l /d" "$T/img"
	assert_output_has " 60644 "
	assert_output_has " 10644 "
	assert_output_has " 140644 "
	assert_fsck_clean "$T/img"
	if ! is_root; then
		echo "# skipped: not root: the kernel's reading of them" >&3
	else
		mount_ro
		[ "$(readlink "$MNT/d/slow")" = "$long" ]
		[ "$(readlink "$MNT/d/fast")" = short/target ]
		[ "$(stat -c '%t:%T' "$MNT/d/wide")" = "12c:11170" ]
		[ "$(stat -c '%F' "$MNT/d/fifo")" = fifo ]
		[ "$(stat -c '%F' "$MNT/d/sock")" = socket ]
		[ "$(stat -c '%h' "$MNT/d/hard")" = 2 ]
		cmp "$MNT/d/hard" <(debugfs -R "cat /d/f" "$T/img" 2>/dev/null)
	fi
}

@test "load: xattrs in the inode and in an EA block shared by identical sets" {
	mkimg 64M
	big=0x$(printf 'ab%.0s' {1..120})
	ops "create /a 0 1
create /b 0 2
create /c 0 3
create /d 0 4
setxattr /a user.small hello
setxattr /d user.small hello
setxattr /d security.selinux system_u:object_r:etc_t:s0
setxattr /d trusted.t 0x00010203
setxattr /d security.capability 0x0100000200100000000000000000000000000000
setxattr /b user.big $big
setxattr /c user.big $big"
	assert_status 0
	# a small attribute fits the 256-byte inode: no EA block
	run debugfs -R "stat /a" "$T/img"
	assert_output_has "File ACL: 0"
	assert_output_has 'user.small (5) = "hello"'
	# four do not all fit in its 88 free bytes
	run debugfs -R "ea_list /d" "$T/img"
	assert_output_has 'user.small (5) = "hello"'
	assert_output_has 'security.selinux (26) = "system_u:object_r:etc_t:s0"'
	assert_output_has 'trusted.t (4) = 00 01 02 03'
	assert_output_has 'security.capability (20)'
	run debugfs -R "stat /d" "$T/img"
	[[ "$output" != *"File ACL: 0"* ]]
	ba=$(debugfs -R "stat /b" "$T/img" 2>/dev/null | sed -n 's/.*File ACL: \([0-9]*\).*/\1/p')
	ca=$(debugfs -R "stat /c" "$T/img" 2>/dev/null | sed -n 's/.*File ACL: \([0-9]*\).*/\1/p')
	[ "$ba" -ne 0 ]
	[ "$ba" = "$ca" ]
	assert_fsck_clean "$T/img"
	if ! is_root; then
		echo "# skipped: not root: the kernel's reading of them" >&3
	else
		mount_ro
		[ "$(getfattr --only-values -n user.small "$MNT/a")" = hello ]
		[ "$(getfattr --only-values -n security.selinux "$MNT/d")" = system_u:object_r:etc_t:s0 ]
		getfattr -n trusted.t -e hex "$MNT/d" | grep -q "trusted.t=0x00010203"
		getfattr -n security.capability -e hex "$MNT/d" | grep -q "security.capability=0x01000002001"
		getfattr -n user.big -e hex "$MNT/c" | grep -q "user.big=$big"
	fi
}

@test "load: POSIX ACLs in ext3's format, read back by getfacl" {
	mkimg 64M
	ops "mkdir /d 0755
create /d/f 100 1
setacl /d/f access u::rw-,u:1000:r--,g::r--,g:50:rw-,m::rw-,o::---
setacl /d default u::rwx,g::r-x,o::r-x"
	assert_status 0
	run debugfs -R "ea_list /d/f" "$T/img"
	# ext3 on-disk ACL: version 1 header, short entries for the *_OBJ tags
	assert_output_has "system.posix_acl_access (36) = 01 00 00 00 01 00 06 00 02 00 04 00 e8 03 00 00"
	assert_fsck_clean "$T/img"
	require_root
	mount_ro
	run getfacl -n "$MNT/d/f"
	assert_output_has "user:1000:r--"
	assert_output_has "group:50:rw-"
	assert_output_has "mask::rw-"
	run getfacl -n "$MNT/d"
	assert_output_has "default:group::r-x"
}

@test "load: setattr sets mode, owner and nanosecond times" {
	mkimg 64M
	ops "create /f 10 1
setattr /f 4750 100000 70000 1234567890 123456789"
	assert_status 0
	run debugfs -R "stat /f" "$T/img"
	assert_output_has "Mode:  04750"
	assert_output_has "User: 100000   Group: 70000"
	assert_output_has "mtime: 0x499602d2:1d6f3454"
	assert_fsck_clean "$T/img"
	require_root
	mount_ro
	[ "$(stat -c '%y' "$MNT/f")" = "2009-02-13 23:31:30.123456789 +0000" ]
}

@test "load: a directory grows past one block" {
	mkimg 64M -b 1024
	ops "mkdir /d 0755
files /d 300"
	assert_status 0
	run debugfs -R "stat /d" "$T/img"
	[[ "$output" =~ Size:\ ([0-9]+) ]]
	[ "${BASH_REMATCH[1]}" -gt 1024 ]
	run debugfs -R "ls /d" "$T/img"
	assert_output_has "file00000"
	assert_output_has "file00299"
	assert_fsck_clean "$T/img"
}

@test "load: ext3's link limit (32000) is enforced" {
	mkimg 128M -N 4096
	script="create /f 1 1"$'\n'
	# 1 + 31 * 1000 + 999 = 32000 links
	for i in $(seq 0 31); do
		script+="mkdir /l$i"$'\n'"links /l$i $((i < 31 ? 1000 : 999)) /f"$'\n'
	done
	script+="link /extra /f"
	ops "$script"
	assert_status 1
	assert_output_has "line 66: link: too many links (ext3 allows 32000)"
	run debugfs -R "stat /f" "$T/img"
	assert_output_has "Links: 32000"
	assert_fsck_clean "$T/img"
}

@test "load: bad names, long names, existing names, non-directories are refused" {
	mkimg 64M
	long=$(printf 'n%.0s' {1..256})
	ops "mkdir /d
create /d/$long 1 1
mkdir /d
create /d/f 1 1
create /d/f 1 1
create /d/f/x 1 1
link /d/dirlink /d
setxattr /d/f bogus.name x
setacl /d/f access z::rw-
create /nosuchdir/x 1 1
symlink /d/toolong $(printf 't%.0s' {1..4096})"
	assert_status 1
	assert_output_has "line 2: create: name too long (ext3 allows 255 bytes)"
	assert_output_has "line 3: mkdir: name exists"
	assert_output_has "line 5: create: name exists"
	assert_output_has "line 6: create: not a directory"
	assert_output_has "line 7: link: is a directory"
	assert_output_has "line 8: setxattr: unsupported extended attribute namespace"
	assert_output_has "line 9: setacl: malformed POSIX ACL"
	assert_output_has "line 10: create: no such file or directory"
	assert_output_has "line 11: symlink: symlink target too long (it and its NUL must fit one block)"
	assert_fsck_clean "$T/img"
}

@test "load: a second writer process is refused while the first holds the image" {
	mkimg 64M
	mkfifo "$T/in" "$T/out"
	"$PARLOAD" --ops "$T/img" <"$T/in" >"$T/out" &
	first=$!
	# (bats keeps fd 3 for itself)
	exec 8>"$T/in"
	echo ready >&8
	read -r line <"$T/out"
	[ "$line" = ready ]
	run "$PARLOAD" --threads 1 --total 1M "$T/img"
	assert_status 1
	assert_output_has "image is in use by another e3img process"
	echo "create /after 10 1" >&8
	exec 8>&-
	wait "$first"
	run debugfs -R "stat /after" "$T/img"
	assert_output_has "Size: 10"
	assert_fsck_clean "$T/img"
}

@test "load: running out of blocks or inodes is reported and leaves a consistent image" {
	mkimg 8M -N 32
	ops "create /big 20000000 1
files / 100"
	assert_status 1
	assert_output_has "line 1: create: image full: no free blocks"
	assert_output_has "line 2: files: no free inodes"
	run debugfs -R "stat /big" "$T/img"
	assert_output_has "Type: regular"
	assert_fsck_clean "$T/img"
}

@test "load: closing the image with a file still open is refused, image consistent" {
	mkimg 64M
	ops "create /done 5000 1
leave-open /open"
	assert_status 1
	assert_output_has "close: files are still open"
	run debugfs -R "stat /done" "$T/img"
	assert_output_has "Size: 5000"
	assert_fsck_clean "$T/img"
}

@test "load: without a journal, closing with a file still open keeps bitmaps and counts" {
	mkimg 64M -O ^has_journal
	ops "create /done 5000 1
leave-open /open"
	assert_status 1
	assert_output_has "close: files are still open"
	run debugfs -R "stat /done" "$T/img"
	assert_output_has "Size: 5000"
	assert_fsck_clean "$T/img"
}

@test "load: E3_FAULT reaches file data writes; a failed data write leaves an empty file" {
	mkimg 64M
	# the first write to reach the image is /f's data, at its close
	E3_FAULT=eio:1 run "$PARLOAD" --ops "$T/img" <<<"create /f 5000 1
create /g 5000 2"
	assert_status 1
	assert_output_has "line 1: create: Input/output error"
	run debugfs -R "stat /f" "$T/img"
	assert_output_has "Size: 0"
	run debugfs -R "stat /g" "$T/img"
	assert_output_has "Size: 5000"
	assert_fsck_clean "$T/img"
}

@test "load: a file whose data write failed is not committed with blocks never written" {
	mkimg 64M -b 1024
	# 4 KiB buffers: the first flush (the first write) fails mid-file;
	# parload still closes the file
	E3_WRITE_BUFFER=4096 E3_FAULT=eio:1 run "$PARLOAD" --ops "$T/img" <<<"create /f 20000 1
create /g 5000 2"
	assert_status 1
	assert_output_has "line 1: create: Input/output error"
	run debugfs -R "stat /f" "$T/img"
	assert_output_has "Size: 0"
	run debugfs -R "stat /g" "$T/img"
	assert_output_has "Size: 5000"
	assert_fsck_clean "$T/img"
}

# check_committed THREADS BS: every mixed-set file present at its full
# size holds exactly its data (a file reaches the image whole at close);
# counts them in $checked.
check_committed() {
	local threads=$1 bs=$2 n size want
	while read -r n size want; do
		[ "$size" = "$want" ] && [ "$size" != 0 ] || continue
		[ "$n" = m008_over4GiB ] && continue
		rm -f "$T/d"
		debugfs -R "dump /$n $T/d" "$T/img" >/dev/null 2>&1
		cmp "$T/d" <("$PARLOAD" --expect "$n" --mixed --threads "$threads" --bs "$bs") ||
			{ echo "$n: committed at full size but contents differ" >&2; return 1; }
		checked=$((checked + 1))
	done < <(join <(debugfs -R "ls -l /" "$T/img" 2>/dev/null | awk '$NF ~ /^m0/ {print $NF, $6}' | sort) \
		      <(awk '$1 == "file" {print $2, $6}' "$T/full.out" | sort))
}

@test "load: killed at any metadata write, the journal brings back a consistent image with whole files" {
	mkimg 256M -b 1024
	cp "$T/img" "$T/fresh"
	# one thread: the same writes in the same order every run
	"$PARLOAD" --mixed --threads 1 --append 8K "$T/img" >"$T/full.out"
	checked=0 completed=0
	for n in 1 2 5 13 34 89 150 233 300 400 500 600 700 800 1000 1500 2000 4000; do
		cp "$T/fresh" "$T/img"
		if E3_FAULT=kill:$n "$PARLOAD" --mixed --threads 1 --append 8K "$T/img" \
			>/dev/null 2>&1; then
			completed=1
			break
		fi
		if [ $((n % 2)) -eq 1 ]; then
			# our replay: any writer open recovers first
			"$PARLOAD" --ops "$T/img" </dev/null
		else
			# e2fsck's replay, and only that: a repair (-fy) would
			# hide what the journal left
			e2fsck -E journal_only -y "$T/img" >/dev/null 2>&1 ||
				{ echo "kill:$n: e2fsck -E journal_only exited $?" >&2; false; }
		fi
		assert_fsck_clean "$T/img" || { echo "after kill:$n" >&2; false; }
		check_committed 1 1024
	done
	[ "$completed" -eq 1 ]
	# some crash points fell after files were committed
	[ "$checked" -gt 0 ]
}

@test "load: 128-byte inodes: attributes in an EA block, times without nanoseconds" {
	mkimg 128M -I 128
	ops "create /f 3000 1
setxattr /f user.a hello
setattr /f 0600 1 2 1234567890 123456789"
	assert_status 0
	run debugfs -R "stat /f" "$T/img"
	[[ "$output" != *"File ACL: 0"* ]]
	assert_output_has "mtime: 0x499602d2 --"
	run debugfs -R "ea_list /f" "$T/img"
	assert_output_has 'user.a (5) = "hello"'
	run "$PARLOAD" --mixed --threads 4 --verify "$T/img"
	assert_status 0
	assert_fsck_clean "$T/img"
}

@test "load: mkdir refuses a parent at ext3's 32000-link limit" {
	mkimg 64M
	ops "mkdir /d"
	assert_status 0
	# pretend /d already has 31997 subdirectories
	debugfs -w -R "sif /d links_count 31999" "$T/img" >/dev/null 2>&1
	ops "mkdir /d/last
mkdir /d/one-too-many"
	assert_status 1
	assert_output_has "line 2: mkdir: too many links (ext3 allows 32000)"
	run debugfs -R "stat /d" "$T/img"
	assert_output_has "Links: 32000"
	run debugfs -R "ls /d" "$T/img"
	[[ "$output" != *one-too-many* ]]
	# back to the true count (., .. of last, and the entry in /) for fsck
	debugfs -w -R "sif /d links_count 3" "$T/img" >/dev/null 2>&1
	assert_fsck_clean "$T/img"
}
