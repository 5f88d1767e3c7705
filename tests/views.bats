#!/usr/bin/env bats
# views.bats: the inspection layer's views in the tools —
#  - e3debugfs `runs FILE`: the runs of every fragmented file agree with
#    e3fsck --layout --json (one implementation, lib/inspect), each run
#    says why it ends, and a contiguous file is one run;
#  - e3debugfs `map FILE.svg` and e3defrag --map-before/--map-after: the
#    picture renders (rsvg-convert) to a non-empty PNG, its legend's free
#    blocks equal the superblock's, fragmented file data is there before
#    e3defrag and gone after;
#  - bad input: a missing file, a map path that cannot be written, -n with
#    --map-after.

load helper

setup() {
	T=$(mktemp -d /tmp/views-bats-XXXXXX)
}

teardown() {
	rm -rf "$T"
}

# frag IMG: small files, every other one removed, big files written into
# the holes by one --alloc=none writer (so the big ones are in pieces)
frag() {
	local img=$1 i
	mkdir -p "$T/src/small" "$T/src/big"
	for i in $(seq 1 120); do
		head -c $(( (i * 7919) % 12000 + 3000 )) /dev/urandom > "$T/src/small/s$i"
	done
	for i in 1 2 3; do head -c $(( 200000 * i )) /dev/urandom > "$T/src/big/b$i"; done
	e3mkfs -q -F -b 1024 "$img" 16M || return 1
	e3cp --quiet -j1 "$T/src/small" "$img:/" || return 1
	for i in $(seq 1 2 120); do echo "rm /s$i"; done > "$T/rm.cmds"
	debugfs -w -f "$T/rm.cmds" "$img" >/dev/null 2>&1 || return 1
	e3cp --quiet -j1 --alloc=none "$T/src/big" "$img:/" || return 1
}

# legend SVG CLASS: the block count the picture's legend gives CLASS
legend() {
	sed -n "s|.*>$2: \([0-9]*\) blocks<.*|\1|p" "$1"
}

renders() {
	rsvg-convert -o "$1.png" "$1" || return 1
	[ -s "$1.png" ] || { echo "$1: empty PNG" >&2; return 1; }
	[ "$(head -c 4 "$1.png" | od -An -tx1 | tr -d ' ')" = 89504e47 ] ||
		{ echo "$1: not a PNG" >&2; return 1; }
}

@test "e3debugfs runs: every fragmented file's runs, groups and excess match e3fsck --layout --json" {
	frag "$T/f.img"
	run e3fsck -n --layout --json "$T/f.img"
	assert_status 0
	printf '%s\n' "$output" > "$T/layout.json"
	python3 - "$T/layout.json" > "$T/worst" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for f in d["layout"]["worst_runs"]:
    print(f["path"], f["runs"], f["groups"], f["excess_runs"])
PY
	[ -s "$T/worst" ] || { echo "no fragmented file to compare" >&2; false; }
	while read -r path runs groups excess; do
		run e3debugfs -R "runs $path" "$T/f.img"
		assert_status 0
		assert_output_has "blocks in $runs runs over $groups groups: $excess excess; e2fsck: non-contiguous"
		# one row per run, numbered, and the last one ends the file
		[ "$(grep -cE '^ +[0-9]+ ' <<<"$output")" -eq "$runs" ] ||
			{ echo "$path: row count is not $runs" >&2; false; }
		[[ "$(grep -E '^ +[0-9]+ ' <<<"$output" | tail -1)" == *"end of file" ]]
	done < "$T/worst"
}

@test "e3debugfs runs: a contiguous file is one run; a break names its cause; a missing file fails" {
	frag "$T/f.img"
	run e3debugfs -R "runs /s2" "$T/f.img"
	assert_status 0
	assert_output_has "in 1 runs over 1 groups: 0 excess; e2fsck: contiguous"
	run e3debugfs -R "runs /b3" "$T/f.img"
	assert_status 0
	[[ "$output" == *"next block in use (another file or the journal)"* ||
	   "$output" == *"next block is group metadata"* ]]
	run e3debugfs -R "runs /nonesuch" "$T/f.img"
	assert_status 1
}

@test "e3debugfs map: the picture renders, its free blocks are the superblock's, fragmented data is shown" {
	frag "$T/f.img"
	run e3debugfs -R "map $T/m.svg" "$T/f.img"
	assert_status 0
	renders "$T/m.svg"
	free=$(dumpe2fs -h "$T/f.img" 2>/dev/null | awk -F: '/^Free blocks/ {print $2+0}')
	[ "$(legend "$T/m.svg" free)" -eq "$free" ]
	assert_output_has "free: $free blocks"
	[ "$(legend "$T/m.svg" 'file data, fragmented')" -gt 0 ]
	run e3debugfs -R "map /nonexistent-dir/m.svg" "$T/f.img"
	assert_status 1
	assert_output_has "/nonexistent-dir/m.svg"
}

@test "e3defrag --map-before/--map-after: both render; the fragmented data is gone after" {
	frag "$T/f.img"
	run e3defrag --quiet --map-before "$T/b.svg" --map-after "$T/a.svg" "$T/f.img"
	assert_status 0
	renders "$T/b.svg"
	renders "$T/a.svg"
	[ "$(legend "$T/b.svg" 'file data, fragmented')" -gt 0 ]
	[ "$(legend "$T/a.svg" 'file data, fragmented')" -eq 0 ]
	free=$(dumpe2fs -h "$T/f.img" 2>/dev/null | awk -F: '/^Free blocks/ {print $2+0}')
	[ "$(legend "$T/a.svg" free)" -eq "$free" ]
	assert_fsck_clean "$T/f.img"
}

@test "e3defrag: -n with --map-after is a usage error; an unwritable map path is refused before anything moves" {
	frag "$T/f.img"
	run e3defrag -n --map-after "$T/a.svg" "$T/f.img"
	assert_status 16
	sum=$(sha256sum < "$T/f.img")
	run e3defrag --map-before /nonexistent-dir/b.svg "$T/f.img"
	assert_status 8
	assert_output_has "/nonexistent-dir/b.svg"
	[ "$(sha256sum < "$T/f.img")" = "$sum" ]
	run e3defrag -n --map-before "$T/b.svg" "$T/f.img"
	assert_status 0
	renders "$T/b.svg"
}
