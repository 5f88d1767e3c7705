#!/usr/bin/env bats
# tests/cp_edges.bats: copy-in edges a release engineer meets (issue 20):
# ACLs from tar --acls with their numeric ids and the owner maps, archives
# that cannot be read given as SRC (and --no-unpack), xattrs too big for
# the block size, archives that do not fit, times past ext3's range, and
# all-zero blocks as holes. debugfs, e2fsck and (as root) the kernel are
# the oracles.
load helper

E3CP="$E3_TOP/misc/e3cp"
E3MKFS="$E3_TOP/misc/e3mkfs"

setup() {
	T="$(mktemp -d /tmp/cp-edges-bats.XXXXXX)"
	MNT=""
}

teardown() {
	if [ -n "$MNT" ] && mountpoint -q "$MNT"; then
		umount "$MNT"
	fi
	rm -rf "$T"
}

# newimg PATH [SIZE [mke2fs options...]]: an empty ext3 image, 1 KiB blocks
newimg() {
	local img=$1 size=${2:-8M}
	shift 2 || shift
	rm -f "$img"
	mke2fs -q -F -t ext3 -b 1024 "$@" "$img" "$size" || return 1
}

# mount_ro IMG: the image mounted read-only by the kernel at $MNT.
mount_ro() {
	MNT="$T/mnt"
	mkdir -p "$MNT"
	mount -o loop,ro "$1" "$MNT" || return 1
}

# acl_hex IMG PATH NAME: the Linux-form value of an ACL xattr, as hex
acl_hex() {
	debugfs -R "ea_get -x $2 $3" "$1" 2>/dev/null | tr -d '\n'
}

# acl_tree DIR: a file with named user and group entries, a directory
# with a default ACL (ids 1000 and 42, whatever names the host gives them)
acl_tree() {
	mkdir -p "$1/d" || return 1
	echo hi >"$1/f" || return 1
	setfacl -m u:1000:rwx,g:42:r-x "$1/f" || return 1
	setfacl -d -m u:1000:rwx "$1/d" || return 1
}

@test "edges: tar --acls: ACL ids from the archive, not 4294967295" {
	require_cmd tar setfacl getfacl debugfs
	acl_tree "$T/src" || skip "skipped: the host filesystem under /tmp has no ACLs"
	tar --acls --format=posix -C "$T/src" -cf "$T/a.tar" . || false
	newimg "$T/i.img"
	run "$E3CP" "$T/a.tar" "$T/i.img"
	assert_status 0
	# user 1000 (e8 03) and group 42 (2a) in Linux's xattr form
	run acl_hex "$T/i.img" /f system.posix_acl_access
	assert_output_has "02 00 07 00 e8 03 00 00"
	assert_output_has "08 00 05 00 2a 00 00 00"
	refute_output_has "ff ff ff ff 04 00"
	run acl_hex "$T/i.img" /d system.posix_acl_default
	assert_output_has "02 00 07 00 e8 03 00 00"
	assert_fsck_clean "$T/i.img"
	require_root
	mount_ro "$T/i.img"
	run getfacl -n "$MNT/f"
	assert_output_has "user:1000:rwx"
	assert_output_has "group:42:r-x"
	run getfacl -n "$MNT/d"
	assert_output_has "default:user:1000:rwx"
}

@test "edges: ACL ids follow --uid-map/--gid-map, from archives and trees" {
	require_cmd tar setfacl debugfs
	acl_tree "$T/src" || skip "skipped: the host filesystem under /tmp has no ACLs"
	tar --acls --format=posix -C "$T/src" -cf "$T/a.tar" . || false
	for src in "$T/a.tar" "$T/src"; do
		newimg "$T/i.img"
		run "$E3CP" --uid-map 1000:2000 --gid-map 42:77 "$src" "$T/i.img"
		assert_status 0
		# 2000 = d0 07, 77 = 4d
		run acl_hex "$T/i.img" /f system.posix_acl_access
		assert_output_has "02 00 07 00 d0 07 00 00"
		assert_output_has "08 00 05 00 4d 00 00 00"
		run acl_hex "$T/i.img" /d system.posix_acl_default
		assert_output_has "02 00 07 00 d0 07 00 00"
		assert_fsck_clean "$T/i.img"
	done
}

@test "edges: an ACL name with no id anywhere is an error naming the entry" {
	require_cmd debugfs
	python3 - "$T/u.tar" <<'PY' || false
import io, sys, tarfile
acl = "user::rw-\nuser:e3-no-such-user-x:rwx\ngroup::r--\nmask::rwx\nother::r--\n"
with tarfile.open(sys.argv[1], "w", format=tarfile.PAX_FORMAT) as t:
    for name, pax in (("bad", {"SCHILY.acl.access": acl}), ("good", {})):
        ti = tarfile.TarInfo(name)
        ti.size = 3
        ti.pax_headers = pax
        t.addfile(ti, io.BytesIO(b"abc"))
PY
	newimg "$T/i.img"
	run "$E3CP" "$T/u.tar" "$T/i.img"
	[ "$status" -ne 0 ] || false
	assert_output_has "bad: an ACL names a user or group with no id in the archive and none on this host"
	# the rest is copied
	assert_img_cat "$T/i.img" /good abc
	assert_fsck_clean "$T/i.img"
}

# same_bytes A B: the two files are byte for byte equal
same_bytes() {
	cmp -s "$1" "$2" || { echo "$1 changed" >&2; return 1; }
}

@test "edges: an archive SRC that cannot be read is an error, nothing written" {
	require_cmd xz gzip
	mkdir -p "$T/src" && echo hi >"$T/src/f" || false
	tar -C "$T/src" -cJf "$T/r.tar.xz" . || false
	head -c 100 "$T/r.tar.xz" >"$T/cut.tar.xz"
	cp "$T/cut.tar.xz" "$T/cut.bin"		# by content: xz, then cut
	echo "not an archive" >"$T/notes.tar"	# by name
	newimg "$T/i.img"
	cp "$T/i.img" "$T/i0.img"
	run "$E3CP" "$T/cut.tar.xz" "$T/i.img"
	[ "$status" -ne 0 ] || false
	assert_output_has "e3cp: $T/cut.tar.xz: archive is damaged or truncated before its first entry (--no-unpack copies it as a file)"
	same_bytes "$T/i.img" "$T/i0.img"
	run "$E3CP" "$T/cut.bin" "$T/i.img"
	[ "$status" -ne 0 ] || false
	assert_output_has "e3cp: $T/cut.bin: archive is damaged or truncated"
	same_bytes "$T/i.img" "$T/i0.img"
	run "$E3CP" "$T/notes.tar" "$T/src" "$T/i.img"
	[ "$status" -ne 0 ] || false
	assert_output_has "e3cp: $T/notes.tar: named as an archive, but libarchive reads no archive format in it (--no-unpack copies it as a file)"
	same_bytes "$T/i.img" "$T/i0.img"
	# a compressed file that holds no archive, not so named, is a file
	echo text >"$T/log" && gzip "$T/log" || false
	run "$E3CP" "$T/log.gz" "$T/i.img"
	assert_status 0
	img_has "$T/i.img" /log.gz
	# e3mkfs -d: refused the same way, auto before the image exists
	rm -f "$T/m.img"
	run "$E3MKFS" -q -d "$T/notes.tar" "$T/m.img" auto
	[ "$status" -ne 0 ] || false
	assert_output_has "e3mkfs: $T/notes.tar: named as an archive"
	[ ! -e "$T/m.img" ] || false
	run "$E3MKFS" -q -d "$T/cut.tar.xz" "$T/m.img" 8M
	[ "$status" -ne 0 ] || false
	assert_output_has "e3mkfs: $T/cut.tar.xz: archive is damaged"
	run debugfs -R "ls /" "$T/m.img"
	refute_output_has "cut"
	assert_fsck_clean "$T/m.img"
}

@test "edges: --no-unpack copies an archive as a file (e3cp and e3mkfs -d)" {
	mkdir -p "$T/src" && echo hi >"$T/src/f" || false
	tar -C "$T/src" -czf "$T/r.tgz" . || false
	echo "not an archive" >"$T/notes.tar"
	newimg "$T/i.img"
	run "$E3CP" --no-unpack "$T/r.tgz" "$T/notes.tar" "$T/i.img"
	assert_status 0
	assert_img_file "$T/i.img" /r.tgz "$T/r.tgz"
	assert_img_file "$T/i.img" /notes.tar "$T/notes.tar"
	run img_has "$T/i.img" /f
	[ "$status" -ne 0 ] || false
	rm -f "$T/m.img"
	run "$E3MKFS" -q --no-unpack -d "$T/r.tgz" "$T/m.img" auto
	assert_status 0
	assert_img_file "$T/m.img" /r.tgz "$T/r.tgz"
	assert_fsck_clean "$T/m.img"
}

# bigx DIR: DIR/bin/ls with a 3,000-byte user xattr
bigx() {
	mkdir -p "$1/bin" && cp /bin/ls "$1/bin/ls" || return 1
	setfattr -n user.big -v "$(head -c 3000 /dev/zero | tr '\0' a)" \
		"$1/bin/ls" 2>/dev/null || return 2
}

@test "edges: xattrs too big for 1 KiB blocks: refused by the measure, nothing written" {
	require_cmd setfattr tar
	local rc=0
	bigx "$T/x" || rc=$?
	[ "$rc" -ne 2 ] || skip "skipped: the host filesystem under /tmp has no user xattrs"
	[ "$rc" -eq 0 ] || false
	tar --xattrs --xattrs-include='*' -C "$T/x" -cf "$T/x.tar" . || false
	newimg "$T/i.img"
	cp "$T/i.img" "$T/i0.img"
	local want="3020 bytes of extended attributes, more than a 1024-byte block holds (make the image with -b 4096)"
	run "$E3CP" "$T/x" "$T/i.img"
	[ "$status" -ne 0 ] || false
	assert_output_has "e3cp: $T/x/bin/ls: $want"
	same_bytes "$T/i.img" "$T/i0.img"
	run "$E3CP" "$T/x.tar" "$T/i.img"
	[ "$status" -ne 0 ] || false
	assert_output_has "e3cp: $T/x.tar: ./bin/ls: $want"
	same_bytes "$T/i.img" "$T/i0.img"
	# stdin (a pipe) is spooled and measured the same way
	run bash -c "cat '$T/x.tar' | '$E3CP' - '$T/i.img'"
	[ "$status" -ne 0 ] || false
	assert_output_has "e3cp: -: ./bin/ls: $want"
	same_bytes "$T/i.img" "$T/i0.img"
	assert_fsck_clean "$T/i.img"
	# e3mkfs: a fixed SIZE under 512M (1 KiB blocks) and auto with -b 1024
	# refuse it the same way; auto says which block size it takes
	rm -f "$T/m.img"
	run "$E3MKFS" -q -d "$T/x" "$T/m.img" 256M
	[ "$status" -ne 0 ] || false
	assert_output_has "e3mkfs: $T/x/bin/ls: $want"
	run debugfs -R "ls /" "$T/m.img"
	refute_output_has "bin"
	rm -f "$T/m.img"
	run "$E3MKFS" -q -b 1024 -d "$T/x.tar" "$T/m.img" auto
	[ "$status" -ne 0 ] || false
	assert_output_has "e3mkfs: $T/x.tar: ./bin/ls: $want"
	[ ! -e "$T/m.img" ] || false
	run "$E3MKFS" -d "$T/x" "$T/m.img" auto
	assert_status 0
	assert_output_has "blocks of 4096: auto's block size, whatever the size; -b sets another)"
	run debugfs -R "ea_list /bin/ls" "$T/m.img"
	assert_output_has "user.big (3000)"
}

@test "edges: an archive file that does not fit is refused before anything is written" {
	mkdir -p "$T/src" || false
	head -c 3000000 /dev/urandom >"$T/src/a" || false
	head -c 6000000 /dev/urandom >"$T/src/b" || false
	tar -C "$T/src" -czf "$T/big.tgz" a b || false
	newimg "$T/i.img"
	cp "$T/i.img" "$T/i0.img"
	run "$E3CP" "$T/big.tgz" "$T/i.img"
	[ "$status" -ne 0 ] || false
	assert_output_has "e3cp: $T/i.img: image full: need"
	same_bytes "$T/i.img" "$T/i0.img"
	# with a tree before it, neither is begun
	run "$E3CP" "$T/src/a" "$T/big.tgz" "$T/i.img"
	[ "$status" -ne 0 ] || false
	same_bytes "$T/i.img" "$T/i0.img"
	# e3mkfs -d with a fixed SIZE: refused, the image left empty
	rm -f "$T/m.img"
	run "$E3MKFS" -q -d "$T/big.tgz" "$T/m.img" 8M
	[ "$status" -ne 0 ] || false
	assert_output_has "image full"
	run debugfs -R "ls /" "$T/m.img"
	refute_output_has " b "
	assert_fsck_clean "$T/m.img"
}

# timestar OUT: a pax archive of one-byte files whose mtimes lie inside
# and outside ext3's range (INT64_MAX, year 2500, 2400.5, -9e9, INT64_MIN)
timestar() {
	python3 - "$1" <<'PY'
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w", format=tarfile.PAX_FORMAT) as t:
    for name, mt in (("max", 9223372036854775807), ("y2500", 16725225600),
                     ("y2400", 13569465600.5), ("old", -9000000000),
                     ("min", -9223372036854775808)):
        ti = tarfile.TarInfo(name)
        ti.size = 1
        ti.mtime = mt
        t.addfile(ti, io.BytesIO(b"x"))
PY
}

# mtime_of IMG PATH: debugfs' mtime line (raw fields and date)
mtime_of() {
	debugfs -R "stat /$2" "$1" 2>/dev/null | grep -o 'mtime: .*'
}

@test "edges: archive times past ext3's range are clamped as the kernel does" {
	timestar "$T/t.tar" || false
	# 256-byte inodes: epoch bits reach 2446-05-10 22:38:55 (15032385535)
	newimg "$T/i.img" 8M -I 256
	run "$E3CP" "$T/t.tar" "$T/i.img"
	assert_status 0
	[ "$(mtime_of "$T/i.img" max)" = "mtime: 0x7fffffff:00000003 -- Thu May 10 22:38:55 2446" ] || false
	[ "$(mtime_of "$T/i.img" y2500)" = "mtime: 0x7fffffff:00000003 -- Thu May 10 22:38:55 2446" ] || false
	# inside the range: kept, nanoseconds too (0.5 s: 0x77359400 << 2 | epoch 3)
	[ "$(mtime_of "$T/i.img" y2400)" = "mtime: 0x28cd9d00:77359403 -- Sat Jan  1 00:00:00 2400" ] || false
	[ "$(mtime_of "$T/i.img" old)" = "mtime: 0x80000000:00000000 -- Fri Dec 13 20:45:52 1901" ] || false
	[ "$(mtime_of "$T/i.img" min)" = "mtime: 0x80000000:00000000 -- Fri Dec 13 20:45:52 1901" ] || false
	assert_fsck_clean "$T/i.img"
	# 128-byte inodes: 32 signed bits
	newimg "$T/s.img" 8M -I 128
	run "$E3CP" "$T/t.tar" "$T/s.img"
	assert_status 0
	[ "$(mtime_of "$T/s.img" y2500)" = "mtime: 0x7fffffff -- Tue Jan 19 03:14:07 2038" ] || false
	[ "$(mtime_of "$T/s.img" old)" = "mtime: 0x80000000 -- Fri Dec 13 20:45:52 1901" ] || false
	assert_fsck_clean "$T/s.img"
	require_root
	mount_ro "$T/i.img"
	[ "$(stat -c %Y "$MNT/y2500")" = 15032385535 ] || false
	[ "$(stat -c %Y "$MNT/max")" = 15032385535 ] || false
	[ "$(stat -c %Y "$MNT/old")" = -2147483648 ] || false
}

# blockcount IMG PATH: the 512-byte sectors debugfs says PATH holds
blockcount() {
	debugfs -R "stat \"$2\"" "$1" 2>/dev/null | sed -n 's/.*Blockcount: \([0-9]*\).*/\1/p'
}

# zerotree DIR: 8 MB of zeros, and a file of data, zeros, data, zeros
zerotree() {
	mkdir -p "$1" || return 1
	head -c 8000000 /dev/zero >"$1/zeros" || return 1
	{ head -c 5000 /dev/urandom; head -c 100000 /dev/zero
	  head -c 3 /dev/urandom; head -c 9000 /dev/zero; } >"$1/mixed" || return 1
}

@test "edges: all-zero blocks are holes by default, from trees and archives; --keep-zeros writes them" {
	zerotree "$T/z" || false
	tar -C "$T/z" -czf "$T/z.tgz" . || false
	# a tree, 1 KiB blocks: no block for the zeros file; mixed keeps its
	# 5 + 1 data blocks and the indirect block that maps the second
	newimg "$T/i.img" 16M
	run "$E3CP" "$T/z" "$T/i.img"
	assert_status 0
	[ "$(blockcount "$T/i.img" /zeros)" = 0 ] || false
	[ "$(blockcount "$T/i.img" /mixed)" = 14 ] || false
	assert_img_file "$T/i.img" /zeros "$T/z/zeros"
	assert_img_file "$T/i.img" /mixed "$T/z/mixed"
	assert_fsck_clean "$T/i.img"
	# the same from the archive, e3cp and e3mkfs -d (auto counts the
	# holes: 8 MB of zeros need no room)
	newimg "$T/a.img" 16M
	run "$E3CP" "$T/z.tgz" "$T/a.img"
	assert_status 0
	[ "$(blockcount "$T/a.img" /zeros)" = 0 ] || false
	[ "$(blockcount "$T/a.img" /mixed)" = 14 ] || false
	assert_img_file "$T/a.img" /mixed "$T/z/mixed"
	rm -f "$T/m.img"
	run "$E3MKFS" -d "$T/z.tgz" "$T/m.img" auto
	assert_status 0
	assert_output_has "for 5 blocks and 2 inodes of input"
	[ "$(blockcount "$T/m.img" /zeros)" = 0 ] || false
	assert_img_file "$T/m.img" /zeros "$T/z/zeros"
	assert_img_file "$T/m.img" /mixed "$T/z/mixed"
	assert_fsck_clean "$T/m.img"
	# --keep-zeros: every block written
	newimg "$T/k.img" 16M
	run "$E3CP" --keep-zeros "$T/z" "$T/k.img"
	assert_status 0
	[ "$(blockcount "$T/k.img" /zeros)" -ge 15625 ] || false
	rm -f "$T/m.img"
	run "$E3MKFS" -q --keep-zeros -d "$T/z.tgz" "$T/m.img" auto
	assert_status 0
	[ "$(blockcount "$T/m.img" /zeros)" -ge 15625 ] || false
	assert_img_file "$T/m.img" /zeros "$T/z/zeros"
	assert_fsck_clean "$T/m.img"
}

# label_of IMG PATH: PATH's security.selinux in IMG (no NUL), or -
label_of() {
	local v
	v=$(debugfs -R "ea_get -V \"$2\" security.selinux" "$1" 2>/dev/null | tr -d '\0')
	[ -n "$v" ] && echo "$v" || echo -
}

# selinux_tree DIR FC: a tree, and a file_contexts file for it
selinux_tree() {
	mkdir -p "$1/bin/sub" "$1/d" || return 1
	echo x >"$1/bin/ls" && chmod 755 "$1/bin/ls" || return 1
	ln -s ls "$1/bin/sh" || return 1
	echo y >"$1/d/f" && echo z >"$1/d/g" && echo w >"$1/f" || return 1
	mkfifo "$1/d/p" || return 1
	cat >"$2" <<'FC'
/.*			system_u:object_r:default_t:s0
/bin(/.*)?		system_u:object_r:bin_t:s0
/bin/ls		--	system_u:object_r:ls_exec_t:s0
/bin/sh		-l	system_u:object_r:shell_link_t:s0
/d(/.*)?		system_u:object_r:d_t:s0
/d/f		--	<<none>>
/d/p		-p	system_u:object_r:fifo_t:s0
/lost\+found(/.*)?	system_u:object_r:lost_found_t:s0
/system/bin(/.*)?	system_u:object_r:sys_bin_t:s0
FC
}

# check_labels IMG SRC FC ROOT: every path of the image (SRC's, the
# root and lost+found) carries selabel_lookup's label for ROOT+path; where
# it has none (<<none>>: not to be relabelled, as setfiles reads it) the
# label copied from SRC, if any
check_labels() {
	local list got want path
	list=$( { echo "/ 40755"; echo "/lost+found 40700"
		  (cd "$2" && find . -mindepth 1 -printf '/%P %#m\n' |
		   while read -r p m; do
			  printf '%s %o\n' "$p" "$(stat -c '0x%f' "$2$p")"
		   done); } ) || return 1
	while read -r path want; do
		got=$(label_of "$1" "$path")
		if [ "$want" = - ] && [ -e "$2$path" ]; then
			want=$(getfattr --only-values -h -n security.selinux \
				"$2$path" 2>/dev/null | tr -d '\0')
			[ -n "$want" ] || want=-
		fi
		if [ "$got" != "$want" ]; then
			echo "$path: label '$got', selabel_lookup says '$want'" >&2
			return 1
		fi
	done < <(python3 "$E3_TOP/tests/selabel.py" "$3" "$4" <<<"$list")
}

@test "edges: --file-contexts labels each source where it went (SRC=/dest, a file copied to a name)" {
	require_cmd getfattr
	selinux_tree "$T/s" "$T/fc" || false
	mke2fs -q -F -t ext3 "$T/i.img" 16M || false
	debugfs -w -R "mkdir /etc" "$T/i.img" >/dev/null 2>&1 || false
	# two sources, each with its own destination
	run "$E3CP" --file-contexts "$T/fc" "$T/s/bin=/bin" "$T/s/d=/d" "$T/i.img"
	assert_status 0
	[ "$(label_of "$T/i.img" /bin)" = system_u:object_r:bin_t:s0 ] || false
	[ "$(label_of "$T/i.img" /bin/ls)" = system_u:object_r:ls_exec_t:s0 ] || false
	[ "$(label_of "$T/i.img" /d)" = system_u:object_r:d_t:s0 ] || false
	[ "$(label_of "$T/i.img" /d/p)" = system_u:object_r:fifo_t:s0 ] || false
	# one file to a new name: that file is labelled as its own path, the
	# directory it lands in (and what else is there) is left alone
	run "$E3CP" --file-contexts "$T/fc" "$T/s/f" "$T/i.img:/etc/motd"
	assert_status 0
	[ "$(label_of "$T/i.img" /etc/motd)" = system_u:object_r:default_t:s0 ] || false
	[ "$(label_of "$T/i.img" /etc)" = - ] || false
	assert_fsck_clean "$T/i.img"
}

@test "edges: --file-contexts labels every entry as selabel_lookup says, over copied labels" {
	require_cmd getfattr setfattr
	selinux_tree "$T/s" "$T/fc" || false
	# labels copied from the source: the file's answer replaces f's; d/f
	# (<<none>>) keeps its own (setting them needs root on most hosts)
	setfattr -n security.selinux -v "system_u:object_r:copied_t:s0" "$T/s/d/f" 2>/dev/null || true
	setfattr -n security.selinux -v "system_u:object_r:copied_t:s0" "$T/s/f" 2>/dev/null || true
	mke2fs -q -F -t ext3 "$T/i.img" 16M || false
	run "$E3CP" --file-contexts "$T/fc" "$T/s" "$T/i.img"
	assert_status 0
	[ "$(label_of "$T/i.img" /bin/ls)" = system_u:object_r:ls_exec_t:s0 ] || false
	[ "$(label_of "$T/i.img" /f)" = system_u:object_r:default_t:s0 ] || false
	check_labels "$T/i.img" "$T/s" "$T/fc" /
	assert_fsck_clean "$T/i.img"
	# --selinux-root: the image is /system
	rm -f "$T/m.img"
	run "$E3MKFS" -q --file-contexts "$T/fc" --selinux-root /system -d "$T/s" "$T/m.img" auto
	assert_status 0
	[ "$(label_of "$T/m.img" /bin/ls)" = system_u:object_r:sys_bin_t:s0 ] || false
	check_labels "$T/m.img" "$T/s" "$T/fc" /system
	assert_fsck_clean "$T/m.img"
	# a file_contexts that cannot be read: named, nothing written
	cp "$T/i.img" "$T/i0.img"
	run "$E3CP" --file-contexts "$T/nosuch" "$T/s" "$T/i.img"
	[ "$status" -ne 0 ] || false
	assert_output_has "e3cp: $T/nosuch: No such file or directory"
	same_bytes "$T/i.img" "$T/i0.img"
	require_root
	mount_ro "$T/i.img"
	[ "$(getfattr --only-values -n security.selinux "$MNT/bin/ls" | tr -d '\0')" = system_u:object_r:ls_exec_t:s0 ] || false
	[ "$(getfattr --only-values -n security.selinux "$MNT/d/g" | tr -d '\0')" = system_u:object_r:d_t:s0 ] || false
	[ "$(getfattr --only-values -h -n security.selinux "$MNT/bin/sh" | tr -d '\0')" = system_u:object_r:shell_link_t:s0 ] || false
}

# --- the space check at its edge (archives in every mode, labels) ---

# free_blocks IMG: the superblock's free block count
free_blocks() {
	dumpe2fs -h "$1" 2>/dev/null | sed -n 's/^Free blocks: *//p'
}

# edge_of FN START: the largest K (KiB) for which FN K is accepted, found
# from the "need N more blocks" FN START is refused with (FN leaves its
# output in $T/out); fails if START fits or the edge is not a few
# KiB past START - N (the measure would then be far from the copy)
edge_of() {
	local k=$2 n i
	if "$1" "$k"; then echo "$1 $k: accepted" >&2; return 1; fi
	n=$(sed -n 's/.*image full: .*needs\{0,1\} \([0-9]*\) more blocks.*/\1/p' "$T/out" | head -n 1)
	[ -n "$n" ] || { cat "$T/out" >&2; return 1; }
	k=$((k - n))
	"$1" "$k" || { echo "$1 $k (start - need) refused" >&2; cat "$T/out" >&2; return 1; }
	for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16; do
		"$1" $((k + 1)) || break
		k=$((k + 1))
	done
	[ "$i" -lt 16 ] || { echo "$1: no edge near $k" >&2; return 1; }
	echo "$k"
}

# edge_holds FN K BASE: FN K is accepted (a fully copied, e2fsck-clean
# image with a few blocks left at most), FN K+1 refused before anything is written: "image full", the
# image's sha256 that of BASE, e2fsck clean
edge_holds() {
	local want
	"$1" "$2" || { cat "$T/out" >&2; return 1; }
	assert_fsck_clean "$T/i.img" || return 1
	debugfs -R "cat /a" "$T/i.img" 2>/dev/null | cmp -s - "$T/src/a" ||
		{ echo "$1 $2: /a is not the source's" >&2; return 1; }
	[ "$(free_blocks "$T/i.img")" -lt 8 ] ||
		{ echo "$1 $2: $(free_blocks "$T/i.img") blocks left" >&2; return 1; }
	want=$(sha256sum <"$3")
	if "$1" $(($2 + 1)); then echo "$1 $(($2 + 1)): accepted" >&2; return 1; fi
	grep -q "image full: .*need" "$T/out" || { cat "$T/out" >&2; return 1; }
	[ "$(sha256sum <"$T/i.img")" = "$want" ] || { echo "$1 $(($2 + 1)): image changed" >&2; return 1; }
	assert_fsck_clean "$T/i.img" || return 1
}

# mktar K: $T/e.tar holding a (K KiB of $T/pool) and u (as in the base)
mktar() {
	head -c $(($1 * 1024)) "$T/pool" >"$T/src/a" || return 1
	touch -d @1000000000 "$T/src/a" "$T/src/u" || return 1
	tar -C "$T/src" -cf "$T/e.tar" a u || return 1
}

try_plain() { mktar "$1" && cp "$T/base0.img" "$T/i.img" && "$E3CP" "$T/e.tar" "$T/i.img" >"$T/out" 2>&1; }
try_stdin() { mktar "$1" && cp "$T/base0.img" "$T/i.img" && "$E3CP" - "$T/i.img" <"$T/e.tar" >"$T/out" 2>&1; }
try_pipe_ow() { mktar "$1" && cp "$T/base1.img" "$T/i.img" && cat "$T/e.tar" | "$E3CP" --overwrite - "$T/i.img" >"$T/out" 2>&1; }
try_ow() { mktar "$1" && cp "$T/base1.img" "$T/i.img" && "$E3CP" --overwrite "$T/e.tar" "$T/i.img" >"$T/out" 2>&1; }
try_up() { mktar "$1" && cp "$T/base1.img" "$T/i.img" && "$E3CP" --update "$T/e.tar" "$T/i.img" >"$T/out" 2>&1; }

@test "edges: archives at the space edge: refused up front just past it, taken at it (SRC.tar, stdin, --overwrite, --update)" {
	mkdir -p "$T/src" || false
	head -c 8000000 /dev/urandom >"$T/pool" || false
	head -c 300000 /dev/urandom >"$T/src/u" || false
	newimg "$T/base0.img" 4M
	# base1: holds a (1500 KiB) and u as the archives' u, with its mtime
	mktar 1500 || false
	cp "$T/base0.img" "$T/base1.img"
	"$E3CP" "$T/e.tar" "$T/base1.img" || false
	local f0 f1 k
	f0=$(free_blocks "$T/base0.img")
	f1=$(free_blocks "$T/base1.img")
	for fn in try_plain try_stdin; do
		k=$(edge_of $fn $((f0 + 50))) || false
		edge_holds $fn "$k" "$T/base0.img" || false
	done
	# --overwrite and --update: what the archive replaces is credited
	# (a fits where 1500 KiB were), u is replaced by itself / skipped
	for fn in try_ow try_pipe_ow try_up; do
		k=$(edge_of $fn $((f1 + 1600))) || false
		[ "$k" -gt $((f1 + 1400)) ] || false
		edge_holds $fn "$k" "$T/base1.img" || false
	done
}

try_mkfs() {
	mktar "$1" || return 1
	rm -f "$T/i.img"
	"$E3MKFS" -q -b 1024 -d "$T/tree" -d "$T/e.tar" "$T/i.img" 4M >"$T/out" 2>&1
}

@test "edges: e3mkfs with several -d counts an archive overlay ahead" {
	mkdir -p "$T/src" "$T/tree/etc" || false
	head -c 8000000 /dev/urandom >"$T/pool" || false
	head -c 3000 /dev/urandom >"$T/src/u" || false
	echo base >"$T/tree/etc/motd" || false
	local k
	k=$(edge_of try_mkfs 4000) || false
	try_mkfs "$k" || { cat "$T/out" >&2; false; }
	assert_fsck_clean "$T/i.img"
	debugfs -R "cat /a" "$T/i.img" 2>/dev/null | cmp -s - "$T/src/a" || false
	[ "$(debugfs -R "cat /etc/motd" "$T/i.img" 2>/dev/null)" = base ] || false
	# one KiB more: refused before the overlay is begun, the image clean
	! try_mkfs $((k + 1)) || false
	grep -q "image full: .*needs" "$T/out" || false
	assert_fsck_clean "$T/i.img"
	run debugfs -R "stat /a" "$T/i.img"
	assert_output_has "File not found"
	# an archive on stdin is spooled and measured the same way; auto
	# cannot take it, so the hint is a larger SIZE
	rm -f "$T/i.img"
	run bash -c "cat '$T/e.tar' | '$E3MKFS' -q -b 1024 -d - '$T/i.img' 2M"
	[ "$status" -ne 0 ] || false
	assert_output_has "more blocks"
	assert_output_has "; a larger SIZE fits it"
	assert_fsck_clean "$T/i.img"
}

try_label() {
	head -c $(($1 * 1024)) "$T/pool" >"$T/lt/a" || return 1
	cp "$T/l0.img" "$T/i.img" || return 1
	"$E3CP" ${FC:+--file-contexts "$FC"} "$T/lt" "$T/i.img" >"$T/out" 2>&1
}

@test "edges: --file-contexts labels are measured: a tree that fits only without them is refused up front" {
	head -c 4000000 /dev/urandom >"$T/pool" || false
	mkdir -p "$T/lt/d" || false
	for i in $(seq 1 40); do echo "$i" >"$T/lt/d/f$i" || false; done
	printf '/.*\tsystem_u:object_r:default_t:s0\n/d/f1.*\tsystem_u:object_r:one_t:s0\n' >"$T/fc"
	# 128-byte inodes: every label goes to an xattr block, shared as
	# the kernel shares them (one per label here: default_t, one_t)
	newimg "$T/l0.img" 2M -I 128 2>/dev/null
	local k0 k1
	FC= k0=$(edge_of try_label 2000) || false
	FC=$T/fc k1=$(edge_of try_label 2000) || false
	[ "$k1" -eq $((k0 - 2)) ] || { echo "edge $k0 without labels, $k1 with" >&2; false; }
	# at k0 it fits without labels but not with them: refused up front
	FC=$T/fc
	! try_label "$k0" || false
	grep -q "image full: need 2 more blocks" "$T/out" || false
	cmp -s "$T/i.img" "$T/l0.img" || false
	# at k1, every entry labelled, the image full and clean
	FC=$T/fc edge_holds_label "$k1"
	# large inodes hold the labels: the same edge with and without
	newimg "$T/l0.img" 2M
	FC= k0=$(edge_of try_label 2000) || false
	FC=$T/fc k1=$(edge_of try_label 2000) || false
	[ "$k1" -eq "$k0" ] || false
}

edge_holds_label() {
	try_label "$1" || { cat "$T/out" >&2; return 1; }
	assert_fsck_clean "$T/i.img" || return 1
	[ "$(label_of "$T/i.img" /d/f1)" = system_u:object_r:one_t:s0 ] || return 1
	[ "$(label_of "$T/i.img" /d/f2)" = system_u:object_r:default_t:s0 ] || return 1
	[ "$(label_of "$T/i.img" /lost+found)" = system_u:object_r:default_t:s0 ] || return 1
	[ "$(label_of "$T/i.img" /a)" = system_u:object_r:default_t:s0 ] || return 1
}

@test "edges: --overwrite credits each archive at its own destination only" {
	mkdir -p "$T/s1/d" "$T/s2/d" "$T/s0/x/d" "$T/s0/y/d" || false
	head -c 1500000 /dev/urandom >"$T/s0/x/d/big" || false
	echo a >"$T/s1/d/a" || false
	head -c 1500000 /dev/urandom >"$T/s2/d/big" || false
	tar -C "$T/s1" -cf "$T/a.tar" d/a || false
	tar -C "$T/s2" -cf "$T/b.tar" d/big || false
	newimg "$T/i.img" 4M
	"$E3CP" "$T/s0" "$T/i.img" || false
	# what is left is less than b.tar's d/big: /y/d/big is new, and the
	# /x/d/big a.tar's parent lookup found is not what b.tar replaces
	[ "$(dumpe2fs -h "$T/i.img" 2>/dev/null | sed -n 's/^Free blocks: *//p')" -lt 1400 ] || false
	cp "$T/i.img" "$T/i0.img"
	run "$E3CP" --overwrite "$T/a.tar=/x" "$T/b.tar=/y" "$T/i.img"
	[ "$status" -ne 0 ] || false
	assert_output_has "image full: need"
	cmp -s "$T/i.img" "$T/i0.img" || false
	# to /x, b.tar replaces /x/d/big and fits
	run "$E3CP" --overwrite "$T/a.tar=/x" "$T/b.tar=/x" "$T/i.img"
	assert_status 0
	debugfs -R "cat /x/d/big" "$T/i.img" 2>/dev/null | cmp -s - "$T/s2/d/big" || false
	assert_fsck_clean "$T/i.img"
}

@test "edges: inodes of 1-4 KiB (mke2fs -I up to the block size): files copied in whole, e2fsck clean" {
	mkdir -p "$T/src/d"
	for i in $(seq 1 40); do
		head -c $((i * 997)) /dev/urandom >"$T/src/d/f$i"
	done
	for geo in "1024 1024" "4096 2048" "4096 4096"; do
		set -- $geo
		rm -f "$T/i.img"
		mke2fs -q -F -t ext3 -b "$1" -I "$2" -N 256 "$T/i.img" 32M || false
		run "$E3CP" -j2 "$T/src" "$T/i.img"
		assert_status 0
		assert_fsck_clean "$T/i.img"
		for i in 1 2 17 40; do
			assert_img_file "$T/i.img" "/d/f$i" "$T/src/d/f$i"
		done
	done
}
