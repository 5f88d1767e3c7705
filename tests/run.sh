#!/usr/bin/env bash
# tests/run.sh: the whole suite — every C unit test, then every bats file.
# Prints each test's TAP line, then one summary line "N passed, N failed,
# N skipped", and exits non-zero if anything failed.
# Usage: tests/run.sh [FILTER...]   (only unit tests / bats files whose
# name contains one of the FILTERs; "unit/" picks every unit test)
set -u
cd "$(dirname "$0")/.." || exit 2
# e2fsprogs' mke2fs, e2fsck and debugfs live in /sbin and /usr/sbin, which
# an ordinary Debian user's PATH lacks
case ":$PATH:" in *:/usr/sbin:*) ;; *) PATH=$PATH:/usr/sbin ;; esac
case ":$PATH:" in *:/sbin:*) ;; *) PATH=$PATH:/sbin ;; esac
export PATH
filters=("$@")
# wanted NAME: NAME is picked by the FILTERs (all are when none is given)
wanted() {
	local f
	[ ${#filters[@]} -eq 0 ] && return 0
	for f in "${filters[@]}"; do
		[[ "$1" == *"$f"* ]] && return 0
	done
	return 1
}
passed=0 failed=0 skipped=0
failures=()

count_tap() {	# name < tap-output
	local name=$1 line
	while IFS= read -r line; do
		printf '%s\n' "$line"
		case "$line" in
		"ok "*"# skip"*|"ok "*"# SKIP"*) skipped=$((skipped + 1)) ;;
		"ok "*) passed=$((passed + 1)) ;;
		"not ok "*) failed=$((failed + 1)); failures+=("$name: ${line#not ok }") ;;
		esac
	done
}

for t in tests/unit/test_*; do
	case "$t" in *.c|*.o) continue ;; esac
	[ -x "$t" ] || continue
	wanted "$t" || continue
	echo "# unit: $t"
	# a binary older than its source is not the test being asked for
	# (a failed or skipped build would pass with the old one)
	if [ -e "$t.c" ] && [ "$t.c" -nt "$t" ]; then
		failed=$((failed + 1)); failures+=("$t: older than $t.c (make units)")
		echo "not ok - $t is older than $t.c: run make units"
		continue
	fi
	out=$("$t" 2>&1); rc=$?
	count_tap "$t" <<<"$out"
	if [ $rc -ne 0 ] && ! grep -q '^not ok' <<<"$out"; then
		failed=$((failed + 1)); failures+=("$t: exited $rc")
		echo "not ok - $t exited with status $rc"
	fi
done

# The unit tests again under AddressSanitizer + UBSan, built in a copy of
# the tree (unless this tree is already sanitized, or E3_ASAN=0). Runs in a
# subshell: it only prints TAP lines, which the caller counts.
asan_units() {
	local d rc
	if [ "${E3_ASAN:-1}" = 0 ]; then
		echo "ok - asan unit tests # skip E3_ASAN=0"; return
	fi
	if ls tests/unit/test_* >/dev/null 2>&1 &&
	   ldd "$(ls tests/unit/test_* | grep -v '\.[co]$' | head -1)" 2>/dev/null | grep -q libasan; then
		echo "ok - asan unit tests # skip this tree is already sanitized"; return
	fi
	d=$(mktemp -d /tmp/e3img-asan.XXXXXX)
	git ls-files -z 2>/dev/null | xargs -0 cp --parents -t "$d" 2>/dev/null ||
		cp -r . "$d"
	if ! (cd "$d" && autoconf -f && ./configure -q --enable-asan &&
	      make -j"$(nproc)" units) >"$d/build.log" 2>&1; then
		echo "not ok - asan build of the unit tests"
		tail -5 "$d/build.log" | sed 's/^/#   /'
		rm -rf "$d"; return
	fi
	for t in "$d"/tests/unit/test_*; do
		case "$t" in *.c|*.o) continue ;; esac
		wanted "$t" || continue
		echo "# unit (asan): ${t#$d/}"
		out=$(cd "$d" && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1 \
		      "$t" 2>&1); rc=$?
		out=$(sed 's/^\(not \)\{0,1\}ok [0-9]* - /&asan: /' <<<"$out")
		printf '%s\n' "$out"
		if [ $rc -ne 0 ] && ! grep -q '^not ok' <<<"$out"; then
			echo "not ok - asan ${t#$d/} exited with status $rc"
			tail -20 <<<"$out" | sed 's/^/#   /'
		fi
	done
	rm -rf "$d"
}
echo "# unit tests under sanitizers"
asan_units_out=$(asan_units)
count_tap "asan" <<<"$asan_units_out"

for b in tests/*.bats; do
	[ -e "$b" ] || continue
	wanted "$b" || continue
	echo "# bats: $b"
	out=$(bats --tap "$b" 2>&1); rc=$?
	count_tap "$b" <<<"$out"
	if [ $rc -ne 0 ] && ! grep -q '^not ok' <<<"$out"; then
		failed=$((failed + 1)); failures+=("$b: bats exited $rc")
	fi
done

if [ ${#failures[@]} -gt 0 ]; then
	echo "# failures:"
	printf '#   %s\n' "${failures[@]}"
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
