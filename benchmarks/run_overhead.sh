#!/usr/bin/env bash
# run_overhead.sh - native vs. mana per-call overhead, in one command.
#
# Runs benchmarks/overhead (2 ranks) natively and under mana for ROUNDS rounds. In each
# round the native job and the mana job run at the same time and take turns batch by batch
# (overhead.c, MANA_BENCH_TURNS): one side's batch runs while the other side's ranks sleep,
# so the two sides' batches alternate every ~19 ms (which side starts alternates by round).
# On a VM whose speed changes from one second to the next as the host moves its vCPUs, each
# mana batch is then compared with the native batches just before and after it, which ran on
# the same machine: the "paired" delta is the median of those differences over all rounds.
# Then it prints, per figure, the median over rounds for each side, the paired delta, and a
# verdict against the targets: the queries mana answers without a crossing (comm_rank,
# comm_size_split, wtime) <= +5 ns per call; every communicating figure <= +30 ns per MPI call
# and <= +2 %. --sequential runs the jobs one after the other instead (native, mana, ...).
#
# After each native run it also runs benchmarks/pair_floor natively, and prints the floor of the
# non-blocking collective + MPI_Wait pair on this machine: what the same pair costs natively
# when it pays a polling wait and the FS switches of two crossings, as any interposer built
# like mana does, next to the overhead mana measured.
#
# Usage: benchmarks/run_overhead.sh [-r ROUNDS] [--sequential] [--calibrate] [--bind|--no-bind]
#                                   [--wait-idle] [-v] [-k]
#   -r N           rounds (default 3, env ROUNDS)
#   --sequential   one job at a time (native, mana, native, ...), no paired delta (env
#                  INTERLEAVE=0); the verdicts then judge the medians
#   --calibrate    pick iteration counts on a native run (instead of the built-in table
#                  scaled by MANA_BENCH_SCALE) and reuse them for every run: the first round's
#                  native job when sequential, else a calibration job before the rounds
#   --bind         pass "-bind-to core" to mpiexec (env BIND=core). Off by default: on the
#                  2-CPU development VM it did not measurably reduce the run-to-run noise
#   --no-bind      let the kernel place the ranks (default; env BIND=none)
#   --wait-idle    before each job wait until other processes use <= IDLE_LOAD CPUs (default
#                  0.1), and rerun (up to 3x) a job during which they used more; gives up
#                  after WAIT_MAX seconds of waiting in total (default 600). Env WAIT_IDLE=1.
#   -v             also print every round's value
#   -k             keep the raw per-run outputs (their directory is printed)
#
# Environment:
#   MANA_BIN       directory holding mana_launch (default: <repo>/build/bin)
#   BUILD_DIR      CMake build tree whose benchmarks/overhead is preferred (default <repo>/build)
#   OVERHEAD_BIN   use exactly this benchmark binary
#   FLOOR_BIN      use exactly this pair_floor binary; FLOOR=0 skips the floor runs
#   PAIR_FLOOR_N   iterations of each floor run (default 2000000, ~2 s)
#   MPIEXEC        launcher (default mpiexec.mpich); NP ranks (default 2)
#   MANA_LAUNCH_ARGS  extra arguments for mana_launch, placed before the mpiexec command
#   JOB_TIMEOUT    seconds before one MPI job is killed (default 300)
#   BUDGET_NS, BUDGET_PCT  targets (default 30 and 2)
#   BUDGET_LOCAL_NS  target of the local queries (default 5)
#   VERDICT_ON     paired (default when interleaved), median (default when sequential) or
#                  best: which figures the verdict lines judge
#   MANA_BENCH_*   passed through to the program (see overhead.c). Interleaved rounds default
#                  to MANA_BENCH_SCALE=0.25 and MANA_BENCH_REPS=31 (batches of ~19 ms): the
#                  closer in time two batches are, the more alike the machine they ran on
#
# Exit status: 0 all figures within target; 1 some figure over target; 2 mana_launch missing
# (native figures were still measured and printed); 3 a benchmark job failed.
set -u -o pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)

ROUNDS=${ROUNDS:-3}
BIND=${BIND:-none}
VERBOSE=0
KEEP=0
CALIBRATE=0
while [ $# -gt 0 ]; do
  case "$1" in
    -r) ROUNDS=${2:?-r needs a number}; shift 2 ;;
    -r*) ROUNDS=${1#-r}; shift ;;
    --calibrate) CALIBRATE=1; shift ;;
    --sequential) INTERLEAVE=0; shift ;;
    --bind) BIND=core; shift ;;
    --no-bind) BIND=none; shift ;;
    --wait-idle) WAIT_IDLE=1; shift ;;
    -v) VERBOSE=1; shift ;;
    -k) KEEP=1; shift ;;
    -h|--help) sed -n '2,/^set -u/{/^set -u/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    *) echo "run_overhead.sh: unknown argument: $1 (try --help)" >&2; exit 64 ;;
  esac
done
case "$ROUNDS" in ''|*[!0-9]*|0) echo "run_overhead.sh: bad round count: $ROUNDS" >&2; exit 64 ;; esac

MPIEXEC=${MPIEXEC:-mpiexec.mpich}
NP=${NP:-2}
MANA_BIN=${MANA_BIN:-$repo/build/bin}
BUILD_DIR=${BUILD_DIR:-$repo/build}
JOB_TIMEOUT=${JOB_TIMEOUT:-300}
BUDGET_NS=${BUDGET_NS:-30}
BUDGET_LOCAL_NS=${BUDGET_LOCAL_NS:-5}
BUDGET_PCT=${BUDGET_PCT:-2}
WAIT_IDLE=${WAIT_IDLE:-0}
WAIT_MAX=${WAIT_MAX:-600}
IDLE_LOAD=${IDLE_LOAD:-0.1}
INTERLEAVE=${INTERLEAVE:-1}
if [ "$INTERLEAVE" = 1 ]; then
  VERDICT_ON=${VERDICT_ON:-paired}
else
  VERDICT_ON=${VERDICT_ON:-median}
fi
case "$VERDICT_ON" in
  median|best) ;;
  paired)
    [ "$INTERLEAVE" = 1 ] ||
      { echo "run_overhead.sh: VERDICT_ON=paired needs interleaved rounds" >&2; exit 64; } ;;
  *) echo "run_overhead.sh: VERDICT_ON must be paired, median or best" >&2; exit 64 ;;
esac

# ---- machine header ---------------------------------------------------------------------
cpu=$(awk -F': *' '/^model name/ {print $2; exit}' /proc/cpuinfo 2>/dev/null)
mpi=$(mpichversion 2>/dev/null | awk '/^MPICH (Version|Device):/ {sub(/^[^:]*:[ \t]*/, ""); printf "%s%s", sep, $0; sep = " "}')
echo "# mana overhead benchmark  $(date '+%Y-%m-%d %H:%M:%S %z')"
echo "# host=$(hostname)  nproc=$(nproc)  cpu=\"${cpu:-unknown}\"  kernel=$(uname -r)"
echo "# mpi=\"${mpi:-unknown}\"  launcher=$MPIEXEC  np=$NP  bind=$BIND  rounds=$ROUNDS" \
  " interleaved=$INTERLEAVE"

# ---- the benchmark binaries --------------------------------------------------------------
# program_binary NAME EXPLICIT: an explicit path, then the CMake-built one (if not older than
# its source), then a private build with mpicc.mpich -O2 (rebuilt when the source changes).
program_binary() {
  local name=$1 explicit=$2 src=$here/$1.c built=$BUILD_DIR/benchmarks/$1 cache bin
  if [ -n "$explicit" ]; then
    [ -x "$explicit" ] || { echo "run_overhead.sh: $explicit ($name) is not executable" >&2; return 1; }
    echo "$explicit"
    return 0
  fi
  if [ -x "$built" ] && ! [ "$src" -nt "$built" ]; then
    echo "$built"
    return 0
  fi
  [ -x "$built" ] && echo "# note: $built is older than $name.c; using a private build" >&2
  cache=${TMPDIR:-/tmp}/mana-bench-$(id -u)
  bin=$cache/$name
  if ! [ -x "$bin" ] || [ "$src" -nt "$bin" ]; then
    mkdir -p "$cache" || return 1
    echo "# building $bin (mpicc.mpich -O2)" >&2
    if ! mpicc.mpich -O2 -std=gnu17 -Wall -Wextra -o "$bin.tmp.$$" "$src" -lm ||
       ! mv -f "$bin.tmp.$$" "$bin"; then
      rm -f "$bin.tmp.$$"
      echo "run_overhead.sh: building $name failed" >&2
      return 1
    fi
  fi
  echo "$bin"
}
bin=$(program_binary overhead "${OVERHEAD_BIN:-}") || exit 3
FLOOR=${FLOOR:-1}
floor_bin=""
if [ "$FLOOR" != 0 ]; then
  floor_bin=$(program_binary pair_floor "${FLOOR_BIN:-}") || exit 3
fi
echo "# binary=$bin"
[ -n "$floor_bin" ] && echo "# floor binary=$floor_bin"

mana_launch=$MANA_BIN/mana_launch
have_mana=1
if ! [ -x "$mana_launch" ]; then
  have_mana=0
  echo "# WARNING: $mana_launch not found (set MANA_BIN, or build mana first)."
  echo "# WARNING: running NATIVE ONLY; no overhead can be judged."
else
  echo "# mana_launch=$mana_launch"
fi
if [ $have_mana = 0 ] && [ "$INTERLEAVE" = 1 ]; then
  INTERLEAVE=0 VERDICT_ON=median # nothing to take turns with
fi
if [ "$INTERLEAVE" = 1 ]; then
  export MANA_BENCH_SCALE=${MANA_BENCH_SCALE:-0.25} MANA_BENCH_REPS=${MANA_BENCH_REPS:-31}
  echo "# interleaved: MANA_BENCH_SCALE=$MANA_BENCH_SCALE MANA_BENCH_REPS=$MANA_BENCH_REPS"
fi

bind_args=()
[ "$BIND" = core ] && bind_args=(-bind-to core)

work=$(mktemp -d "${TMPDIR:-/tmp}/mana-overhead.XXXXXX") || exit 3
if [ "$KEEP" = 1 ]; then
  echo "# raw outputs kept in $work"
else
  trap 'rm -rf "$work"' EXIT
fi

# CPU time (clock ticks) used by the whole machine, and by this script plus its reaped
# children (the MPI jobs); the difference over a job is what other processes took meanwhile.
machine_ticks() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8 + $9; exit}' /proc/stat; }
own_ticks() { sed 's/.*) //' "/proc/$$/stat" | awk '{print $12 + $13 + $14 + $15}'; }
hz=$(getconf CLK_TCK 2>/dev/null || echo 100)
ncpu=$(nproc)

# job_command SIDE: the command line of one job, in the array cmd
job_command() {
  cmd=("$MPIEXEC" "${bind_args[@]}" -n "$NP" "$bin")
  # shellcheck disable=SC2206  # MANA_LAUNCH_ARGS is deliberately word-split
  [ "$1" = mana ] && cmd=("$mana_launch" ${MANA_LAUNCH_ARGS:-} "${cmd[@]}")
}

# other_load T0 T1 M0 M1 O0 O1: the average number of CPUs kept busy by other processes
# between T0 and T1 (ns), from the machine's and our own CPU ticks then
other_load() {
  awk -v m=$(($4 - $3)) -v o=$(($6 - $5)) -v ns=$(($2 - $1)) -v hz="$hz" \
    'BEGIN { v = (m - o) / hz / (ns / 1e9); printf "%.2f", v < 0 ? 0 : v }'
}

# job_failed SIDE ROUND RC: 0 if the job left figure lines and exited 0; else says why
job_failed() {
  local side=$1 round=$2 rc=$3 out=$work/$1.$2 why f
  [ "$rc" -eq 0 ] && grep -q '^figure=' "$out" && return 1
  why="exit status $rc"
  [ "$rc" -eq 124 ] && why="timed out after ${JOB_TIMEOUT}s"
  [ "$rc" -eq 0 ] && why="no figure lines in the output"
  job_command "$side"
  echo "run_overhead.sh: $side job (round $round) failed: $why" >&2
  echo "  command: ${cmd[*]}" >&2
  for f in "$out.err" "$out"; do
    [ -s "$f" ] || continue
    echo "  last lines of $([ "$f" = "$out" ] && echo stdout || echo stderr):" >&2
    tail -n 20 "$f" | sed 's/^/  | /' >&2
  done
  return 0
}

# run_job SIDE ROUND: one MPI job; output in $work/SIDE.ROUND (stdout) and .err (stderr);
# sets last_other (CPUs used by other processes meanwhile) and last_secs.
run_job() {
  local side=$1 round=$2 out=$work/$1.$2 t0 t1 rc m0 m1 o0 o1 cmd
  job_command "$side"
  m0=$(machine_ticks); o0=$(own_ticks); t0=$(date +%s%N)
  timeout --kill-after=10 "$JOB_TIMEOUT" "${cmd[@]}" >"$out" 2>"$out.err" </dev/null
  rc=$?
  t1=$(date +%s%N); m1=$(machine_ticks); o1=$(own_ticks)
  last_other=$(other_load "$t0" "$t1" "$m0" "$m1" "$o0" "$o1")
  last_secs=$(((t1 - t0) / 1000000))e-3
  printf '#   round %s/%d %-6s %5.1f s   other load %s of %d CPUs\n' "$round" "$ROUNDS" "$side" \
    "$last_secs" "$last_other" "$ncpu" >&2
  ! job_failed "$side" "$round" "$rc"
}

# run_pair ROUND: the native and the mana job of one round at the same time, taking turns
# batch by batch through the file $work/turns.ROUND; the native job runs the first batch in
# odd rounds, the mana job in even ones. Sets last_other and last_secs like run_job.
run_pair() {
  local round=$1 turns=$work/turns.$1 t0 t1 m0 m1 o0 o1 cmd side pid first=native
  local -A pid_of rc_of stopped
  local watchdog=""
  [ $((round % 2)) = 0 ] && first=mana
  echo "$round $first" >>"$work/order"
  head -c 64 /dev/zero >"$turns" || return 1
  m0=$(machine_ticks); o0=$(own_ticks); t0=$(date +%s%N)
  for side in native mana; do
    job_command "$side"
    MANA_BENCH_TURNS=$turns:$([ "$side" = "$first" ] && echo 0 || echo 1) \
      timeout --kill-after=10 "$JOB_TIMEOUT" "${cmd[@]}" >"$work/$side.$round" \
      2>"$work/$side.$round.err" </dev/null &
    pid_of[$side]=$!
  done
  # A job that fails stops the other at its next wait for a turn (the abandoned byte of the
  # turn file; overhead.c), which would otherwise last until MANA_BENCH_TURN_WAIT_S: its ranks
  # end by MPI_Abort, so none is left behind (mpiexec does not take its ranks down when it is
  # killed). If it has not ended 30 s later, it is killed.
  while [ ${#pid_of[@]} -gt 0 ]; do
    wait -n -p pid "${pid_of[@]}"
    local rc=$?
    for side in "${!pid_of[@]}"; do
      [ "${pid_of[$side]}" = "$pid" ] || continue
      rc_of[$side]=$rc
      unset "pid_of[$side]"
      if [ "$rc" -ne 0 ] && [ ${#pid_of[@]} -gt 0 ] && [ -z "$watchdog" ]; then
        printf '\001' | dd of="$turns" bs=1 seek=12 conv=notrunc status=none
        for pid in "${!pid_of[@]}"; do stopped[$pid]=$side; done
        (sleep 30 && kill "${pid_of[@]}" 2>/dev/null) &
        watchdog=$!
      fi
    done
  done
  if [ -n "$watchdog" ]; then
    pkill -P "$watchdog" sleep 2>/dev/null
    wait "$watchdog" 2>/dev/null
  fi
  t1=$(date +%s%N); m1=$(machine_ticks); o1=$(own_ticks)
  last_other=$(other_load "$t0" "$t1" "$m0" "$m1" "$o0" "$o1")
  last_secs=$(((t1 - t0) / 1000000))e-3
  printf '#   round %d/%d %-6s %5.1f s   other load %s of %d CPUs (%s first)\n' "$round" "$ROUNDS" \
    "paired" "$last_secs" "$last_other" "$ncpu" "$first" >&2
  local failed=0
  for side in native mana; do
    if [ -n "${stopped[$side]:-}" ]; then
      echo "run_overhead.sh: $side job (round $round) stopped," \
        "as the ${stopped[$side]} job failed" >&2
      failed=1
    elif job_failed "$side" "$round" "${rc_of[$side]}"; then
      failed=1
    fi
  done
  return $failed
}

# CPUs used by other processes over the next second (no job of ours running).
sample_other() {
  local m0 o0 m1 o1
  m0=$(machine_ticks); o0=$(own_ticks); sleep 1; m1=$(machine_ticks); o1=$(own_ticks)
  awk -v d=$((m1 - m0 - (o1 - o0))) -v hz="$hz" 'BEGIN { v = d / hz; printf "%.2f", v < 0 ? 0 : v }'
}
is_busy() { awk -v l="$1" -v t="$IDLE_LOAD" 'BEGIN { exit !(l > t) }'; }

waited=0
wait_idle() {
  [ "$WAIT_IDLE" = 1 ] || return 0
  local l said=0
  while l=$(sample_other) && is_busy "$l" && [ $waited -lt "$WAIT_MAX" ]; do
    [ $said = 1 ] || echo "#   waiting for an idle machine (other load $l CPUs)" >&2
    said=1
    sleep 2
    waited=$((waited + 3))
  done
  if [ $waited -ge "$WAIT_MAX" ] && is_busy "$l"; then
    echo "#   gave up waiting for an idle machine after ${WAIT_MAX}s (other load $l CPUs)" >&2
  fi
}

# job SIDE ROUND: run_job (SIDE paired: run_pair), with --wait-idle waiting for a quiet machine
# first and rerunning (up to 3 times) a job during which other processes used more than
# IDLE_LOAD CPUs.
job() {
  local side=$1 round=$2 tries=0
  while :; do
    wait_idle
    if [ "$side" = paired ]; then
      rm -f "$work/turns.$round"
      sed -i "/^$round /d" "$work/order" 2>/dev/null
      run_pair "$round" || return 1
    else
      run_job "$side" "$round" || return 1
    fi
    if [ "$WAIT_IDLE" = 1 ] && is_busy "$last_other" && [ $tries -lt 3 ] && [ $waited -lt "$WAIT_MAX" ]; then
      tries=$((tries + 1))
      echo "#   machine was busy during that job; running it again" >&2
      continue
    fi
    echo "$side $round $last_secs $last_other" >>"$work/load"
    return 0
  done
}

# floor_job ROUND: pair_floor natively, its line in $work/floor.ROUND.  The floor only explains
# the figures, so a failed run is reported and leaves that round out of the floor.
floor_job() {
  local out=$work/floor.$1 t0 t1
  [ -n "$floor_bin" ] || return 0
  wait_idle
  t0=$(date +%s%N)
  if ! PAIR_FLOOR_N=${PAIR_FLOOR_N:-2000000} timeout --kill-after=10 "$JOB_TIMEOUT" \
       "$MPIEXEC" "${bind_args[@]}" -n "$NP" "$floor_bin" >"$out" 2>"$out.err" </dev/null ||
     ! grep -q '^floor=' "$out"; then
    echo "run_overhead.sh: the floor run of round $1 failed; it is left out of the floor" >&2
    tail -n 5 "$out.err" "$out" 2>/dev/null | sed 's/^/  | /' >&2
    rm -f "$out"
    return 0
  fi
  t1=$(date +%s%N)
  printf '#   round %d/%d %-6s %5.1f s\n' "$1" "$ROUNDS" floor "$(((t1 - t0) / 1000000))e-3" >&2
}

# calibrated_counts FILE: the MANA_BENCH_N list of the iteration counts a calibrated run used
calibrated_counts() {
  awk '/^figure=/ {f = ""; n = ""
      for (i = 1; i <= NF; i++) {
        split($i, kv, "="); if (kv[1] == "figure") f = kv[2]; if (kv[1] == "n") n = kv[2]
      }
      printf "%s%s=%s", sep, f, n; sep = "," }' "$1"
}

t_start=$(date +%s)
if [ "$INTERLEAVE" = 1 ] && [ "$CALIBRATE" = 1 ] && [ -z "${MANA_BENCH_N:-}" ]; then
  # both jobs of a round must run the same batches, so they cannot calibrate for themselves
  MANA_BENCH_CALIBRATE=1 MANA_BENCH_REPS=1 run_job native calibration || exit 3
  MANA_BENCH_N=$(calibrated_counts "$work/native.calibration")
  export MANA_BENCH_N
  echo "# calibrated: MANA_BENCH_N=$MANA_BENCH_N"
  rm -f "$work/native.calibration" "$work/native.calibration.err"
fi
for ((round = 1; round <= ROUNDS; round++)); do
  if [ "$INTERLEAVE" = 1 ]; then
    job paired $round || exit 3
    floor_job $round
    continue
  fi
  if [ $round = 1 ] && [ "$CALIBRATE" = 1 ] && [ -z "${MANA_BENCH_N:-}" ]; then
    MANA_BENCH_CALIBRATE=1 job native 1 || exit 3
    # every later run (both sides) uses the counts the first native run settled on
    MANA_BENCH_N=$(calibrated_counts "$work/native.1")
    export MANA_BENCH_N
    echo "# calibrated: MANA_BENCH_N=$MANA_BENCH_N"
  else
    job native $round || exit 3
  fi
  floor_job $round
  if [ $have_mana = 1 ]; then
    job mana $round || exit 3
  fi
done
elapsed=$(($(date +%s) - t_start))

# ---- aggregate and judge ----------------------------------------------------------------
# awk input lines: "SIDE ROUND figure=... ns_per_call=... min=... mpi_calls=... [shrunk_from=]",
# and "floor ROUND floor=iallreduce4_wait pair_ns=... test_loop_ns=..." (pair_floor.c).
for f in "$work"/native.* "$work"/mana.* "$work"/floor.*; do
  case "$f" in *.err) continue ;; esac
  [ -e "$f" ] || continue
  b=${f##*/}
  grep -E '^(figure|floor)=' "$f" | sed "s/^/${b%%.*} ${b#*.} /"
done | awk -v rounds="$ROUNDS" -v have_mana="$have_mana" -v verbose="$VERBOSE" \
           -v budget_ns="$BUDGET_NS" -v budget_pct="$BUDGET_PCT" -v budget_local="$BUDGET_LOCAL_NS" -v elapsed="$elapsed" \
           -v basis="$VERDICT_ON" -v loadfile="$work/load" -v ncpu="$ncpu" \
           -v orderfile="$work/order" -v interleaved="$INTERLEAVE" '
function sort_list(list, a,   n, i, j, t) {
  n = split(list, a, " ")
  for (i = 2; i <= n; i++) { t = a[i] + 0; for (j = i - 1; j >= 1 && a[j] + 0 > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
  return n
}
function median(list,   a, n) {
  n = sort_list(list, a)
  if (n == 0) return 0
  return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function minimum(list,   a, n) { n = sort_list(list, a); return n ? a[1] : 0 }
function spread_pct(list,   a, n, m) {   # (max - min) / median of the values, in %
  n = sort_list(list, a); if (n < 2) return 0
  m = median(list); return m > 0 ? 100 * (a[n] - a[1]) / m : 0
}
function quartile(list, q,   a, n, x, i) {   # linear interpolation between order statistics
  n = sort_list(list, a); if (n == 0) return 0
  x = 1 + q * (n - 1); i = int(x)
  return i >= n ? a[n] : a[i] + (x - i) * (a[i + 1] - a[i])
}
# paired_diffs(f): for every round in which both sides ran figure f taking turns, its batches
# in the order they ran (1st of the first side, 1st of the other, 2nd of the first side, ...),
# and the difference mana - native of every two neighbours: each mana batch against the
# native batch before it and the one after it. Returns them as a list; sets npairs[f].
function paired_diffs(f,   r, nb, mb, nn, nm, seq, k, i, out, side_of) {
  out = ""
  for (r = 1; r <= rounds; r++) {
    if (!((r, f) in batches_of) || !(r in first_of)) continue
    nn = split(batches_of["native", r, f], nb, ",")
    nm = split(batches_of["mana", r, f], mb, ",")
    if (nn == 0 || nn != nm) continue
    k = 0
    for (i = 1; i <= nn; i++) {
      if (first_of[r] == "native") {
        seq[++k] = nb[i]; side_of[k] = "n"; seq[++k] = mb[i]; side_of[k] = "m"
      } else {
        seq[++k] = mb[i]; side_of[k] = "m"; seq[++k] = nb[i]; side_of[k] = "n"
      }
    }
    for (i = 1; i < k; i++) {
      out = out " " (side_of[i] == "m" ? seq[i] - seq[i + 1] : seq[i + 1] - seq[i])
      npairs[f]++
    }
  }
  return out
}
$3 ~ /^floor=/ {
  nfloor++
  for (i = 4; i <= NF; i++) { split($i, kv, "="); if (kv[1] ~ /_ns$/) floor_v[kv[1]] = floor_v[kv[1]] " " kv[2] }
  next
}
{
  side = $1; round = $2; fig = ""; v = ""; mn = ""; calls = 1
  for (i = 3; i <= NF; i++) {
    split($i, kv, "=")
    if (kv[1] == "figure") fig = kv[2]
    else if (kv[1] == "ns_per_call") v = kv[2]
    else if (kv[1] == "min") mn = kv[2]
    else if (kv[1] == "mpi_calls") calls = kv[2]
    else if (kv[1] == "shrunk_from") shrunk[fig] = 1
    else if (kv[1] == "batches") bl = kv[2]
  }
  if (fig == "" || v == "") next
  if (bl != "") { batches_of[side, round, fig] = bl; batches_of[round, fig] = 1; bl = "" }
  if (!(fig in seen)) { seen[fig] = 1; order[++nf] = fig }
  ncalls[fig] = calls
  vals[side, fig] = vals[side, fig] " " v
  mins[side, fig] = mins[side, fig] " " mn
  per_round[side, fig, round] = v
}
END {
  if (nf == 0) { print "no figures parsed"; exit 3 }
  while ((getline ln < orderfile) > 0) { split(ln, w, " "); first_of[w[1]] = w[2] }
  print ""
  if (have_mana) {
    printf "%-17s %11s %11s %9s %6s %7s | %11s %11s %7s | %6s\n", "", "median", "", "", "", "", "best", "", "", ""
    printf "%-17s %11s %11s %9s %6s %7s | %11s %11s %7s | %6s\n", "figure", "native_ns", "mana_ns", \
           "delta_ns", "ratio", "delta%", "native_ns", "mana_ns", "delta%", "noise%"
  } else {
    printf "%-17s %11s %11s %6s\n", "figure", "native_ns", "best_ns", "noise%"
  }
  for (k = 1; k <= nf; k++) {
    f = order[k]
    nat = median(vals["native", f]); bnat = minimum(mins["native", f]); noise = spread_pct(vals["native", f])
    N[f] = noise
    if (!have_mana) { printf "%-17s %11.1f %11.1f %6.1f%s\n", f, nat, bnat, noise, (f in shrunk) ? "  (n shrunk)" : ""; continue }
    man = median(vals["mana", f]); bman = minimum(mins["mana", f])
    d = man - nat; r = nat > 0 ? man / nat : 0; p = nat > 0 ? 100 * d / nat : 0
    bd = bman - bnat; bp = bnat > 0 ? 100 * bd / bnat : 0
    printf "%-17s %11.1f %11.1f %+9.1f %6.3f %+6.1f%% | %11.1f %11.1f %+6.1f%% | %6.1f%s\n", f, nat, man, d, r, p, \
           bnat, bman, bp, noise, (f in shrunk) ? "  (n shrunk)" : ""
    if (basis == "best") { D[f] = bd; P[f] = bp } else { D[f] = d; P[f] = p }
    if (interleaved) {
      pl = paired_diffs(f)
      PD[f] = median(pl); PQ1[f] = quartile(pl, 0.25); PQ3[f] = quartile(pl, 0.75)
      if (basis == "paired") { D[f] = PD[f]; P[f] = nat > 0 ? 100 * PD[f] / nat : 0 }
    }
  }
  if (interleaved) {
    print ""
    print "paired: every mana batch minus the native batch just before it and the one just after"
    print "it (the two jobs took turns batch by batch), ns per call, over all rounds:"
    printf "%-17s %6s %9s %9s %9s\n", "figure", "pairs", "median", "q1", "q3"
    for (k = 1; k <= nf; k++) {
      f = order[k]
      if (!npairs[f]) { printf "%-17s %6d %9s\n", f, 0, "-"; continue }
      printf "%-17s %6d %+9.1f %+9.1f %+9.1f\n", f, npairs[f], PD[f], PQ1[f], PQ3[f]
    }
  }
  if (verbose) {
    print ""; print "per-round ns_per_call (median batch of each run):"
    for (k = 1; k <= nf; k++) {
      f = order[k]; line = sprintf("%-17s native:", f)
      for (i = 1; i <= rounds; i++) line = line sprintf(" %.1f", per_round["native", f, i])
      if (have_mana) { line = line "   mana:"; for (i = 1; i <= rounds; i++) line = line sprintf(" %.1f", per_round["mana", f, i]) }
      print line
    }
  }
  if (nfloor) {
    print ""
    printf "floor of iallreduce4_wait here (benchmarks/pair_floor, native, its variants alternating every\n"
    printf "iteration; median of %d runs, ns per pair over the plain pair of %.1f ns):\n", nfloor, median(floor_v["pair_ns"])
    printf "  a polling wait (MPI_Test loop) instead of MPI_Wait   %+7.1f\n", median(floor_v["test_loop_ns"])
    if ("both_ns" in floor_v) {
      low = median(floor_v["both_ns"])
      printf "  two crossings'"'"' FS switches, four wrfsbase            %+7.1f\n", median(floor_v["fs_writes_ns"])
      printf "  both                                                %+7.1f\n", low
      if ("both_selector_ns" in floor_v) {
        printf "  two crossings'"'"' FS switches, selector in, wrfsbase out %+7.1f\n", median(floor_v["fs_selector_ns"])
        printf "  both                                                %+7.1f\n", median(floor_v["both_selector_ns"])
        if (median(floor_v["both_selector_ns"]) < low) low = median(floor_v["both_selector_ns"])
      }
      if (have_mana && ("iallreduce4_wait" in D))
        printf "mana'"'"'s iallreduce4_wait delta (%+.1f ns) is %+.1f ns over the lower floor (%+.1f ns)\n", \
               D["iallreduce4_wait"], D["iallreduce4_wait"] - low, low
    } else {
      print "  (no FSGSBASE instructions here: the FS writes were not measured)"
    }
  }
  print ""
  print "median: median over rounds of each run'"'"'s median batch (ns per call); best: fastest batch of all"
  print "rounds; delta% = 100*(mana-native)/native; noise%: (max-min)/median of the native rounds."
  if (basis == "paired")
    print "The verdicts judge the paired medians; their delta% is over the native median."
  print "The *_wait figures are one nonblocking call + MPI_Wait, i.e. 2 MPI calls per figure unit."
  printf "total benchmark time: %d s\n", elapsed
  maxload = 0; sumload = 0; nload = 0
  while ((getline ln < loadfile) > 0) { split(ln, w, " "); sumload += w[4]; nload++; if (w[4] + 0 > maxload) maxload = w[4] + 0 }
  if (nload) {
    printf "other processes kept %.2f CPUs busy on average during the runs (worst run: %.2f of %d)\n", sumload / nload, maxload, ncpu
    if (maxload > 0.1) {
      print "WARNING: the machine was not quiet; the benchmark needs all CPUs to itself (2 ranks busy-poll)."
      print "WARNING: treat these figures as unreliable; rerun when the machine is idle (--wait-idle)."
      noisy = 1
    }
  }
  if (!have_mana) { print ""; print "VERDICT: not judged - mana_launch missing, native only"; exit 2 }
  print ""
  printf "verdicts (on the %s figures; limits: +%g ns per local query, +%g ns per MPI call and +%g%% on communicating calls):\n", \
         basis, budget_local, budget_ns, budget_pct
  fails = 0
  for (k = 1; k <= nf; k++) {
    f = order[k]; c = ncalls[f]; lim = budget_ns * c
    communicating = (f != "comm_rank" && f != "comm_size_split" && f != "wtime")
    if (!communicating) lim = budget_local
    ok = (D[f] <= lim) && (!communicating || P[f] <= budget_pct)
    if (!ok) fails++
    why = sprintf("delta %+.1f ns (limit +%g ns%s)", D[f], lim, c > 1 ? sprintf(", %d calls", c) : "")
    if (communicating) why = why sprintf(", %+.2f%% (limit +%g%%)", P[f], budget_pct)
    note = (!ok && communicating && P[f] <= N[f]) ? sprintf("  [inside native noise of %.1f%%]", N[f]) : ""
    if (basis == "paired")
      note = (!ok && PQ1[f] <= lim) ? \
             sprintf("  [its lower quartile, %+.1f ns, is within]", PQ1[f]) : ""
    printf "verdict %-17s %s  %s%s\n", f, ok ? "PASS" : "FAIL", why, note
  }
  printf "VERDICT: %s (%d of %d figures over target)%s\n", fails ? "FAIL" : "PASS", fails, nf, \
         noisy ? " - machine was busy, unreliable" : ""
  exit fails ? 1 : 0
}'
