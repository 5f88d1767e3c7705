#!/usr/bin/env bash
# bench/mutate.sh: can the suite see a tool that does nothing? Each tool
# (misc/e3mkfs, misc/e3cp, misc/e3fsck) in turn is replaced, in a copy of
# this built tree, by a script that does `exit 0`, and the bats files run
# against that copy. Per file: how many tests still pass ("survivors").
# Every survivor needs a reason (a test of another tool, or of the library
# through bench/ drivers, is fine): reasons live in
# bench/results/mutation-survivors.txt, one per line, tab-separated:
#   TOOL  FILE  TEST NAME  REASON   for one test, or
#   TOOL  FILE  *          REASON   for every test of FILE whose body
#                                   (and the file's helpers it names) never
#                                   names TOOL — checked here, so a '*'
#                                   reason cannot cover a test that runs it.
# A survivor without a reason is listed as UNEXPLAINED; the script exits 1.
# Writes bench/results/mutation.md. Slow (three runs of the bats files,
# ~20 min on 2 cores); not part of CI.
#   bench/mutate.sh [BATS-FILE-PART...]   (default: every tests/*.bats)
#   bench/mutate.sh --reasons             (only re-read the reasons into
#                                         the survivors of the last run)
set -u
cd "$(dirname "$0")/.." || exit 2
top=$PWD
case ":$PATH:" in *:/usr/sbin:*) ;; *) PATH=$PATH:/usr/sbin:/sbin ;; esac
export PATH
tools=(e3mkfs e3cp e3fsck)
reasons=$top/bench/results/mutation-survivors.txt
out=$top/bench/results/mutation.md

# mentions FILE NAME TOOL: the body of test NAME in FILE, or a function of
# FILE that body calls, names TOOL
mentions() {
	awk -v name="$2" -v tool="$3" '
		# the file'"'"'s functions: name -> body
		/^[a-z_][a-z0-9_]*\(\) *\{/ { fn = $1; sub(/\(\).*/, "", fn); infn = 1; body[fn] = "" }
		infn { body[fn] = body[fn] "\n" $0; if ($0 ~ /^}/ || $0 ~ /^[a-z_][a-z0-9_]*\(\).*\}$/) infn = 0 }
		index($0, "@test \"" name "\"") == 1 { intest = 1; next }	# not the title
		intest { t = t "\n" $0; if ($0 ~ /^}/) intest = 0 }
		END {
			hit = index(t, tool) > 0
			for (f in body) if (index(t, f) && index(body[f], tool)) hit = 1
			exit !hit
		}' "$1"
}

# survivors_table: the survivors (TOOL<TAB>FILE<TAB>TEST) with their
# reasons, as a Markdown table; counts the unexplained
unexplained=0
survivors_table() {
	local s t f name why
	echo "## Survivors and why they may survive"
	echo
	echo "| tool | file | test | why it passes without the tool |"
	echo "| --- | --- | --- | --- |"
	for s in "${survivors[@]}"; do
		IFS=$'\t' read -r t f name <<<"$s"
		why=$(awk -F'\t' -v t="$t" -v f="$f" -v n="$name" \
			'$1 == t && $2 == f && $3 == n { print $4; exit }' "$reasons" 2>/dev/null)
		if [ -z "$why" ] && ! mentions "tests/$f" "$name" "$t"; then
			why=$(awk -F'\t' -v t="$t" -v f="$f" \
				'$1 == t && $2 == f && $3 == "*" { print $4; exit }' "$reasons" 2>/dev/null)
		fi
		if [ -z "$why" ]; then
			why="**UNEXPLAINED**"
			unexplained=$((unexplained + 1))
		fi
		printf '| %s | %s | %s | %s |\n' "$t" "$f" "${name//|/\\|}" "$why"
	done
}

survivors=()
if [ "${1:-}" = --reasons ]; then
	[ -f "$out" ] || { echo "mutate.sh: no $out to re-read" >&2; exit 2; }
	while IFS= read -r line; do
		line=${line//\\|/$'\001'}
		IFS='|' read -r _ t f name _ <<<"$line"
		t=$(xargs <<<"$t") f=$(xargs <<<"$f")
		name=${name# }; name=${name% }; name=${name//$'\001'/|}
		survivors+=("$t"$'\t'"$f"$'\t'"$name")
	done < <(sed -n '/^## Survivors/,$p' "$out" | grep -E '^\| e3(mkfs|cp|fsck) \|')
	{ sed '/^## Survivors/,$d' "$out"; survivors_table; } > "$out.new" && mv "$out.new" "$out"
	echo "mutate.sh: reasons re-read into ${out#$top/}; ${#survivors[@]} survivors, $unexplained unexplained" >&2
	[ "$unexplained" -eq 0 ]
	exit
fi

for t in "${tools[@]}"; do
	[ -x "misc/$t" ] || { echo "mutate.sh: misc/$t not built (run make)" >&2; exit 2; }
done
files=()
for b in tests/*.bats; do
	if [ $# -eq 0 ]; then files+=("$b"); continue; fi
	for f in "$@"; do [[ "$b" == *"$f"* ]] && { files+=("$b"); break; }; done
done

work=$(mktemp -d /tmp/e3-mutate.XXXXXX)
trap 'rm -rf "$work"' EXIT
declare -A total pass
for t in "${tools[@]}"; do
	d=$work/$t
	mkdir -p "$d"
	tar -C "$top" --exclude=.git -cf - . | tar -C "$d" -xf -
	printf '#!/bin/sh\nexit 0\n' > "$d/misc/$t"
	chmod 755 "$d/misc/$t"
	for b in "${files[@]}"; do
		echo "mutate.sh: $t -> exit 0: $b" >&2
		tap=$(cd "$d" && bats --tap "$b" 2>/dev/null)
		total[$b]=$(grep -cE '^(not )?ok ' <<<"$tap")
		n=0
		while IFS= read -r line; do
			case "$line" in
			"ok "*"# skip"*) ;;
			"ok "*)
				n=$((n + 1))
				name=$(sed -E 's/^ok [0-9]+ //' <<<"$line")
				survivors+=("$t"$'\t'"${b#tests/}"$'\t'"$name")
				;;
			esac
		done <<<"$tap"
		pass[$t,$b]=$n
	done
	rm -rf "$d"
done

{
	echo "# Mutation check: each tool replaced by \`exit 0\`"
	echo
	echo "\`bench/mutate.sh\` at $(git rev-parse --short HEAD 2>/dev/null)$(git diff --quiet 2>/dev/null || echo '+changes'), $(date -u +%Y-%m-%d): in a copy of the"
	echo "built tree one tool at a time is a script that does \`exit 0\`, and the bats files run"
	echo "against it. A test that still passes is a survivor; each one has its reason below"
	echo "(from \`bench/results/mutation-survivors.txt\`). Skipped tests are not counted as passing."
	echo
	printf '| file | tests |'; for t in "${tools[@]}"; do printf ' pass with %s = exit 0 |' "$t"; done; echo
	printf '| --- | ---: |'; for t in "${tools[@]}"; do printf ' ---: |'; done; echo
	for b in "${files[@]}"; do
		printf '| %s | %s |' "${b#tests/}" "${total[$b]}"
		for t in "${tools[@]}"; do printf ' %s |' "${pass[$t,$b]}"; done
		echo
	done
	echo
	survivors_table
} > "$out"
echo "mutate.sh: wrote ${out#$top/}; ${#survivors[@]} survivors, $unexplained unexplained" >&2
[ "$unexplained" -eq 0 ]
