#!/usr/bin/env bash
# signal_in_park.sh - signals of the application's that come while a checkpoint holds its
# threads parked must still end the waits they were sent to end (tests/programs/sleep_woken:
# sleep(60) woken by SIGUSR1, read() on an empty pipe ended with EINTR by SIGUSR2, poll() on
# another ended with EINTR by SIGALRM, each signal left unblocked by its waiting thread only,
# the handlers without SA_RESTART).
#
# Natively: the signals to each rank once its threads wait; the waits end at once.
# Under mana, with the ranks' writers pausing 3 s before they write (MANA_FAULT=write-delay,
# the threads stay parked meanwhile): a plain checkpoint, and once the coordinator says every
# rank is parked, the signals to each rank.  They wait, blocked, while the threads are held;
# once released, the sleep must end with SIGUSR1 rather than go on for the minute (mana sleeps
# out the rest of a sleep its parking interrupted: lower-half/clock_calls.c), and the read
# must fail with EINTR rather than be made again (the kernel restarts it after mana's handler,
# installed with SA_RESTART: lower-half/interrupted_calls.c), and so must the poll, which mana
# makes again after a checkpoint unless such a signal waits (interrupted_waits.c).  Output and
# exit status must equal the native run's.
#
# usage: signal_in_park.sh --bin DIR --program PATH [--timeout S]
set -euo pipefail

me=signal_in_park.sh
. "$(dirname "$0")/job_lib.sh"
parse_job_args tests/programs/sleep_woken "$@"
job_workdir signal-in-park

export SLEEP_WOKEN_SIGNAL=outside
unset MANA_FORKED_WRITERS # a forked writer's pause would not hold the threads parked

# wait_threads ERRFILE: each rank's "pid sleeper reader poller", once its threads wait in their
# calls
wait_threads() {
  local end=$((SECONDS + timeout)) lines n pid sleeper reader nr
  while :; do
    lines=$(awk '$1 == "sleep_woken:" && $2 == "rank" { print $5, $7, $9, $11 }' "$1" 2>/dev/null)
    n=$(printf '%s' "$lines" | grep -c . || true)
    if [ "$n" -eq 2 ]; then
      local all=1
      while read -r pid sleeper reader poller; do
        nr=$(cut -d' ' -f1 "/proc/$pid/task/$sleeper/syscall" 2>/dev/null || true)
        # clock_nanosleep, nanosleep; ppoll: the rest of a sleep a checkpoint interrupted
        [ "$nr" = 230 ] || [ "$nr" = 35 ] || [ "$nr" = 271 ] || all=0
        nr=$(cut -d' ' -f1 "/proc/$pid/task/$reader/syscall" 2>/dev/null || true)
        [ "$nr" = 0 ] || all=0 # read
        nr=$(cut -d' ' -f1 "/proc/$pid/task/$poller/syscall" 2>/dev/null || true)
        [ "$nr" = 7 ] || all=0 # poll
      done <<<"$lines"
      [ $all = 1 ] && { echo "$lines"; return 0; }
    fi
    [ $SECONDS -lt $end ] || fail "the threads did not wait after ${timeout}s: $(tail -3 "$1")"
    kill -0 "$job" 2>/dev/null || fail "the job ended before its threads waited: $(tail -3 "$1")"
    sleep 0.05
  done
}

signal_ranks() {
  local pid sleeper reader poller
  while read -r pid sleeper reader poller; do
    kill -USR1 "$pid"
    kill -USR2 "$pid"
    kill -ALRM "$pid"
  done <<<"$1"
}

# ---- natively ----------------------------------------------------------------------------
mpiexec.mpich -n 2 "$program" >"$work/native.out" 2>"$work/native.err" &
job=$!
waiting=$(wait_threads "$work/native.err")
signal_ranks "$waiting"
wait_job "the native run" "$work/native.err"
grep -q "RESULT PASS" "$work/native.out" || fail "the native run did not pass: $(tail -3 "$work/native.out")"

# ---- under mana, the signal sent while the ranks are parked --------------------------------
MANA_FAULT=write-delay "$bin/mana_launch" --ckptdir "$work/ck" mpiexec.mpich -n 2 "$program" \
  >"$work/run.out" 2>"$work/run.err" &
job=$!
waiting=$(wait_threads "$work/run.err")
"$bin/mana_status" --ckptdir "$work/ck" --checkpoint >"$work/status.out" 2>&1 ||
  fail "the checkpoint request failed: $(cat "$work/status.out")"
log=$work/ck/.mana/coordinator.log
end=$((SECONDS + timeout))
until grep -q "generation 1: all ranks parked" "$log" 2>/dev/null; do
  [ $SECONDS -lt $end ] || fail "the ranks did not park within ${timeout}s: $(tail -3 "$log")"
  grep -q "generation 1 aborted" "$log" 2>/dev/null && fail "the checkpoint was aborted: $(tail -3 "$log")"
  sleep 0.02
done
signal_ranks "$waiting"
# The writers pause 3 s after the ranks parked: the signals must have come before the commit,
# or they did not find the threads parked and this run tested nothing.
grep -q "generation 1 committed" "$log" &&
  fail "the signals came after the checkpoint had committed (a machine too slow for the 3 s the writers pause)"
say "SIGUSR1, SIGUSR2 and SIGALRM sent to both ranks while they were parked for generation 1"
end=$((SECONDS + timeout))
while kill -0 "$job" 2>/dev/null; do
  [ $SECONDS -lt $end ] ||
    fail "the job did not end within ${timeout}s of the signals (a wait they did not end): $(tail -2 "$work/run.err" | tr '\n' ' ')"
  sleep 0.1
done
rc=0
wait "$job" || rc=$?
job=""
[ $rc -eq 0 ] || fail "the job exited $rc: $(grep -h "FAIL" "$work/run.out" | head -3 | tr '\n' ' ')$(tail -2 "$work/run.err" | tr '\n' ' ')"
grep -q "generation 1 committed" "$log" || fail "generation 1 did not commit: $(tail -3 "$log")"
cmp -s "$work/native.out" "$work/run.out" ||
  fail "the output differs from native: $(diff "$work/native.out" "$work/run.out" | head -6 | tr '\n' ' ')"
say "PASS: the sleeps, reads and polls ended with the signals sent during the checkpoint, output as native"
