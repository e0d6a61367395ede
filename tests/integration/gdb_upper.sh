#!/usr/bin/env bash
# gdb_upper.sh - mana_gdb shows the application's frames of a rank under mana as gdb shows
# them natively (tests/programs/gdb_frames, 2 ranks: rank 0 in MPI_Recv in frames_receive,
# called by frames_outer, called by main; rank 1 in frames_await, called by the same; on each a
# worker thread waiting in frames_worker).
#
# For every thread of every rank, gdb's backtrace gives the chain of the program's own
# functions (the frames whose source is gdb_frames.c, innermost first).  The chains of the two
# ranks together must be, with mana_gdb,
#   1. under mana_launch,
#   2. after a checkpoint with --kill and a restart (the upper half now maps no files; the
#      ranks named by number, mana_gdb --rank),
#   3. in core files gcore wrote of the restarted ranks (mana_gdb --core),
# the same as plain gdb gives natively (gdb alone shows "??" above mana_lh's frames under
# mana: no chain at all).  Such a core must be at most 16 times a native rank's: gcore writes
# every private reservation, and before mana left its own out of cores (MADV_DONTDUMP) it
# wrote the window's terabyte of address space.  Then
#   4. a breakpoint set with mana_gdb in the application (frames_released) must stop both
#      restarted ranks, which then end normally under gdb.
#
# usage: gdb_upper.sh --bin DIR --program PATH [--timeout S]
set -euo pipefail

me=gdb_upper.sh
. "$(dirname "$0")/job_lib.sh"
parse_job_args tests/programs/gdb_frames "$@"
command -v gdb >/dev/null || fail "gdb is not installed (tests/setup/install-deps.sh installs it)"
job_workdir gdb-upper

# chains GDB_OUTPUT: one line per thread with frames in gdb_frames.c, their functions joined
# by '<', innermost first
chains() {
  awk '/^Thread [0-9]+ / { if (c != "") print c; c = ""; next }
       /^#[0-9]+ / && /gdb_frames\.c:[0-9]+/ {
         sub(/^#[0-9]+ +(0x[0-9a-f]+ in )?/, ""); sub(/ .*/, "")
         c = c == "" ? $0 : c "<" $0 }
       END { if (c != "") print c }' "$1"
}

# backtraces OUT GDB... -- PID...: every thread's backtrace of each process, all in OUT
backtraces() {
  local out=$1 gdbcmd=() p
  shift
  while [ "$1" != -- ]; do gdbcmd+=("$1"); shift; done
  shift
  : >"$out"
  for p in "$@"; do
    timeout "$timeout" "${gdbcmd[@]}" -batch -p "$p" -ex "thread apply all bt" >>"$out" 2>&1 ||
      fail "gdb on pid $p failed: $(tail -3 "$out" | tr '\n' ' ')"
  done
}

# waiting_pids ERR: the pids the ranks' "waiting" lines name
waiting_pids() { sed -n 's/^gdb_frames: rank [0-9]* pid \([0-9]*\) waiting$/\1/p' "$1"; }

# same_chains WHAT GDB_OUTPUT: its chains, sorted, must be the native ones
same_chains() {
  chains "$2" | sort >"$2.chains"
  cmp -s "$2.chains" "$work/native.chains" ||
    fail "$1: the application's frames differ from native (native: $(tr '\n' ' ' <"$work/native.chains"); here: $(tr '\n' ' ' <"$2.chains"); gdb said: $(grep -m3 -E 'mana-upper|rror' "$2" | tr '\n' ' '))"
}

# ---- natively, with gdb ----------------------------------------------------------------------
GDB_FRAMES_GO=$work/go0 mpiexec.mpich -n 2 "$program" >"$work/native.out" 2>"$work/native.err" &
job=$!
wait_lines "$work/native.err" "^gdb_frames: rank .* waiting" 2 "both native ranks waited"
native_pids=$(waiting_pids "$work/native.err")
backtraces "$work/native.gdb" gdb -q -- $native_pids
p=$(echo $native_pids | cut -d' ' -f1)
timeout "$timeout" gcore -o "$work/native-core" "$p" >"$work/gcore.out" 2>&1 ||
  fail "gcore of native pid $p failed: $(tail -3 "$work/gcore.out" | tr '\n' ' ')"
native_core=$(stat -c %s "$work/native-core.$p")
rm -f "$work/native-core.$p"
touch "$work/go0"
wait_job "the native run" "$work/native.err"
grep -q "RESULT PASS" "$work/native.out" || fail "the native run did not pass: $(tail -3 "$work/native.out")"
chains "$work/native.gdb" | sort >"$work/native.chains"
[ "$(wc -l <"$work/native.chains")" -eq 4 ] ||
  fail "natively gdb should show 4 chains (2 ranks x 2 threads): $(tr '\n' ' ' <"$work/native.chains")"

# ---- 1. under mana_launch --------------------------------------------------------------------
GDB_FRAMES_GO=$work/go1 "$bin/mana_launch" --ckptdir "$work/ck" mpiexec.mpich -n 2 "$program" \
  >"$work/run1.out" 2>"$work/run1.err" &
job=$!
wait_lines "$work/run1.err" "^gdb_frames: rank .* waiting" 2 "both ranks waited under mana"
backtraces "$work/launch.gdb" "$bin/mana_gdb" -- $(waiting_pids "$work/run1.err")
same_chains "under mana_launch" "$work/launch.gdb"
say "under mana_launch: $(wc -l <"$work/launch.gdb.chains") chains as native"

# ---- 2. after a checkpoint with --kill and a restart -----------------------------------------
out=$(ask "$work/ck" --checkpoint --kill) || fail "the kill checkpoint: $out"
wait_job "the job after its kill checkpoint" "$work/run1.err"
mpiexec.mpich -n 2 "$bin/mana_restart" --ckptdir "$work/ck" >"$work/run2.out" 2>"$work/run2.err" &
job=$!
# a restarted rank connects to the coordinator once its memory and threads are back
end=$((SECONDS + timeout))
until pids=$("$bin/mana_status" --ckptdir "$work/ck" --json 2>/dev/null |
  sed -n 's/^      "pid": \([0-9]*\),\{0,1\}$/\1/p') && [ "$(echo $pids | wc -w)" -eq 2 ]; do
  [ $SECONDS -lt $end ] || fail "mana_status does not list the two restarted ranks' pids"
  kill -0 "$job" 2>/dev/null || fail "the restarted job ended: $(tail -3 "$work/run2.err" | tr '\n' ' ')"
  sleep 0.1
done
: >"$work/restart.gdb"
for r in 0 1; do # by rank number: mana_gdb asks mana_status for the pid
  timeout "$timeout" "$bin/mana_gdb" --rank "$r" --ckptdir "$work/ck" -batch \
    -ex "thread apply all bt" >>"$work/restart.gdb" 2>&1 ||
    fail "mana_gdb --rank $r failed: $(tail -3 "$work/restart.gdb" | tr '\n' ' ')"
done
same_chains "after a restart" "$work/restart.gdb"
# a rank the job does not have: one line and status 1, without starting gdb
rc=0
"$bin/mana_gdb" --rank 7 --ckptdir "$work/ck" -batch >"$work/norank.out" 2>&1 || rc=$?
[ $rc -eq 1 ] && [ "$(wc -l <"$work/norank.out")" -eq 1 ] && grep -q "no rank 7" "$work/norank.out" ||
  fail "mana_gdb --rank 7 of a 2-rank job: status $rc, said: $(tr '\n' ' ' <"$work/norank.out")"
say "after a restart: $(wc -l <"$work/restart.gdb.chains") chains as native"

# ---- 3. core files of the restarted ranks ----------------------------------------------------
: >"$work/core.gdb"
for p in $pids; do
  timeout "$timeout" gcore -o "$work/core" "$p" >"$work/gcore.out" 2>&1 ||
    fail "gcore of pid $p failed: $(tail -3 "$work/gcore.out" | tr '\n' ' ')"
  size=$(stat -c %s "$work/core.$p")
  [ "$size" -le $((16 * native_core)) ] ||
    fail "the core of pid $p is $((size >> 20)) MiB, over 16 times a native rank's $((native_core >> 20)) MiB: mana's reservations are in it"
  timeout "$timeout" "$bin/mana_gdb" -batch --core "$work/core.$p" -ex "thread apply all bt" \
    >>"$work/core.gdb" 2>&1 || fail "mana_gdb --core on pid $p's core failed: $(tail -3 "$work/core.gdb")"
  rm -f "$work/core.$p"
  sizes="${sizes:+$sizes, }$((size >> 20)) MiB"
done
same_chains "from core files" "$work/core.gdb"
say "from core files ($sizes; a native rank's $((native_core >> 20)) MiB): $(wc -l <"$work/core.gdb.chains") chains as native"

# ---- 4. a breakpoint in the application, in the restarted ranks -----------------------------
# gdb stays attached through the rest of the job: mana's SIGSYS and park signals pass without a
# stop, and each rank ends normally under it.
gdbs=()
for p in $pids; do
  timeout "$timeout" "$bin/mana_gdb" -batch -p "$p" -ex "break frames_released" -ex continue \
    -ex "bt" -ex continue >"$work/break${#gdbs[@]}.gdb" 2>&1 &
  gdbs+=($!)
done
for i in "${!gdbs[@]}"; do
  wait_lines "$work/break$i.gdb" "^Breakpoint 1 at " 1 "gdb's breakpoint in a restarted rank"
done
touch "$work/go1"
wait_job "the restarted job" "$work/run2.err"
for i in "${!gdbs[@]}"; do
  wait "${gdbs[$i]}" || fail "gdb with a breakpoint in a restarted rank exited $?: $(tail -3 "$work/break$i.gdb" | tr '\n' ' ')"
  grep -q "hit Breakpoint 1, frames_released" "$work/break$i.gdb" &&
    [ "$(chains "$work/break$i.gdb")" = "frames_released<main" ] &&
    grep -q "exited normally" "$work/break$i.gdb" ||
    fail "gdb's breakpoint in a restarted rank: $(grep -E 'Breakpoint|#[0-9]|exited' "$work/break$i.gdb" | head -5 | tr '\n' ' ')"
done
say "a breakpoint in frames_released: hit in both restarted ranks, which then ended normally"

cat "$work/run1.out" "$work/run2.out" | cmp -s - "$work/native.out" ||
  fail "the output across the restart differs from native: $(cat "$work/run1.out" "$work/run2.out" | diff "$work/native.out" - | head -5 | tr '\n' ' ')"
say "PASS: the application's frames as native under mana, after a restart and in core files; output as native"
