#!/usr/bin/env bats
# tests/cp_devtab.bats: e3cp -D — genext2fs device tables. A counted line
# makes path<i> for start <= i < count with minor + i*inc - start, which is
# what genext2fs itself makes; where genext2fs is installed the two images'
# /dev are compared entry by entry.
load helper

setup_file() {
	export T=/tmp/cp-devtab-bats-$$
	mkdir -p "$T/empty"
}

teardown_file() {
	rm -rf "/tmp/cp-devtab-bats-$$"
}

# newimg PATH: an empty ext3 image, 1 KiB blocks
newimg() {
	rm -f "$1"
	mke2fs -q -F -t ext3 -b 1024 "$1" 8M || return 1
}

# e3cp_table TABLE IMAGE: a fresh image, then only the table applied (the
# empty source directory copies nothing but the root's own attributes)
e3cp_table() {
	newimg "$2" || return 1
	e3cp -D "$1" "$T/empty" "$2:/"		# its exit code is the function's
}

# dev_summary IMAGE [DIR]: one line per entry of DIR (default /dev), sorted:
# name, mode in octal, uid, gid and, for devices, major:minor — what a
# device table decides, without inode numbers or times
dev_summary() {
	local img=$1 dir=${2:-/dev} name mode uid gid rest
	debugfs -R "ls -p $dir" "$img" 2>/dev/null |
	awk -F/ 'NF >= 7 && $6 != "." && $6 != ".." { print $6, $3, $4, $5 }' |
	sort | while read -r name mode uid gid; do
		rest=
		case $mode in
		02*|06*)
			# debugfs pads to two digits ("05:01"); drop the padding
			rest=" $(debugfs -R "stat $dir/$name" "$img" 2>/dev/null |
				 sed -n 's/.*major\/minor number: *\([0-9]*\):\([0-9]*\).*/\1 \2/p' |
				 { read -r ma mi; echo "$((10#$ma)):$((10#$mi))"; })"
			;;
		esac
		echo "$name $mode $uid $gid$rest"
	done
}

# The lines the comparisons use: start 0 and not, inc 0, 1 and more, count
# 1 and more, a start at or past count, no count, char and block devices.
write_table() {
	cat > "$1" <<'DT'
# name	type mode uid gid major minor start inc count
/dev	d    755  0    0    -    -     -     -   -
/dev/mem c    640  0    0    1    1     0     0   -
/dev/null c   666  0    0    1    3     0     0   0
/dev/tty c    666  0    5    4    0     0     1   4
/dev/hda b    640  0    6    3    1     1     1   4
/dev/x  c    600  0    0    5    0     1     2   4
/dev/sd b    660  0    6    8    16    2     3   5
/dev/ttyS c  660  0   20    4    64    3     16  4
/dev/one c   600  0    0    10   7     0     5   1
/dev/late b  600  0    0    7    9     2     4   3
/dev/same c  600  0    0    7    1     0     0   3
/dev/none c  600  0    0    9    9     4     1   4
/dev/fifo p  600  0    0    -    -     -     -   -
DT
}

@test "device table counts: names and minors as genext2fs makes them, start 0 or not, inc 0, 1 or more" {
	write_table "$T/t1"
	run e3cp_table "$T/t1" "$T/e1.img"
	assert_status 0
	run dev_summary "$T/e1.img"
	assert_status 0
	# count is where the numbering stops, not how many: start 1 count 4
	# is three entries, and minor + i*inc - start gives 1, 3, 5 for x
	[ "$output" = "$(cat <<'EXP'
fifo 010600 0 0
hda1 060640 0 6 3:1
hda2 060640 0 6 3:2
hda3 060640 0 6 3:3
late2 060600 0 0 7:15
mem 020640 0 0 1:1
null 020666 0 0 1:3
one0 020600 0 0 10:7
same0 020600 0 0 7:1
same1 020600 0 0 7:1
same2 020600 0 0 7:1
sd2 060660 0 6 8:20
sd3 060660 0 6 8:23
sd4 060660 0 6 8:26
tty0 020666 0 5 4:0
tty1 020666 0 5 4:1
tty2 020666 0 5 4:2
tty3 020666 0 5 4:3
ttyS3 020660 0 20 4:109
x1 020600 0 0 5:1
x2 020600 0 0 5:3
x3 020600 0 0 5:5
EXP
)" ] || { printf 'got:\n%s\n' "$output" >&2; false; }
	assert_fsck_clean "$T/e1.img"
}

@test "device table: e3cp's /dev is genext2fs' /dev, entry for entry" {
	require_cmd genext2fs
	write_table "$T/t2"
	run genext2fs -b 1024 -N 64 -D "$T/t2" "$T/g2.img"
	assert_status 0
	run e3cp_table "$T/t2" "$T/e2.img"
	assert_status 0
	gen=$(dev_summary "$T/g2.img")
	ours=$(dev_summary "$T/e2.img")
	[ -n "$gen" ]
	if [ "$gen" != "$ours" ]; then
		diff <(echo "$gen") <(echo "$ours") >&2
		false
	fi
	assert_fsck_clean "$T/e2.img"
}

@test "device table, one line at a time: each agrees with genext2fs" {
	require_cmd genext2fs
	local line n=0 gen ours
	# each line alone, so that a line whose entries nothing else checks
	# still shows which of them differs
	while read -r line; do
		n=$((n + 1))
		printf '/dev d 755 0 0 - - - - -\n%s\n' "$line" > "$T/l$n"
		genext2fs -b 1024 -N 64 -D "$T/l$n" "$T/gl$n.img"
		e3cp_table "$T/l$n" "$T/el$n.img"
		gen=$(dev_summary "$T/gl$n.img")
		ours=$(dev_summary "$T/el$n.img")
		if [ "$gen" != "$ours" ]; then
			echo "line: $line" >&2
			diff <(echo "$gen") <(echo "$ours") >&2
			false
		fi
	done <<'LINES'
/dev/a c 600 0 0 5 0 1 2 4
/dev/b b 640 0 6 3 1 0 1 3
/dev/c c 600 0 0 4 10 2 3 5
/dev/d b 600 0 0 8 0 5 7 8
/dev/e c 600 0 0 1 3 0 4 1
/dev/f b 600 0 0 2 200 9 1 10
/dev/g c 600 0 0 6 50 3 0 5
/dev/h b 600 0 0 8 16 3 1 1
LINES
	assert_fsck_clean "$T/el1.img"
}

@test "device table numbers past 8 bits are kept whole (genext2fs would keep the low byte)" {
	cat > "$T/t4" <<'DT'
/dev d 755 0 0 - - - - -
/dev/big c 600 0 0 300 260 0 1 2
/dev/wide b 600 0 0 259 70000 1 1000 2
DT
	run e3cp_table "$T/t4" "$T/e4.img"
	assert_status 0
	run dev_summary "$T/e4.img"
	[ "$output" = "$(printf '%s\n' 'big0 020600 0 0 300:260' 'big1 020600 0 0 300:261' 'wide1 060600 0 0 259:70999')" ] ||
		{ printf 'got:\n%s\n' "$output" >&2; false; }
	assert_fsck_clean "$T/e4.img"
}

@test "device table line whose minor would go below 0 or past 20 bits is refused, naming the line, and makes nothing" {
	# inc 0 with start above minor: 1 + i*0 - 2
	printf '/dev d 755 0 0 - - - - -\n/dev/neg c 600 0 0 5 1 2 0 4\n' > "$T/t5"
	run e3cp_table "$T/t5" "$T/e5.img"
	assert_status 8
	assert_output_has "line 2: bad device table line"
	run debugfs -R "ls /dev" "$T/e5.img"
	[[ "$output" != *neg* ]]
	assert_fsck_clean "$T/e5.img"
	# the last entry's minor is past 20 bits, the first's is not
	printf '/dev/far c 600 0 0 5 1048570 0 3 4\n' > "$T/t6"
	run e3cp_table "$T/t6" "$T/e6.img"
	assert_status 8
	assert_output_has "line 1: bad device table line"
	run debugfs -R "ls /" "$T/e6.img"
	[[ "$output" != *far* ]]
	# i * inc past 63 bits must not wrap into range
	printf '/q c 600 0 0 1 0 0 4294967295 4294967295\n' > "$T/t9"
	run e3cp_table "$T/t9" "$T/e9.img"
	assert_status 8
	assert_output_has "line 1: bad device table line"
	# a major past 12 bits
	printf '/m c 600 0 0 4096 0 - - -\n' > "$T/t7"
	run e3cp_table "$T/t7" "$T/e7.img"
	assert_status 8
	assert_output_has "line 1: bad device table line"
	assert_fsck_clean "$T/e7.img"
}

@test "a bad device table line or a missing table stops e3cp before anything is written: the image is untouched" {
	mkdir -p "$T/src8"; echo data > "$T/src8/file"
	newimg "$T/e8.img"
	cp "$T/e8.img" "$T/e8-before.img"
	# good lines first, then a bad one: nothing of the sources or the
	# good lines may land either
	printf '/dev d 755 0 0 - - - - -\n/dev/ok c 600 0 0 1 3 - - -\n/dev/bad c 600 0 0 1\n' > "$T/t8"
	run e3cp -D "$T/t8" "$T/src8" "$T/e8.img"
	assert_status 8
	assert_output_has "e3cp: $T/t8: line 3: bad device table line"
	cmp "$T/e8.img" "$T/e8-before.img"
	run e3cp -D "$T/no-such-table" "$T/src8" "$T/e8.img"
	assert_status 8
	assert_output_has "e3cp: $T/no-such-table: No such file or directory"
	cmp "$T/e8.img" "$T/e8-before.img"
}
