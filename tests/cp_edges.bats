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
