#!/usr/bin/env bash
# ckpt_signal.sh - the checkpoint signal (mana_launch --ckpt-signal) with real ranks, as Slurm
# delivers it before the end of an allocation, against tests/programs/ckpt_signal_app (which
# installs its own SIGUSR1 handler and blocks SIGUSR1 on its thread), sent while every rank's
# main thread waits in a poll without a timeout, which must not end with EINTR:
#
#   1. USR1 to every rank (sbatch --signal without B:): one checkpoint however many ask, the
#      job ends with status 85, the application's handler never runs and sigaction still
#      reports it; mana_restart --ckpt-signal USR1 finishes the job.
#   2. USR1 to mpiexec, which forwards it to the ranks, with --ckpt-signal-action checkpoint:
#      a plain checkpoint, the job goes on and ends with status 0.
#   3. USR2 (given as 12) to the coordinator, which Slurm signals too when it runs in the
#      job step: exit status 85; a restart without --ckpt-signal finishes the job.
#
# Each run's output must equal the native run's.
# usage: ckpt_signal.sh --bin DIR --program PATH [--timeout S]
set -euo pipefail

me=ckpt_signal.sh timeout=120
. "$(dirname "$0")/job_lib.sh"
parse_job_args tests/programs/ckpt_signal_app "$@"

work=$(mktemp -d "${TMPDIR:-/tmp}/mana-ckpt-signal.XXXXXX")
launcher_pid=""
cleanup() {
  if [ -n "$launcher_pid" ]; then kill -KILL "$launcher_pid" 2>/dev/null || true; fi
  for p in $(job_pids "$work/ck1") $(job_pids "$work/ck2") $(job_pids "$work/ck3"); do
    kill -KILL "$p" 2>/dev/null || true
  done
  if [ "${KEEP:-0}" != 1 ]; then rm -rf "$work"; else say "kept $work"; fi
}
trap cleanup EXIT

# job_pids CKPTDIR: the ranks (mana_lh) of the job checkpointing into CKPTDIR
job_pids() {
  local e p
  for e in /proc/[0-9]*/environ; do
    p=${e#/proc/}
    p=${p%/environ}
    [ "$(readlink "/proc/$p/exe" 2>/dev/null)" = "$bin/mana_lh" ] || continue
    if { tr '\0' '\n' <"$e"; } 2>/dev/null | grep -qx "MANA_CKPTDIR=$1"; then echo "$p"; fi
  done
}

# wait_for SECONDS WHAT COMMAND...: until COMMAND succeeds
wait_for() {
  local limit=$1 what=$2
  shift 2
  local end=$((SECONDS + limit))
  until "$@"; do
    [ $SECONDS -lt $end ] || fail "no $what after ${limit}s"
    sleep 0.05
  done
}

holding() { grep -q "^ckpt_signal_app: holding" "$1"; }
# in_poll CKPTDIR: every rank's main thread waits in poll (7), where the signal must not end it
in_poll() {
  local p nr
  for p in $(job_pids "$1"); do
    read -r nr _ <"/proc/$p/syscall" 2>/dev/null || return 1
    [ "$nr" = 7 ] || return 1
  done
}
two_ranks() { [ "$(job_pids "$1" | wc -l)" -eq 2 ]; }
exited() { ! kill -0 "$launcher_pid" 2>/dev/null; }

touch "$work/released-native"
CKPT_SIGNAL_APP_RELEASE=$work/released-native mpiexec.mpich -n 2 "$program" >"$work/native.out" \
  2>"$work/native.err" || fail "the native run failed: $(tail -3 "$work/native.err")"
grep -q "RESULT PASS" "$work/native.out" || fail "the native run did not pass"

# ---- 1. USR1 to every rank -----------------------------------------------------------------
export CKPT_SIGNAL_APP_RELEASE=$work/released
"$bin/mana_launch" --ckptdir "$work/ck1" --ckpt-signal USR1 mpiexec.mpich -n 2 "$program" \
  >"$work/run1.out" 2>"$work/run1.err" &
launcher_pid=$!
wait_for "$timeout" "hold in run 1" holding "$work/run1.err"
wait_for "$timeout" "two ranks of run 1" two_ranks "$work/ck1"
wait_for "$timeout" "both ranks in poll in run 1" in_poll "$work/ck1"
ranks=$(job_pids "$work/ck1")
# shellcheck disable=SC2086 # one pid per word
kill -USR1 $ranks
rc=0
wait "$launcher_pid" || rc=$?
launcher_pid=""
[ $rc -eq 85 ] || fail "run 1 exited $rc, expected 85 (checkpointed): $(tail -5 "$work/run1.err")"
log=$work/ck1/.mana/coordinator.log
[ "$(grep -c "generation [0-9]* started" "$log")" -eq 1 ] ||
  fail "the two ranks' requests did not make one checkpoint: $(grep generation "$log")"
grep -q "generation 1 committed" "$log" || fail "generation 1 not committed: $(tail -3 "$log")"
say "run 1: USR1 to both ranks: one checkpoint, exit status 85"
touch "$work/released"
rc=0
"$bin/mana_restart" --ckptdir "$work/ck1" --ckpt-signal USR1 mpiexec.mpich -n 2 \
  >"$work/restart1.out" 2>"$work/restart1.err" || rc=$?
[ $rc -eq 0 ] || fail "the restart exited $rc: $(tail -5 "$work/restart1.err")"
cat "$work/run1.out" "$work/restart1.out" | cmp -s - "$work/native.out" ||
  fail "run 1 and its restart differ from the native run: $(cat "$work/run1.out" "$work/restart1.out" | diff - "$work/native.out" | head -8)"
say "run 1 + restart: output identical to the native run"

# ---- 2. USR1 to mpiexec, action checkpoint --------------------------------------------------
rm -f "$work/released"
"$bin/mana_launch" --ckptdir "$work/ck2" --ckpt-signal SIGUSR1 --ckpt-signal-action checkpoint \
  mpiexec.mpich -n 2 "$program" >"$work/run2.out" 2>"$work/run2.err" &
launcher_pid=$!
wait_for "$timeout" "hold in run 2" holding "$work/run2.err"
wait_for "$timeout" "two ranks of run 2" two_ranks "$work/ck2"
wait_for "$timeout" "both ranks in poll in run 2" in_poll "$work/ck2"
# mana_launch became mpiexec (exec), which forwards SIGUSR1 to the ranks
kill -USR1 "$launcher_pid"
wait_for "$timeout" "committed checkpoint in run 2" grep -q "generation 1 committed" \
  "$work/ck2/.mana/coordinator.log"
exited && fail "run 2 ended after a plain checkpoint: $(tail -5 "$work/run2.err")"
touch "$work/released"
rc=0
wait "$launcher_pid" || rc=$?
launcher_pid=""
[ $rc -eq 0 ] || fail "run 2 exited $rc after a plain checkpoint: $(tail -5 "$work/run2.err")"
cmp -s "$work/run2.out" "$work/native.out" || fail "run 2 differs from the native run"
say "run 2: USR1 to mpiexec: a plain checkpoint, the job went on to the native result"

# ---- 3. signal 12 (USR2) to the coordinator ---------------------------------------------------
rm -f "$work/released"
"$bin/mana_launch" --ckptdir "$work/ck3" --ckpt-signal 12 mpiexec.mpich -n 2 "$program" \
  >"$work/run3.out" 2>"$work/run3.err" &
launcher_pid=$!
wait_for "$timeout" "hold in run 3" holding "$work/run3.err"
wait_for "$timeout" "two ranks of run 3" two_ranks "$work/ck3"
wait_for "$timeout" "both ranks in poll in run 3" in_poll "$work/ck3"
coord=$(pgrep -f -- "mana_coordinator --daemon .*--ckptdir $work/ck3 ") ||
  fail "no coordinator for run 3"
kill -USR2 "$coord"
rc=0
wait "$launcher_pid" || rc=$?
launcher_pid=""
[ $rc -eq 85 ] || fail "run 3 exited $rc, expected 85: $(tail -5 "$work/run3.err")"
grep -q "generation 1 started (the coordinator received SIGUSR2, the job ends once it is committed)" \
  "$work/ck3/.mana/coordinator.log" || fail "run 3: $(grep generation "$work/ck3/.mana/coordinator.log")"
touch "$work/released"
rc=0
# without --ckpt-signal: the application's handler and mask are its own again
"$bin/mana_restart" --ckptdir "$work/ck3" mpiexec.mpich -n 2 >"$work/restart3.out" \
  2>"$work/restart3.err" || rc=$?
[ $rc -eq 0 ] || fail "the restart of run 3 exited $rc: $(tail -5 "$work/restart3.err")"
cat "$work/run3.out" "$work/restart3.out" | cmp -s - "$work/native.out" ||
  fail "run 3 and its restart differ from the native run"
say "run 3: USR2 to the coordinator: checkpointed, exit status 85; restarted to the native result"
say "PASS"
