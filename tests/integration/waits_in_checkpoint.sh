#!/usr/bin/env bash
# waits_in_checkpoint.sh - a checkpoint must not end the application's waits that any signal
# handler ends (tests/programs/poll_waits: threads in poll (with and without a timeout),
# ppoll, select, pselect, epoll_wait, epoll_pwait and epoll_pwait2 with a timeout (with and
# without a mask), pause, sigsuspend and sigwaitinfo, each waiting for an event only the
# program gives; ppoll, pselect and sigsuspend with every other signal blocked; and a write
# of 1 MiB to a pipe, which must return it all).
#
# Natively the events come at once.  Under mana each rank says when its threads wait
# (POLL_WAITS_GO), and the events come only after:
#   1. a checkpoint that commits while they wait: the job then ends as natively;
#   2. a checkpoint with --kill while they wait, and a restart from it: the restarted job ends
#      as natively (the two runs' output together).
# Before lower-half/interrupted_waits.c the park signal made each of these calls fail with
# EINTR at the checkpoint; before lower-half/masked_waits.c the masked ones blocked the park
# signal, and the checkpoint was aborted after 10 s; before mana_vdso_epoll_timed
# (lower-half/poll_timeout.c) epoll_wait failed with EINTR, and until it served them too
# (lower-half/masked_waits.c) epoll_pwait with a mask and epoll_pwait2 did; before
# lower-half/state_epolls.c
# the epoll instances refused the checkpoint.
#
# usage: waits_in_checkpoint.sh --bin DIR --program PATH [--timeout S]
set -euo pipefail

me=waits_in_checkpoint.sh
. "$(dirname "$0")/job_lib.sh"
parse_job_args tests/programs/poll_waits "$@"
job_workdir waits-in-checkpoint

# differs OUT...: the diff of the outputs, together, against native (empty when equal)
differs() {
  cat "$@" | cmp -s - "$work/native.out" && return 0
  cat "$@" | diff "$work/native.out" - | head -8 | tr '\n' ' '
}

# ---- natively ------------------------------------------------------------------------------
# with POLL_WAITS_GO (a file that exists already), as below: the same waiting threads
touch "$work/go0"
POLL_WAITS_GO=$work/go0 timeout "$timeout" mpiexec.mpich -n 2 "$program" >"$work/native.out" \
  2>"$work/native.err" ||
  fail "the native run failed: $(tail -3 "$work/native.out")"
grep -q "RESULT PASS" "$work/native.out" || fail "the native run did not pass: $(tail -3 "$work/native.out")"

# ---- 1. a checkpoint while the threads wait --------------------------------------------------
: >"$work/run1.err"
POLL_WAITS_GO=$work/go1 "$bin/mana_launch" --ckptdir "$work/ck1" mpiexec.mpich -n 2 "$program" \
  >"$work/run1.out" 2>"$work/run1.err" &
job=$!
wait_lines "$work/run1.err" "^poll_waits: rank .* waiting" 2 "both ranks' threads waited"
out=$(ask "$work/ck1" --checkpoint) || fail "the checkpoint while the threads waited: $out"
touch "$work/go1"
wait_job "the job checkpointed while its threads waited" "$work/run1.err"
d=$(differs "$work/run1.out")
[ -z "$d" ] || fail "after a checkpoint while the threads waited, the output differs from native: $d"
say "a checkpoint while the threads waited ($out): output as native"

# ---- 2. a checkpoint with --kill while they wait, and a restart -----------------------------
: >"$work/run2.err"
POLL_WAITS_GO=$work/go2 "$bin/mana_launch" --ckptdir "$work/ck2" mpiexec.mpich -n 2 "$program" \
  >"$work/run2.out" 2>"$work/run2.err" &
job=$!
wait_lines "$work/run2.err" "^poll_waits: rank .* waiting" 2 "both ranks' threads waited"
out=$(ask "$work/ck2" --checkpoint --kill) || fail "the kill checkpoint while the threads waited: $out"
wait_job "the job after its kill checkpoint" "$work/run2.err"
mpiexec.mpich -n 2 "$bin/mana_restart" --ckptdir "$work/ck2" >"$work/run3.out" 2>"$work/run3.err" &
job=$!
touch "$work/go2"
end=$((SECONDS + timeout))
while kill -0 "$job" 2>/dev/null; do
  [ $SECONDS -lt $end ] || fail "the restarted job did not end within ${timeout}s: $(tail -3 "$work/run3.err" | tr '\n' ' ')"
  sleep 0.05
done
wait_job "the restarted job" "$work/run3.err"
d=$(differs "$work/run2.out" "$work/run3.out")
[ -z "$d" ] || fail "after a restart from a checkpoint while the threads waited, the output differs from native: $d"
say "PASS: the waits went on through a checkpoint and through a restart from one, output as native"
