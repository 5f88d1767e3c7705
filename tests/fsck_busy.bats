#!/usr/bin/env bats
# fsck_busy.bats: e3fsck never writes, nor by default reads, an image that
# the kernel has mounted or that another e3img process holds (issue 19).
#  - -p and -y refuse a mounted image (read-write or read-only) and one an
#    e3cp is writing: exit 8 (e2fsck's "is mounted. Cannot continue"), one
#    line naming why, nothing written;
#  - -n refuses them too (a live filesystem or a half-written copy reads
#    as damage that is not there, or hides some), unless --force-read,
#    which checks anyway with a warning (e2fsck -n warns and checks);
#  - e3fsck holds the image lock while it works: an e3cp started then is
#    refused;
#  - 50 tries of e3fsck -y started while an e3cp of a throttled archive
#    runs: whichever gets the image first, the other is refused or waits
#    for nothing, and the image is never corrupt.
# The e3cp that holds an image reads its archive from a FIFO this test
# keeps open; e3fsck is held with E3_FAULT=stop-when-locked (SIGSTOP once
# it holds the lock). Timeouts only turn a hang into a failure.

load helper

setup() {
	# on tmpfs when there is one: the 50 tries copy, commit and rdump a
	# thousand files each, which a slow disk makes take minutes
	T=$(mktemp -d /dev/shm/fsck-busy-XXXXXX 2>/dev/null) ||
		T=$(mktemp -d /tmp/fsck-busy-XXXXXX)
	mkdir -p "$T/mnt" "$T/src/d1/d2" "$T/src/d3"
	for i in $(seq 1 40); do
		head -c $((i * 997)) /dev/urandom >"$T/src/d1/f$i"
		echo "$i" >"$T/src/d3/s$i"
	done
	head -c 300000 /dev/urandom >"$T/src/d1/d2/big"
	ln -s d1/f1 "$T/src/link"
	tar c -C "$T/src" . >"$T/src.tar"
	e3mkfs -q "$T/base.img" 32M
	PIDS=()
}

teardown() {
	local p
	for p in "${PIDS[@]}"; do
		kill -CONT "$p" 2>/dev/null
		kill "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	if mountpoint -q "$T/mnt" 2>/dev/null; then umount "$T/mnt"; fi
	rm -rf "$T"
}

# lock_id IMAGE: how /proc/locks names IMAGE's file (major:minor:inode)
lock_id() {
	local dev ino
	read -r dev ino < <(stat -c '%d %i' "$1") || return 1
	printf '%02x:%02x:%s' $(( (dev >> 8) & 0xfff )) \
		$(( (dev & 0xff) | ((dev >> 12) & 0xfff00) )) "$ino"
}

# wait_locked IMAGE ex|sh: until a process holds IMAGE's flock, exclusive
# (a writer's) or shared (a reader's); fails after 10 s. It reads
# /proc/locks: a probe that took a lock itself (flock -n) would make the
# tool's own non-blocking attempt fail when the two meet.
wait_locked() {
	local img=$1 kind=$2 i id want=READ
	[ "$kind" = ex ] && want=WRITE
	id=$(lock_id "$img") || return 1
	for i in $(seq 1 500); do
		grep -Eq "FLOCK +ADVISORY +$want +[0-9]+ +$id " /proc/locks && return 0
		sleep 0.02
	done
	echo "nothing took the $kind lock on $img ($id) in 10 s" >&2
	cat /proc/locks >&2
	return 1
}

# wait_pid PID: waits for a background job (60 s at most: a hang fails)
# and returns its exit status
wait_pid() {
	local pid=$1 i rc=0
	for i in $(seq 1 3000); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.02
	done
	if kill -0 "$pid" 2>/dev/null; then
		echo "process $pid still running after 60 s" >&2
		return 124
	fi
	wait "$pid" || rc=$?
	return $rc
}

# refused_all IMAGE WHY [nosum]: -n, -p, -y and the default all exit 8
# with one line "e3fsck: IMAGE: WHY: not checked (...)"; and, unless
# nosum (a read-write mount, which the kernel may write itself), the
# image is byte for byte what it was
refused_all() {
	local img=$1 why=$2 sum mode
	sum=$(md5sum <"$img") || return 1
	for mode in -n -p -y ""; do
		run timeout 60 e3fsck $mode "$img"
		assert_status 8 || return 1
		[ "${#lines[@]}" -eq 1 ] || { echo "e3fsck $mode: not one line: $output" >&2; return 1; }
		assert_output_has "e3fsck: $img: $why: not checked" || return 1
	done
	[ "${3:-}" = nosum ] && return 0
	[ "$(md5sum <"$img")" = "$sum" ] || { echo "$img written while refused" >&2; return 1; }
}

# same_tree IMAGE [SRC]: the image holds exactly SRC ($T/src by default;
# rdump, then diff)
same_tree() {
	local img=$1 src=${2:-$T/src} out=$T/rd
	rm -rf "$out"; mkdir -p "$out"
	debugfs -R "rdump / $out" "$img" >/dev/null 2>&1 || return 1
	rm -rf "$out/lost+found"
	diff -r --no-dereference "$src" "$out" >&2 || return 1
}

@test "a read-write loop mount: -n, -p, -y refused (exit 8, one line); -n --force-read checks with a warning" {
	require_root
	cp "$T/base.img" "$T/m.img"
	mount -o loop,noatime "$T/m.img" "$T/mnt"
	cp -a "$T/src/." "$T/mnt/"
	refused_all "$T/m.img" "image is mounted read-write" nosum
	run timeout 60 e3fsck -n --force-read "$T/m.img"
	assert_output_has "$T/m.img: warning: image is mounted read-write: checked anyway (--force-read)"
	# e2fsck -n too warns and checks a mounted filesystem; -y it refuses
	run e2fsck -fy "$T/m.img"
	assert_status 8
	umount "$T/mnt"
	assert_fsck_clean "$T/m.img"
	same_tree "$T/m.img"
}

@test "a read-only loop mount: refused alike (e2fsck -fy would check it; a repair under the kernel's cache is lost or worse)" {
	require_root
	cp "$T/base.img" "$T/m.img"
	e3cp "$T/src" "$T/m.img"
	mount -o loop,ro "$T/m.img" "$T/mnt"
	refused_all "$T/m.img" "image is mounted read-only"
	run timeout 60 e3fsck -n --force-read "$T/m.img"
	assert_status 0
	assert_output_has "$T/m.img: warning: image is mounted read-only: checked anyway (--force-read)"
	umount "$T/mnt"
	run timeout 60 e3fsck -y "$T/m.img"
	assert_status 0
}

@test "--force-read goes with -n only" {
	run e3fsck -y --force-read "$T/base.img"
	assert_status 16
	assert_output_has "--force-read goes with -n only"
	run e3fsck -p --force-read "$T/base.img"
	assert_status 16
}

@test "an image an e3cp is writing (its archive from a FIFO): refused by every mode, then the copy completes intact" {
	cp "$T/base.img" "$T/c.img"
	mkfifo "$T/fifo"
	exec 7<>"$T/fifo"	# the write end stays open: e3cp waits for input
	timeout 120 e3cp - "$T/c.img" <"$T/fifo" >"$T/cp.out" 2>&1 3>&- 7>&- &
	PIDS+=($!)
	wait_locked "$T/c.img" ex
	refused_all "$T/c.img" "image is in use by another e3img process"
	run timeout 60 e3fsck -n --force-read "$T/c.img"
	assert_output_has "$T/c.img: warning: image is in use by another e3img process: checked anyway (--force-read)"
	# JSON says why too
	run timeout 60 e3fsck --json -y "$T/c.img"
	assert_status 8
	assert_output_has '"in_use": true'
	cat "$T/src.tar" >&7
	exec 7>&-
	wait_pid "${PIDS[0]}"
	grep -q . "$T/cp.out" && { cat "$T/cp.out" >&2; false; }
	assert_fsck_clean "$T/c.img"
	same_tree "$T/c.img"
}

@test "e3fsck -y holds the image while it works: an e3cp, an e3mkfs or a second e3fsck started then is refused" {
	cp "$T/base.img" "$T/y.img"
	e3cp "$T/src/d3" "$T/y.img"
	E3_FAULT=stop-when-locked:1 e3fsck -y "$T/y.img" >"$T/fsck.out" 2>&1 3>&- &
	PIDS+=($!)
	wait_locked "$T/y.img" ex
	run timeout 60 e3cp "$T/src/d1" "$T/y.img"
	assert_status 8
	assert_output_has "e3cp: $T/y.img: image is in use by another e3img process"
	run timeout 60 e3fsck -n "$T/y.img"
	assert_status 8
	assert_output_has "image is in use by another e3img process: not checked"
	run timeout 60 e3mkfs -q -F "$T/y.img" 32M
	[ "$status" -ne 0 ]
	assert_output_has "image is in use by another e3img process"
	kill -CONT "${PIDS[0]}"
	wait_pid "${PIDS[0]}"
	run timeout 60 e3cp "$T/src/d1" "$T/y.img"
	assert_status 0
	assert_fsck_clean "$T/y.img"
}

@test "e3fsck -n holds a reader's lock: another -n shares the image, a writer is refused" {
	cp "$T/base.img" "$T/r.img"
	E3_FAULT=stop-when-locked:1 e3fsck -n "$T/r.img" >"$T/fsck.out" 2>&1 3>&- &
	PIDS+=($!)
	wait_locked "$T/r.img" sh
	run timeout 60 e3fsck -n "$T/r.img"
	assert_status 0
	run timeout 60 e3fsck -y "$T/r.img"
	assert_status 8
	assert_output_has "image is in use by another e3img process: not checked (let it finish first)"
	run timeout 60 e3cp "$T/src/d3" "$T/r.img"
	assert_status 8
	assert_output_has "image is in use by another e3img process"
	kill -CONT "${PIDS[0]}"
	wait_pid "${PIDS[0]}"
}

# feed: $T/race.tar in 32 KiB pieces, 10 ms apart (about 0.35 s in all),
# as a slow network or decompressor would give it
feed() {
	local size n i
	size=$(stat -c %s "$T/race.tar")
	n=$(( (size + 32767) / 32768 ))
	for ((i = 0; i < n; i++)); do
		dd if="$T/race.tar" bs=32K skip=$i count=1 status=none || return 0
		sleep 0.01
	done
}

# one_try N: e3cp of the fed archive, e3fsck -y started N ms later; every
# outcome the timing can give is checked for what it must leave. The
# copy's transactions are small (E3_JOURNAL_MEM=64 KiB), so it commits
# several times while it runs: the image then has needs_recovery set and
# a log, which the old e3fsck -y replayed under it (issue 19).
one_try() {
	local d=$1 img=$T/t.img frc crc cpid
	# bats runs this with set -e: every status is caught, none aborts
	cp "$T/base.img" "$img"
	{ feed | E3_JOURNAL_MEM=64 timeout 60 e3cp - "$img" >"$T/cp.out" 2>&1; } 3>&- &
	cpid=$!
	sleep "$(printf '0.%03d' "$d")"
	frc=0; timeout 60 e3fsck -y "$img" >"$T/fsck.out" 2>&1 || frc=$?
	crc=0; wait "$cpid" || crc=$?
	case $frc in
	0) ;;	# it had the image before or after the copy: nothing to fix
	8) grep -q "image is in use by another e3img process: not checked" "$T/fsck.out" ||
		{ echo "e3fsck exit 8 without the reason:" >&2; cat "$T/fsck.out" >&2; return 1; } ;;
	*) echo "delay $d ms: e3fsck -y exited $frc:" >&2; cat "$T/fsck.out" >&2; return 1 ;;
	esac
	case $crc in
	0) same_tree "$img" "$T/race" || { echo "delay $d ms: e3cp exited 0, contents wrong" >&2; return 1; } ;;
	8) grep -q "image is in use by another e3img process" "$T/cp.out" && [ "$frc" -eq 0 ] ||
		{ echo "delay $d ms: e3cp exited 8 (e3fsck $frc):" >&2; cat "$T/cp.out" >&2; return 1; } ;;
	*) echo "delay $d ms: e3cp exited $crc:" >&2; cat "$T/cp.out" >&2; return 1 ;;
	esac
	assert_fsck_clean "$img" || { echo "delay $d ms: corrupt after the race" >&2; return 1; }
	echo "$frc $crc" >>"$T/outcomes"
}

@test "50 tries of e3fsck -y started while e3cp copies a throttled archive: never a corrupt image, e3cp's exit and contents right" {
	local i j
	# 1,000 small files in 20 directories: a 1 MiB archive
	for i in $(seq 1 20); do
		mkdir -p "$T/race/d$i"
		for j in $(seq 1 50); do echo "$i/$j" >"$T/race/d$i/f$j"; done
	done
	tar c -C "$T/race" . >"$T/race.tar"
	: >"$T/outcomes"
	for i in $(seq 1 50); do
		one_try $(( (i * 37) % 400 ))
	done
	[ "$(wc -l <"$T/outcomes")" -eq 50 ]
	# how the tries fell (e3fsck exit, e3cp exit), for the log
	sort "$T/outcomes" | uniq -c | sed 's/^/# /' >&3
}
