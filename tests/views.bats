#!/usr/bin/env bats
# views.bats: the inspection layer's views in the tools —
#  - e3debugfs `runs FILE`: the runs of every fragmented file agree with
#    e3fsck --layout --json (one implementation, lib/inspect), each run
#    says why it ends, and a contiguous file is one run;
#  - e3debugfs `map FILE.svg` and e3defrag --map-before/--map-after: the
#    picture renders (rsvg-convert) to a non-empty PNG, its legend's free
#    blocks equal the superblock's, fragmented file data is there before
#    e3defrag and gone after;
#  - e3debugfs `groups`, `freemap`, `owner`: against dumpe2fs (per-group
#    counts, Free blocks ranges) and debugfs icheck/ncheck; `frag`
#    against e3fsck --layout --json (totals, worst files); `map --text`
#    has a line per group and the SVG's legend, `map -o` is `map FILE`;
#  - map -o FILE.png and e3defrag --map-* FILE.png: a valid PNG
#    (tests/pngcells.py: signature, CRCs, IHDR) with a band per group and
#    the text picture's cells;
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

# dumpe2fs_groups IMG: "GROUP FREE_BLOCKS FREE_INODES DIRS LARGEST" per
# group, from dumpe2fs' descriptor line and its "Free blocks:" ranges
dumpe2fs_groups() {
	dumpe2fs "$1" 2>/dev/null | python3 -c '
import re, sys
g = None
for line in sys.stdin:
    m = re.match(r"Group (\d+):", line)
    if m:
        g = m.group(1)
    m = re.match(r"\s+(\d+) free blocks, (\d+) free inodes, (\d+) directories", line)
    if m and g is not None:
        counts = m.groups()
    m = re.match(r"\s+Free blocks: ?(.*)", line)
    if m and g is not None:
        big = 0
        for r in filter(None, (x.strip() for x in m.group(1).split(","))):
            a, _, b = r.partition("-")
            big = max(big, int(b or a) - int(a) + 1)
        print(g, *counts, big)
' || return 1
}

# dumpe2fs_free IMG GROUP: that group's free extents as "START LENGTH"
dumpe2fs_free() {
	dumpe2fs "$1" 2>/dev/null | python3 -c '
import re, sys
g = None
for line in sys.stdin:
    m = re.match(r"Group (\d+):", line)
    if m:
        g = int(m.group(1))
    m = re.match(r"\s+Free blocks: ?(.*)", line)
    if m and g == int(sys.argv[1]):
        for r in filter(None, (x.strip() for x in m.group(1).split(","))):
            a, _, b = r.partition("-")
            print(a, int(b or a) - int(a) + 1)
' "$2" || return 1
}

@test "e3debugfs groups: each group's counts and largest free extent are dumpe2fs'; totals add up" {
	frag "$T/f.img"
	dumpe2fs_groups "$T/f.img" > "$T/want"
	[ "$(wc -l < "$T/want")" -ge 2 ]
	run e3debugfs -R groups "$T/f.img"
	assert_status 0
	awk '$1 ~ /^[0-9]+$/ {print $1, $3, $4, $5, $6}' <<<"$output" > "$T/got"
	diff -u "$T/want" "$T/got"
	free=$(dumpe2fs -h "$T/f.img" 2>/dev/null | awk -F: '/^Free blocks/ {print $2+0}')
	inos=$(dumpe2fs -h "$T/f.img" 2>/dev/null | awk -F: '/^Free inodes/ {print $2+0}')
	assert_output_has "total: $(wc -l < "$T/want") groups, $free free blocks, $inos free inodes"
	run e3debugfs -R "groups 0" "$T/f.img"
	assert_status 1
	assert_output_has "usage: groups"
}

@test "e3debugfs freemap: every group's free extents are dumpe2fs' Free blocks ranges" {
	frag "$T/f.img"
	ngroups=$(dumpe2fs_groups "$T/f.img" | wc -l)
	total=0
	for g in $(seq 0 $((ngroups - 1))); do
		dumpe2fs_free "$T/f.img" "$g" > "$T/want"
		run e3debugfs -R "freemap $g" "$T/f.img"
		assert_status 0
		awk 'NF == 2 && $1 ~ /^[0-9]+$/ {print $1, $2}' <<<"$output" > "$T/got"
		diff -u "$T/want" "$T/got"
		n=$(wc -l < "$T/want")
		blocks=$(awk '{s += $2} END {print s + 0}' "$T/want")
		assert_output_has "$n free extents, $blocks free blocks"
		total=$((total + blocks))
	done
	# a fragmented image has several
	[ "$(dumpe2fs_free "$T/f.img" 0 | wc -l)" -gt 1 ]
	run e3debugfs -R freemap "$T/f.img"
	assert_status 0
	assert_output_has "free extents, $total free blocks"
	[ "$(grep -c '^group ' <<<"$output")" -eq "$ngroups" ]
	run e3debugfs -R "freemap $ngroups" "$T/f.img"
	assert_status 1
	run e3debugfs -R "freemap x" "$T/f.img"
	assert_status 1
	run e3debugfs -R "freemap 0 1" "$T/f.img"
	assert_status 1
}

@test "e3debugfs owner: file blocks name icheck's inode and ncheck's path; metadata and free blocks are named" {
	frag "$T/f.img"
	# data blocks of a fragmented file and an indirect block of it
	run debugfs -R "stat /b3" "$T/f.img"
	assert_status 0
	ind=$(sed -n 's/.*(IND):\([0-9]*\).*/\1/p' <<<"$output" | head -1)
	blk=$(debugfs -R "bmap /b3 0" "$T/f.img" 2>/dev/null)
	[ -n "$ind" ] && [ -n "$blk" ]
	ino=$(debugfs -R "icheck $blk" "$T/f.img" 2>/dev/null | awk -v b="$blk" '$1 == b {print $2}')
	path=$(debugfs -R "ncheck $ino" "$T/f.img" 2>/dev/null | awk -v i="$ino" '$1 == i {print $2}' | tr -s /)
	[ "$path" = /b3 ] || { echo "blk=$blk ino=$ino path=$path" >&2; false; }
	bb1=$(dumpe2fs "$T/f.img" 2>/dev/null | sed -n '/^Group 1:/,$ s/.*Block bitmap at \([0-9]*\).*/\1/p' | head -1)
	it1=$(dumpe2fs "$T/f.img" 2>/dev/null | sed -n '/^Group 1:/,$ s/.*Inode table at \([0-9]*\)-.*/\1/p' | head -1)
	freeb=$(dumpe2fs_free "$T/f.img" 1 | awk 'NR == 1 {print $1}')
	run e3debugfs -R "owner $blk $ind 1 $bb1 $it1 $freeb" "$T/f.img"
	assert_status 0
	assert_output_has "$blk: inode $ino $path (data block, logical 0)"
	assert_output_has "$ind: inode $ino $path (indirect block IND)"
	assert_output_has "1: superblock of group 0"
	assert_output_has "$bb1: block bitmap of group 1"
	ipg=$(dumpe2fs -h "$T/f.img" 2>/dev/null | awk -F: '/^Inodes per group/ {print $2+0}')
	assert_output_has "$it1: inode table of group 1 (block 0, inodes $((ipg + 1))-"
	assert_output_has "$freeb: free"
	jino=$(dumpe2fs -h "$T/f.img" 2>/dev/null | awk -F: '/^Journal inode/ {print $2+0}')
	jblk=$(debugfs -R "bmap <$jino> 0" "$T/f.img" 2>/dev/null)
	run e3debugfs -R "owner $jblk" "$T/f.img"
	assert_status 0
	assert_output_has "$jblk: journal (inode $jino, data block, logical 0)"
	run e3debugfs -R "owner" "$T/f.img"
	assert_status 1
	run e3debugfs -R "owner 99999999" "$T/f.img"
	assert_status 1
	run e3debugfs -R "owner zz" "$T/f.img"
	assert_status 1
}

# many_frag IMG: small groups, small files with every other one removed,
# then four big files written into the holes by debugfs (several files
# with excess runs, as tests/unit/test_inspect.c makes them)
many_frag() {
	local img=$1 i
	head -c 614400 /dev/urandom > "$T/big.dat"
	head -c 3072 "$T/big.dat" > "$T/small.dat"
	mke2fs -q -F -t ext3 -b 1024 -g 1024 -N 2048 "$img" 8M >/dev/null || return 1
	{
		for i in $(seq 0 299); do echo "write $T/small.dat s$i"; done
		for i in $(seq 0 2 299); do echo "rm s$i"; done
		for i in 0 1 2 3; do echo "write $T/big.dat big$i"; done
	} > "$T/many.cmds"
	debugfs -w -f "$T/many.cmds" "$img" >/dev/null 2>&1 || return 1
}

@test "e3debugfs frag: totals and worst files equal e3fsck --layout --json's; -n and DIR; bad arguments fail" {
	frag "$T/f.img"
	run e3fsck -n --layout --json "$T/f.img"
	assert_status 0
	printf '%s\n' "$output" > "$T/layout.json"
	run e3debugfs -R "frag -n 1000" "$T/f.img"
	assert_status 0
	printf '%s\n' "$output" > "$T/frag.out"
	python3 - "$T/layout.json" "$T/frag.out" <<'PY' || return 1
import json, re, sys
l = json.load(open(sys.argv[1]))["layout"]
out = open(sys.argv[2]).read().splitlines()
want = ("files with blocks: %d, total runs: %d, excess runs: %d, "
        "non-contiguous: %d files, %d directories" % (
        l["files_with_blocks"], l["total_runs"], l["total_excess_runs"],
        l["noncontig_files"], l["noncontig_dirs"]))
assert out[-1] == want, (out[-1], want)
rows = [r.split() for r in out[1:-1]]
assert rows, "no fragmented file listed"
got = {int(r[4]): (int(r[1]), int(r[2]), int(r[0])) for r in rows}
assert int(rows[0][0]) == l["max_excess_runs"], rows[0]
for f in l["worst_runs"] + l["worst_excess_runs"]:
    assert got.get(f["ino"]) == (f["runs"], f["groups"], f["excess_runs"]), f
    path = [r[5] for r in rows if int(r[4]) == f["ino"]][0]
    assert path == f["path"], (path, f["path"])
# sorted: excess, then runs, descending
keys = [(int(r[0]), int(r[1])) for r in rows]
assert keys == sorted(keys, reverse=True), keys
PY
	run e3debugfs -R "frag -n 0" "$T/f.img"
	assert_status 0
	[ "$(grep -cE "^ +[0-9]+ " <<<"$output")" -eq 0 ] || { echo "$output" >&2; false; }
	# DIR: the worst file under / is the whole filesystem's worst
	top=$(sed -n 2p "$T/frag.out")
	run e3debugfs -R "frag -n 1 /" "$T/f.img"
	assert_status 0
	[ "$(sed -n 2p <<<"$output")" = "$top" ]
	run e3debugfs -R "frag -n x" "$T/f.img"
	assert_status 1
	run e3debugfs -R "frag /nonesuch" "$T/f.img"
	assert_status 1
	run e3debugfs -R "frag /s2" "$T/f.img"
	assert_status 1
	run e3debugfs -R "frag / /" "$T/f.img"
	assert_status 1
}

@test "e3debugfs map --text: a line per group, the SVG's counts; -o FILE is map FILE; bad arguments fail" {
	frag "$T/f.img"
	run e3debugfs -R "map $T/a.svg" "$T/f.img"
	assert_status 0
	run e3debugfs -R "map -o $T/b.svg" "$T/f.img"
	assert_status 0
	cmp "$T/a.svg" "$T/b.svg"
	renders "$T/b.svg"
	run e3debugfs -R "map --text" "$T/f.img"
	assert_status 0
	printf '%s\n' "$output" > "$T/map.txt"
	groups=$(dumpe2fs -h "$T/f.img" 2>/dev/null | awk -F: '/^Block count/ {b = $2} /^Blocks per group/ {p = $2} /^First block/ {f = $2} END {print int((b - f + p - 1) / p)}')
	bands=$(grep -cE '^ +[0-9]+ [.MJDfXo ]{256}$' "$T/map.txt")
	[ "$bands" -eq "$groups" ] || { echo "bands $bands, groups $groups" >&2; false; }
	# the legend is the SVG's, class by class
	for c in free 'group metadata' journal directories 'file data, contiguous' 'file data, fragmented' 'other used'; do
		n=$(sed -n "s|^. $c: \([0-9]*\) blocks$|\1|p" "$T/map.txt")
		[ "$n" = "$(legend "$T/a.svg" "$c")" ] || { echo "$c: text $n" >&2; false; }
	done
	free=$(dumpe2fs -h "$T/f.img" 2>/dev/null | awk -F: '/^Free blocks/ {print $2+0}')
	assert_output_has ". free: $free blocks"
	# fragmented data is drawn, and there is free space and metadata
	grep -E '^ +[0-9]+ ' "$T/map.txt" | grep -q X
	grep -E '^ +[0-9]+ ' "$T/map.txt" | grep -q M
	run e3debugfs -R "map --text -o $T/c.svg" "$T/f.img"
	assert_status 0
	cmp "$T/a.svg" "$T/c.svg"
	run e3debugfs -R "map" "$T/f.img"
	assert_status 1
	assert_output_has "usage: map"
	run e3debugfs -R "map -x" "$T/f.img"
	assert_status 1
	run e3debugfs -R "map a.svg b.svg" "$T/f.img"
	assert_status 1
	run e3debugfs -R "map -o" "$T/f.img"
	assert_status 1
}

@test "e3debugfs frag: with several fragmented files, the list and its order are e3fsck's worst_excess_runs" {
	many_frag "$T/m.img"
	run e3fsck -n --layout --json "$T/m.img"
	assert_status 0
	printf '%s\n' "$output" > "$T/layout.json"
	run e3debugfs -R "frag -n 1000" "$T/m.img"
	assert_status 0
	printf '%s\n' "$output" > "$T/frag.out"
	python3 - "$T/layout.json" "$T/frag.out" <<'PY' || return 1
import json, sys
l = json.load(open(sys.argv[1]))["layout"]
out = open(sys.argv[2]).read().splitlines()
assert out[-1].startswith("files with blocks: %d, total runs: %d, excess runs: %d," % (
    l["files_with_blocks"], l["total_runs"], l["total_excess_runs"])), out[-1]
rows = [r.split() for r in out[1:-1]]
excess = [r for r in rows if int(r[0]) > 0]
assert len(excess) == l["files_with_excess_runs"] >= 2, (len(excess), l["files_with_excess_runs"])
want = sorted(((f["excess_runs"], f["runs"]) for f in l["worst_excess_runs"]), reverse=True)
got = [(int(r[0]), int(r[1])) for r in excess[:len(want)]]
assert got == want, (got, want)
PY
}

# png_cells PNG: the PNG's cell grid as map --text draws it (and a check
# of its signature, chunk CRCs and IHDR: tests/pngcells.py)
png_cells() {
	python3 "$E3_TOP/tests/pngcells.py" "$1"
}

@test "e3debugfs map -o FILE.png: a valid PNG, a band per group, the same cells as the text and SVG pictures" {
	frag "$T/f.img"
	run e3debugfs -R "map -o $T/m.png" -R "map $T/m.svg" -R "map --text" "$T/f.img"
	assert_status 0
	png_cells "$T/m.png" >"$T/png.txt"
	groups=$(dumpe2fs -h "$T/f.img" 2>/dev/null | awk -F: '/^Block count/ {b = $2} /^Blocks per group/ {p = $2} /^First block/ {f = $2} END {print int((b - f + p - 1) / p)}')
	[ "$(wc -l <"$T/png.txt")" -eq "$groups" ]
	grep -E '^ +[0-9]+ [.MJDfXo ]{256}$' <<<"$output" | cut -c8- >"$T/text.txt"
	diff "$T/text.txt" "$T/png.txt"
	grep -q X "$T/png.txt"
	# the legend counts are printed, as for the SVG; the SVG still renders
	assert_output_has "$T/m.png: $groups bands"
	renders "$T/m.svg"
	# the name decides the format
	run e3debugfs -R "map $T/M.PNG" "$T/f.img"
	assert_status 0
	cmp "$T/m.png" "$T/M.PNG"
	run e3debugfs -R "map -o /nonexistent-dir/m.png" "$T/f.img"
	assert_status 1
	assert_output_has "/nonexistent-dir/m.png"
}

@test "e3defrag --map-before/--map-after FILE.png: valid PNGs, fragmented data before and none after" {
	frag "$T/f.img"
	run e3defrag --quiet --map-before "$T/b.png" --map-after "$T/a.svg" "$T/f.img"
	assert_status 0
	png_cells "$T/b.png" >"$T/b.txt"
	grep -q X "$T/b.txt"
	renders "$T/a.svg"
	frag "$T/g.img"
	run e3defrag --quiet --map-after "$T/a.png" "$T/g.img"
	assert_status 0
	png_cells "$T/a.png" >"$T/a.txt"
	! grep -q X "$T/a.txt" || false
	# the after picture is the image's as left: the text picture of it
	run e3debugfs -R "map --text" "$T/g.img"
	grep -E '^ +[0-9]+ [.MJDfXo ]{256}$' <<<"$output" | cut -c8- | diff - "$T/a.txt"
	assert_fsck_clean "$T/g.img"
	run e3defrag --map-before /nonexistent-dir/b.png "$T/g.img"
	assert_status 8
}
