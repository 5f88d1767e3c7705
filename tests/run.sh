#!/usr/bin/env bash
# tests/run.sh: the whole suite — every C unit test, then every bats file.
# Prints each test's TAP line, then one summary line "N passed, N failed,
# N skipped", and exits non-zero if anything failed.
# Usage: tests/run.sh [FILTER]   (only unit tests / bats files whose name
# contains FILTER)
set -u
cd "$(dirname "$0")/.." || exit 2
filter=${1:-}
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
	[ -n "$filter" ] && [[ "$t" != *"$filter"* ]] && continue
	echo "# unit: $t"
	out=$("$t" 2>&1); rc=$?
	count_tap "$t" <<<"$out"
	if [ $rc -ne 0 ] && ! grep -q '^not ok' <<<"$out"; then
		failed=$((failed + 1)); failures+=("$t: exited $rc")
		echo "not ok - $t exited with status $rc"
	fi
done

for b in tests/*.bats; do
	[ -e "$b" ] || continue
	[ -n "$filter" ] && [[ "$b" != *"$filter"* ]] && continue
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
