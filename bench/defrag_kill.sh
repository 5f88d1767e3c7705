#!/usr/bin/env bash
# defrag_kill.sh: the kill campaign of issue 17 — e3defrag killed at
# random points, each time replayed and checked: e2fsck -fn clean and
# every file and inode as before (bench/manifest.py over a read-only
# kernel mount: contents, inode numbers, links, modes, owners, rdev,
# times to the ns, xattrs).
#
# Usage (root, from the top of a built tree):
#   bench/defrag_kill.sh [KILLS] [SIZE] [SEED]
#     KILLS  kills to reach (default 500); SIZE of the aged image (24M);
#     SEED   for the aging and the random points (1)
#   WORK=DIR scratch directory (default a new /tmp/defrag-kill-*)
#
# Each round takes a fresh copy of the aged image (bench/age.sh), picks
# E3_DEFRAG_COMMIT_EVERY from {policy, 1, 2, 5, 20} and one way to die:
#   2 in 3: E3_FAULT=kill:N, N uniform over the writes of a whole run
#           (counted once per commit setting by bisection);
#   1 in 3: SIGKILL after a uniform random time within a whole run's.
# Then a replay only (ours via e3fsck -p, or e2fsck -E journal_only -y,
# by turns), e2fsck -fn, the manifest. A run that finished before its
# kill is checked the same way but not counted as a kill.
# Prints one summary line; exit 0 when every check held. Failing images
# are kept in $WORK/fail-*.
set -u

here=$(cd "$(dirname "$0")" && pwd)
BIN=${E3BIN:-$here/../misc}
KILLS=${1:-500} SIZE=${2:-24M} SEED=${3:-1}
WORK=${WORK:-$(mktemp -d /tmp/defrag-kill-XXXXXX)}
export PATH="$BIN:$PATH"
[ "$(id -u)" -eq 0 ] || { echo "defrag_kill.sh: needs root (loop mounts)" >&2; exit 2; }
mkdir -p "$WORK/mnt"
RANDOM=$SEED

manifest() {	# IMG OUT
	mount -o loop,ro -t ext3 "$1" "$WORK/mnt" || return 1
	python3 "$here/manifest.py" "$WORK/mnt" > "$2"
	local rc=$?
	umount "$WORK/mnt"
	return $rc
}

bash "$here/age.sh" "$WORK/aged.img" "$SIZE" "$SEED" 80 > "$WORK/age.log" 2>&1 ||
	{ cat "$WORK/age.log" >&2; exit 2; }
manifest "$WORK/aged.img" "$WORK/m0" || exit 2
echo "aged: $(tail -1 "$WORK/age.log")"

# writes W[ce] and seconds T[ce] of a whole run for each commit setting
declare -A W T
settings=(0 1 2 5 20)
for ce in "${settings[@]}"; do
	cp --sparse=always "$WORK/aged.img" "$WORK/w"
	s=$(date +%s.%N)
	E3_DEFRAG_COMMIT_EVERY=$ce e3defrag -q "$WORK/w" >/dev/null 2>&1
	T[$ce]=$(echo "$(date +%s.%N) - $s" | bc)
	lo=1 hi=1
	while :; do	# doubling, then bisection: the first N that does not fire
		cp --sparse=always "$WORK/aged.img" "$WORK/w"
		E3_FAULT=kill:$hi E3_DEFRAG_COMMIT_EVERY=$ce e3defrag -q "$WORK/w" >/dev/null 2>&1
		[ $? -eq 137 ] || break
		lo=$hi; hi=$((hi * 2))
	done
	while [ $((hi - lo)) -gt 1 ]; do
		mid=$(((lo + hi) / 2))
		cp --sparse=always "$WORK/aged.img" "$WORK/w"
		E3_FAULT=kill:$mid E3_DEFRAG_COMMIT_EVERY=$ce e3defrag -q "$WORK/w" >/dev/null 2>&1
		if [ $? -eq 137 ]; then lo=$mid; else hi=$mid; fi
	done
	W[$ce]=$lo
	echo "commit every ${ce/#0/policy}: $lo writes, ${T[$ce]} s"
done

kills=0 rounds=0 finished=0 bad=0 fault_kills=0 timer_kills=0
while [ $kills -lt "$KILLS" ]; do
	rounds=$((rounds + 1))
	ce=${settings[$((RANDOM % ${#settings[@]}))]}
	cp --sparse=always "$WORK/aged.img" "$WORK/w"
	if [ $((RANDOM % 3)) -lt 2 ]; then
		n=$(( (RANDOM * 32768 + RANDOM) % W[$ce] + 1 ))
		how="kill:$n"
		E3_FAULT=kill:$n E3_DEFRAG_COMMIT_EVERY=$ce e3defrag -q "$WORK/w" >/dev/null 2>&1
		rc=$?
	else
		ms=$(echo "${T[$ce]} * 1000 * $((RANDOM % 1000)) / 1000" | bc)
		how="SIGKILL after ${ms} ms"
		E3_DEFRAG_COMMIT_EVERY=$ce e3defrag -q "$WORK/w" >/dev/null 2>&1 &
		pid=$!
		sleep "$(echo "scale=3; $ms / 1000" | bc)"
		kill -KILL $pid 2>/dev/null
		wait $pid
		rc=$?
	fi
	case $rc in
	137) kills=$((kills + 1))
	     case $how in kill:*) fault_kills=$((fault_kills + 1)) ;;
	     *) timer_kills=$((timer_kills + 1)) ;; esac ;;
	0|1) finished=$((finished + 1)) ;;
	*) echo "round $rounds ($how, commit every $ce): exit $rc" >> "$WORK/failures"
	   bad=$((bad + 1)); cp "$WORK/w" "$WORK/fail-$rounds.img"; continue ;;
	esac
	if [ $((rounds % 2)) -eq 0 ]; then
		e3fsck -p "$WORK/w" >/dev/null 2>&1
		[ $? -le 1 ] || { echo "round $rounds ($how): e3fsck -p" >> "$WORK/failures"; }
	else
		e2fsck -E journal_only -y "$WORK/w" >/dev/null 2>&1
	fi
	why=
	e2fsck -fn "$WORK/w" >/dev/null 2>&1 || why="e2fsck -fn not clean"
	if [ -z "$why" ]; then
		manifest "$WORK/w" "$WORK/mw" || why="mount failed"
		[ -n "$why" ] || cmp -s "$WORK/m0" "$WORK/mw" || why="manifest differs"
	fi
	if [ -n "$why" ]; then
		echo "round $rounds ($how, commit every $ce): $why" >> "$WORK/failures"
		bad=$((bad + 1))
		cp "$WORK/w" "$WORK/fail-$rounds.img"
	fi
done
echo "defrag_kill: $kills kills ($fault_kills at a write, $timer_kills by timer)" \
     "in $rounds rounds ($finished finished first), $bad inconsistent or changed;" \
     "image $SIZE seed $SEED, $(wc -l < "$WORK/m0") inodes in the manifest"
[ $bad -eq 0 ]
