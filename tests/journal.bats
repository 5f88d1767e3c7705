#!/usr/bin/env bats
# journal.bats: JBD2 compatibility and crash safety.
#  - logs written by debugfs (jo/jw/jc) are replayed by us exactly as by
#    e2fsck -E journal_only (images byte-equal but for s_wtime);
#  - logs we leave un-checkpointed (E3_FAULT=stop-after-commit:N) are
#    replayed by e2fsck, and by the kernel when root, to what ours gives;
#  - a crash sweep (E3_FAULT=kill:N for every N until the load completes)
#    and EIO/ENOSPC at chosen writes: replay only, then fsck clean, journal
#    empty, every committed file intact, no file with bytes never given;
#  - a crash sweep inside the window where a commit writes the log without
#    fs_lock while other clients go on (E3_FAULT=kill-commit:N, bench/mixload).
# Drivers: bench/jload (multi-threaded load, commit log, verify) and
# bench/jreplay (our replay as a command).

load helper

JLOAD="$E3_TOP/bench/jload"
JREPLAY="$E3_TOP/bench/jreplay"

setup() {
	T=$(mktemp -d /tmp/journal-bats-XXXXXX)
}

teardown() {
	if mountpoint -q "$T/mnt" 2>/dev/null; then umount "$T/mnt"; fi
	rm -rf "$T"
}

# byte offsets (cmp -l, 1-based) of fields a replay legitimately sets:
# s_wtime (sb 0x30..0x33) is "now" for e2fsck's closing flush.
SB_WTIME="1073 1074 1075 1076"

# cmp_replays A B: A and B equal except s_wtime
cmp_replays() {
	local diffs sa sb
	# cmp -l lists no byte past the shorter file's end (it says EOF on
	# stderr): a missing or cut image would compare equal
	sa=$(stat -c %s "$1") && sb=$(stat -c %s "$2") || return 1
	if [ "$sa" != "$sb" ]; then
		echo "$1 is $sa bytes, $2 is $sb" >&2
		return 1
	fi
	diffs=$(cmp -l "$1" "$2" | awk -v skip="$SB_WTIME" '
		BEGIN { n = split(skip, s, " "); for (i = 1; i <= n; i++) ok[s[i]] = 1 }
		!($1 in ok) { print }' | head -20)
	if [ -n "$diffs" ]; then
		echo "images differ beyond s_wtime (offset old new):" >&2
		printf '%s\n' "$diffs" >&2
		return 1
	fi
}

# replay_both IMG: IMG.fsck (e2fsck -E journal_only -y) and IMG.ours
replay_both() {
	cp --sparse=always "$1" "$1.fsck" || return 1
	cp --sparse=always "$1" "$1.ours" || return 1
	fsck_rc=0 ours_rc=0
	e2fsck -E journal_only -y "$1.fsck" >"$T/fsck.out" 2>&1 || fsck_rc=$?
	"$JREPLAY" --raw "$1.ours" >"$T/ours.out" 2>&1 || ours_rc=$?
}

blk_md5() {	# IMG BLOCKSIZE BLOCK
	dd if="$1" bs="$2" skip="$3" count=1 2>/dev/null | md5sum | cut -c1-32
}

new_ext3() {	# IMG SIZE [mke2fs options]
	local img=$1 size=$2
	shift 2
	mke2fs -q -t ext3 -F "$@" "$img" "$size" >/dev/null
}

# debugfs writes a log with jo/jw/jc: the script on stdin
debugfs_log() {
	debugfs -w -f - "$1" >/dev/null 2>&1
}

# $T/d8: 8 blocks of 1 KiB, the even ones starting with the JBD2 magic
# (escaped in the log); $T/big: 3000 random blocks
make_debugfs_data() {
	local i
	: >"$T/d8"
	for i in 0 1 2 3 4 5 6 7; do
		if [ $((i % 2)) -eq 0 ]; then
			{ printf '\xc0\x3b\x39\x98'; head -c 1020 /dev/urandom; } >>"$T/d8"
		else
			head -c 1024 /dev/urandom >>"$T/d8"
		fi
	done
	head -c $((3000 * 1024)) /dev/urandom >"$T/big"
}

@test "debugfs log: several transactions, revokes, escapes, 3000 blocks, uncommitted tail: ours equals e2fsck's replay" {
	new_ext3 "$T/j.img" 64M -b 1024 -J size=16
	# free blocks in group 3, after its inode table (24836-25347)
	run debugfs -R "testb 26000 3000" "$T/j.img"
	[[ "$output" != *"marked in use"* ]]
	make_debugfs_data
	debugfs_log "$T/j.img" <<EOF
jo
jw -b 30000,30001,30005,30006,30007 $T/d8
jw -b 30100-30102 $T/d8
jw -r 30001
jw -b 30200-30202 $T/d8
jw -r 30005
jw -b 30005 $T/d8
jw -b 26000-28999 $T/big
jc
EOF
	# the uncommitted transaction in a second session (debugfs finds the head)
	debugfs_log "$T/j.img" <<EOF
jo
jw -b 30300-30303 -c $T/d8
jc
EOF
	run debugfs -R logdump "$T/j.img"
	assert_output_has "Found expected sequence 8, type 1 (descriptor block)"
	replay_both "$T/j.img"
	[ "$fsck_rc" -eq 0 ]
	[ "$ours_rc" -eq 0 ]
	grep -q "replayed 7 transactions (1..7), 3010 blocks, 2 revoked" "$T/ours.out"
	cmp_replays "$T/j.img.fsck" "$T/j.img.ours"
	local zero d0
	zero=$(head -c 1024 /dev/zero | md5sum | cut -c1-32)
	d0=$(head -c 1024 "$T/d8" | md5sum | cut -c1-32)
	[ "$(blk_md5 "$T/j.img.ours" 1024 30000)" = "$d0" ]	# magic restored
	[ "$(blk_md5 "$T/j.img.ours" 1024 30001)" = "$zero" ]	# revoked
	[ "$(blk_md5 "$T/j.img.ours" 1024 30005)" = "$d0" ]	# rewritten after revoke
	[ "$(blk_md5 "$T/j.img.ours" 1024 30300)" = "$zero" ]	# never committed
	[ "$(blk_md5 "$T/j.img.ours" 1024 28999)" = "$(tail -c 1024 "$T/big" | md5sum | cut -c1-32)" ]
	assert_fsck_clean "$T/j.img.ours"
	assert_fsck_clean "$T/j.img.fsck"
}

@test "debugfs log across a tid wrap (s_sequence 0xfffffffe): ours equals e2fsck's replay" {
	new_ext3 "$T/w.img" 32M -b 1024 -J size=4
	make_debugfs_data
	local jsb
	jsb=$(debugfs -R "bmap <8> 0" "$T/w.img" 2>/dev/null)
	# s_sequence (journal superblock offset 0x18), big-endian
	printf '\xff\xff\xff\xfe' | dd of="$T/w.img" bs=1 seek=$((jsb * 1024 + 24)) conv=notrunc 2>/dev/null
	debugfs_log "$T/w.img" <<EOF
jo
jw -b 20000-20003 $T/d8
jw -b 20004 $T/d8
jw -r 20001
jw -b 20002 $T/d8
jc
EOF
	run dumpe2fs -h "$T/w.img"
	assert_output_has "Journal sequence:         0xfffffffe"
	replay_both "$T/w.img"
	[ "$fsck_rc" -eq 0 ]
	[ "$ours_rc" -eq 0 ]
	grep -q "replayed 4 transactions (4294967294..1)" "$T/ours.out"
	cmp_replays "$T/w.img.fsck" "$T/w.img.ours"
	[ "$(blk_md5 "$T/w.img.ours" 1024 20001)" = "$(head -c 1024 /dev/zero | md5sum | cut -c1-32)" ]
	run dumpe2fs -h "$T/w.img.ours"
	assert_output_has "Journal sequence:         0x00000003"
	assert_fsck_clean "$T/w.img.ours"
}

@test "debugfs log with v1 checksums: good transactions replayed, a bad commit checksum handled as e2fsck does" {
	new_ext3 "$T/c.img" 32M -b 1024 -J size=4
	make_debugfs_data
	debugfs_log "$T/c.img" <<EOF
jo -c
jw -b 20000,20001,20005 $T/d8
jw -b 20100-20102 $T/d8
jc
EOF
	replay_both "$T/c.img"
	[ "$fsck_rc" -eq 0 ]
	[ "$ours_rc" -eq 0 ]
	grep -q "replayed 2 transactions" "$T/ours.out"
	cmp_replays "$T/c.img.fsck" "$T/c.img.ours"
	assert_fsck_clean "$T/c.img.ours"
	# debugfs 1.47.0 writes a revoke-only transaction whose commit checksum
	# does not match: e2fsck calls it corrupt, stops there, flags the fs
	new_ext3 "$T/d.img" 32M -b 1024 -J size=4
	debugfs_log "$T/d.img" <<EOF
jo -c
jw -b 20000,20001,20005 $T/d8
jw -r 20001
jw -b 20100-20102 $T/d8
jc
EOF
	replay_both "$T/d.img"
	grep -q "Journal transaction 2 was corrupt" "$T/fsck.out"
	[ "$ours_rc" -ne 0 ]
	grep -q "jreplay: .*d.img.ours: while replaying the journal: journal transaction is corrupt" "$T/ours.out"
	cmp_replays "$T/d.img.fsck" "$T/d.img.ours"
	assert_journal_empty "$T/d.img.ours"
}

@test "our log left un-checkpointed (stop-after-commit): e2fsck replays it to what ours gives" {
	new_ext3 "$T/s.img" 16M -b 1024 -g 2048
	E3_FAULT=stop-after-commit:6 run "$JLOAD" load "$T/s.img" 100 4 "$T/s.log"
	assert_status 137	# the simulated crash: SIGKILL
	run dumpe2fs -h "$T/s.img"
	assert_output_has "needs_recovery"
	[[ "$output" != *"Journal start:            0"* ]]
	replay_both "$T/s.img"
	[ "$fsck_rc" -eq 0 ]
	[ "$ours_rc" -eq 0 ]
	grep -q "replayed 6 transactions" "$T/ours.out"
	cmp_replays "$T/s.img.fsck" "$T/s.img.ours"
	assert_fsck_clean "$T/s.img.ours"
	assert_fsck_clean "$T/s.img.fsck"
	run "$JLOAD" verify "$T/s.img.ours" 100 4 "$T/s.log"
	assert_status 0
}

@test "our log wraps around the end of a 1024-block journal: e2fsck's replay equals ours" {
	new_ext3 "$T/r.img" 24M -b 1024 -g 4096
	local n wrapped=
	# commits are forced every 8 files: find one whose log crosses the end
	for n in 40 50 60 70 80; do
		cp --sparse=always "$T/r.img" "$T/rw.img"
		E3_FAULT=stop-after-commit:$n run "$JLOAD" load "$T/rw.img" 700 1 "$T/r.log"
		assert_status 137	# the simulated crash: SIGKILL
		# a wrapped log: some block after the first is below s_start
		if debugfs -R logdump "$T/rw.img" 2>/dev/null | awk '
			/^Journal starts at block/ { s = $5 + 0 }
			/at block/ { b = $NF; sub(/:.*/, "", b); if (b + 0 < s) w = 1 }
			END { exit !w }'; then
			wrapped=$n
			break
		fi
	done
	[ -n "$wrapped" ]
	replay_both "$T/rw.img"
	[ "$fsck_rc" -eq 0 ]
	[ "$ours_rc" -eq 0 ]
	cmp_replays "$T/rw.img.fsck" "$T/rw.img.ours"
	assert_fsck_clean "$T/rw.img.ours"
	run "$JLOAD" verify "$T/rw.img.ours" 700 1 "$T/r.log"
	assert_status 0
}

@test "our un-checkpointed log is replayed by the kernel (loop mount) to what ours gives" {
	require_root
	new_ext3 "$T/k.img" 16M -b 1024 -g 2048
	E3_FAULT=stop-after-commit:5 run "$JLOAD" load "$T/k.img" 100 4 "$T/k.log"
	assert_status 137	# the simulated crash: SIGKILL
	cp --sparse=always "$T/k.img" "$T/k.ours"
	"$JREPLAY" --raw "$T/k.ours"
	mkdir "$T/mnt"
	mount -o loop,noatime "$T/k.img" "$T/mnt"
	umount "$T/mnt"
	assert_fsck_clean "$T/k.img"
	run "$JLOAD" verify "$T/k.img" 100 4 "$T/k.log"
	assert_status 0
	# every block equal but the superblock (mount count/time, lifetime
	# writes) and the journal's own blocks (the kernel's own transactions)
	debugfs -R "blocks <8>" "$T/k.img" 2>/dev/null | tr ' ' '\n' | grep . >"$T/jblocks"
	local diffs
	diffs=$(cmp -l "$T/k.ours" "$T/k.img" | awk -v jf="$T/jblocks" '
		BEGIN { while ((getline b < jf) > 0) j[b] = 1 }
		{ blk = int(($1 - 1) / 1024); if (blk != 1 && !(blk in j)) print blk }' | sort -u)
	[ -z "$diffs" ] || { echo "blocks differ: $diffs" >&2; false; }
}

@test "a log the kernel leaves (shut down mid-write, godown): ours equals e2fsck's replay" {
	require_root
	new_ext3 "$T/g.img" 32M -b 1024
	mkdir "$T/mnt"
	mount -o loop "$T/g.img" "$T/mnt"
	cp -r "$E3_TOP/lib" "$T/mnt/"
	sync
	mkdir "$T/mnt/x"
	for i in $(seq 1 50); do echo "$i" >"$T/mnt/x/f$i"; done
	rm -f "$T/mnt"/lib/*/*.c	# frees journaled blocks: revoke records
	"$E3_TOP/bench/godown" --logflush "$T/mnt"
	umount "$T/mnt"
	run dumpe2fs -h "$T/g.img"
	assert_output_has "needs_recovery"
	run debugfs -R logdump "$T/g.img"
	assert_output_has "(revoke table)"
	replay_both "$T/g.img"
	[ "$fsck_rc" -eq 0 ]
	[ "$ours_rc" -eq 0 ]
	cmp_replays "$T/g.img.fsck" "$T/g.img.ours"
	# the ext4 driver keeps the superblock's free counts in memory, so
	# e2fsck -fn notes them (exit 0); everything else is consistent
	assert_fsck_clean "$T/g.img.ours"
}

@test "a clean load leaves an empty journal and needs_recovery clear" {
	new_ext3 "$T/c.img" 16M -b 1024 -g 2048
	run "$JLOAD" load "$T/c.img" 60 3 "$T/c.log"
	assert_status 0
	assert_fsck_clean "$T/c.img"
	run "$JLOAD" verify "$T/c.img" 60 3 "$T/c.log"
	assert_status 0
	assert_output_has "present 60 lost 0 wrong 0"
	run "$JREPLAY" "$T/c.img"
	assert_output_has "nothing to replay"
}

@test "where commits fall leaves no trace: loads committing every 3 and every 11 files give identical images" {
	new_ext3 "$T/base.img" 16M -b 1024 -g 2048
	cp --sparse=always "$T/base.img" "$T/a.img"
	cp --sparse=always "$T/base.img" "$T/b.img"
	SOURCE_DATE_EPOCH=1700000000 JLOAD_COMMIT_EVERY=3 "$JLOAD" load "$T/a.img" 60 1 "$T/a.log"
	SOURCE_DATE_EPOCH=1700000000 JLOAD_COMMIT_EVERY=11 "$JLOAD" load "$T/b.img" 60 1 "$T/b.log"
	cmp "$T/a.img" "$T/b.img"
	assert_fsck_clean "$T/a.img"
}

@test "a malformed E3_FAULT is refused" {
	new_ext3 "$T/b.img" 16M -b 1024
	E3_FAULT=explode:3 run "$JLOAD" load "$T/b.img" 5 1 "$T/b.log"
	assert_status 1
	assert_output_has "bad option"
	assert_fsck_clean "$T/b.img"
}

# after a crash: replay only (no -f, no repairs) by e2fsck and by us; both
# clean, empty, equal, committed files intact, no foreign bytes. Called
# from `||` (set -e is off there): every check says `|| return 1`.
check_crashed() {	# IMG NFILES THREADS LOG
	replay_both "$1" || return 1
	[ "$fsck_rc" -eq 0 ] || { cat "$T/fsck.out" >&2; return 1; }
	[ "$ours_rc" -eq 0 ] || { cat "$T/ours.out" >&2; return 1; }
	assert_fsck_clean "$1.fsck" || return 1
	assert_fsck_clean "$1.ours" || return 1
	cmp_replays "$1.fsck" "$1.ours" || return 1
	"$JLOAD" verify "$1.ours" "$2" "$3" "$4" >"$T/verify.out" ||
		{ cat "$T/verify.out" >&2; return 1; }
	"$JLOAD" verify "$1.fsck" "$2" "$3" "$4" >/dev/null || return 1
}

# SIGKILL at write N for every N until a 4-thread load of 120 files
# completes, each crash checked by check_crashed
crash_sweep() {
	new_ext3 "$T/base.img" 16M -b 1024 -g 2048
	local n rc points=0
	for ((n = 1; n < 4000; n++)); do
		cp --sparse=always "$T/base.img" "$T/x.img"
		rm -f "$T/x.log"
		E3_FAULT=kill:$n "$JLOAD" load "$T/x.img" 120 4 "$T/x.log" 2>/dev/null &&
			rc=0 || rc=$?
		if [ "$rc" -eq 0 ]; then
			break
		fi
		[ "$rc" -eq 137 ] || { echo "kill:$n: exit $rc" >&2; return 1; }
		check_crashed "$T/x.img" 120 4 "$T/x.log" ||
			{ echo "after kill:$n" >&2; return 1; }
		points=$((points + 1))
	done
	echo "# $points crash points" >&3
	[ "$points" -ge 30 ] || return 1
	assert_fsck_clean "$T/x.img" || return 1
}

@test "crash sweep: SIGKILL at write N for every N until a 4-thread load completes" {
	crash_sweep
}

@test "crash sweep with committed blocks written home before the checkpoint (E3_JOURNAL_MEM)" {
	# 8 KiB: transactions of 8 blocks, each written home after its
	# commit, while the log keeps it until the checkpoint — what the
	# journal's memory bound does on big copies
	export E3_JOURNAL_MEM=8
	crash_sweep
}

@test "crash sweep of e3cp --overwrite with blocks written home early: every file left is the old one, the new one or empty" {
	# --overwrite frees the first source's data and indirect blocks,
	# and the second's files reuse them once the freeing commit is
	# durable; with
	# E3_JOURNAL_MEM=8 committed indirect blocks go home early. A replay
	# must never put an old indirect block back over new data. A file
	# replaced but whose new data was not committed yet is empty (its
	# size and blocks are committed together, after the data).
	local i n rc points=0 f bad
	mkdir -p "$T/a" "$T/b"
	for i in $(seq 10 33); do
		head -c $(( (i * 7919 % 40 + 14) * 1024 )) /dev/urandom >"$T/a/f$i"
		head -c $(( (i * 104729 % 40 + 14) * 1024 )) /dev/urandom >"$T/b/f$i"
	done
	new_ext3 "$T/base.img" 8M -b 1024 -g 2048
	for ((n = 1; n < 4000; n++)); do
		cp --sparse=always "$T/base.img" "$T/x.img"
		# b replaces a in the same session: a's blocks were committed
		# (and written home) by this journal before they are freed
		E3_JOURNAL_MEM=8 E3_FAULT=kill:$n e3cp --quiet -j2 --overwrite \
			"$T/a" "$T/b" "$T/x.img" 2>/dev/null && rc=0 || rc=$?
		[ "$rc" -eq 0 ] && break
		[ "$rc" -eq 137 ] || { echo "kill:$n: exit $rc" >&2; false; }
		# replay only: a repair would hide what the journal left
		e2fsck -E journal_only -y "$T/x.img" >/dev/null 2>&1 ||
			{ echo "after kill:$n: e2fsck -E journal_only exited $?" >&2; false; }
		assert_fsck_clean "$T/x.img" || { echo "after kill:$n" >&2; false; }
		rm -rf "$T/out"; mkdir "$T/out"
		debugfs -R "rdump / $T/out" "$T/x.img" >/dev/null 2>&1
		bad=""
		for f in "$T/out"/f*; do
			[ ! -s "$f" ] || cmp -s "$f" "$T/a/${f##*/}" ||
				cmp -s "$f" "$T/b/${f##*/}" || bad="$bad ${f##*/}"
		done
		[ -z "$bad" ] || { echo "after kill:$n, not old, new or empty:$bad" >&2; false; }
		points=$((points + 1))
	done
	echo "# $points crash points" >&3
	[ "$points" -ge 30 ]
	for i in $(seq 10 33); do
		assert_img_file "$T/x.img" "/f$i" "$T/b/f$i"
	done
	assert_fsck_clean "$T/x.img"
}

# SIGKILL inside a commit's unlocked window (E3_FAULT=kill-commit:N: the
# N-th log, RECOVER, journal-sb or commit-block write of a commit, made
# with fs_lock released while the other clients go on filling the next
# transaction) under a 16-client bench/mixload; transactions of 16 KiB
# (E3_JOURNAL_MEM) so a run commits about a hundred times. Each crash:
# e2fsck's replay and ours succeed, give the same image, and both are
# e2fsck -fn clean.
@test "crash sweep inside the unlocked commit window: 16 mixload clients, kill-commit:N, both replays clean and equal" {
	local n rc points=0 mixload=$E3_TOP/bench/mixload
	new_ext3 "$T/base.img" 64M -b 1024
	for n in 1 2 3 4 6 9 14 21 32 48 72 108 162 243 365 548 822; do
		cp --sparse=always "$T/base.img" "$T/x.img"
		E3_JOURNAL_MEM=16 E3_FAULT=kill-commit:$n "$mixload" --threads 16 \
			--ops 150 "$T/x.img" >/dev/null 2>&1 && rc=0 || rc=$?
		[ "$rc" -eq 0 ] && break
		[ "$rc" -eq 137 ] || { echo "kill-commit:$n: exit $rc" >&2; false; }
		replay_both "$T/x.img"
		[ "$fsck_rc" -eq 0 ] || { echo "kill-commit:$n" >&2; cat "$T/fsck.out" >&2; false; }
		[ "$ours_rc" -eq 0 ] || { echo "kill-commit:$n" >&2; cat "$T/ours.out" >&2; false; }
		assert_fsck_clean "$T/x.img.fsck" || { echo "after kill-commit:$n" >&2; false; }
		assert_fsck_clean "$T/x.img.ours" || { echo "after kill-commit:$n" >&2; false; }
		cmp_replays "$T/x.img.fsck" "$T/x.img.ours" || { echo "after kill-commit:$n" >&2; false; }
		points=$((points + 1))
	done
	echo "# $points crash points" >&3
	[ "$points" -ge 10 ]
	# the sweep reached the end: the last run completed, clean
	[ "$rc" -eq 0 ]
	assert_fsck_clean "$T/x.img"
}

@test "EIO and ENOSPC at chosen writes: a clear error, no crash, the image replays clean" {
	new_ext3 "$T/base.img" 16M -b 1024 -g 2048
	local kind n
	for kind in eio enospc; do
		for n in 1 2 5 9 17 30; do
			cp --sparse=always "$T/base.img" "$T/e.img"
			rm -f "$T/e.log"
			E3_FAULT=$kind:$n run "$JLOAD" load "$T/e.img" 80 2 "$T/e.log"
			assert_status 1
			if [ $kind = eio ]; then
				assert_output_has "Input/output error"
			else
				assert_output_has "No space left on device"
			fi
			check_crashed "$T/e.img" 80 2 "$T/e.log" ||
				{ echo "after $kind:$n" >&2; false; }
		done
	done
}

@test "a reader that replays needs the image to itself: not while another reader holds it" {
	new_ext3 "$T/p.img" 16M -b 1024 -g 2048
	E3_FAULT=stop-after-commit:3 run "$JLOAD" load "$T/p.img" 40 2 "$T/p.log"
	assert_status 137	# the simulated crash: SIGKILL
	# flock(1) holds a shared lock, as another reader would
	run flock -s "$T/p.img" "$JREPLAY" "$T/p.img"
	assert_status 1
	assert_output_has "image is in use by another e3img process"
	run "$JREPLAY" "$T/p.img"
	assert_status 0
	assert_output_has "replayed 3 transactions"
	assert_fsck_clean "$T/p.img"
}

@test "a writer replays a pending journal first, a reader refuses unless asked" {
	new_ext3 "$T/p.img" 16M -b 1024 -g 2048
	E3_FAULT=stop-after-commit:3 run "$JLOAD" load "$T/p.img" 40 2 "$T/p.log"
	assert_status 137	# the simulated crash: SIGKILL
	cp --sparse=always "$T/p.img" "$T/q.img"
	run "$JREPLAY" --no-replay "$T/p.img"
	assert_status 1
	assert_output_has "journal needs recovery (replay it first)"
	run "$JREPLAY" --write "$T/p.img"
	assert_status 0
	assert_output_has "replayed 3 transactions"
	assert_fsck_clean "$T/p.img"
	run "$JREPLAY" "$T/q.img"
	assert_status 0
	assert_output_has "replayed 3 transactions"
	assert_fsck_clean "$T/q.img"
	run "$JLOAD" verify "$T/q.img" 40 2 "$T/p.log"
	assert_status 0
}
