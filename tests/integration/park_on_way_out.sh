#!/usr/bin/env bash
# park_on_way_out.sh - a checkpoint's park signal that finds a thread on its way out of an MPI
# call, past the call's last park check, must still park the thread once it is back in the
# application (tests/programs/compute_after_call: one MPI call, then a computation without
# any).
#
# The park signal's handler leaves a thread inside the stub's code alone: the wrapper parks at
# its next return from the lower half.  A thread already past that return, preempted in the
# wrapper's last instructions, went back to the application unparked and was never signalled
# again; a computation longer than the park's 10 s then failed the checkpoint ("1 of 2
# threads parked within 10000 ms").  MANA_FAULT=wrapper-linger keeps the thread in
# MPI_Pcontrol's code after its park check until a park is asked for and about a second more.
#
# Natively, then under mana: each rank computes after MPI_Pcontrol until a stop file exists; a
# checkpoint with --kill must commit while they compute; a restart from it, with the stop file
# there, must run to the end.  The two runs' output together must equal the native output.
#
# usage: park_on_way_out.sh --bin DIR --program PATH [--timeout S]
set -euo pipefail

me=park_on_way_out.sh
. "$(dirname "$0")/job_lib.sh"
parse_job_args tests/programs/compute_after_call "$@"
job_workdir park-on-way-out

# ---- natively ------------------------------------------------------------------------------
touch "$work/stop.native"
COMPUTE_AFTER_CALL_STOP=$work/stop.native timeout "$timeout" mpiexec.mpich -n 2 "$program" \
  >"$work/native.out" 2>"$work/native.err" ||
  fail "the native run failed: $(tail -3 "$work/native.err")"
grep -q "RESULT PASS" "$work/native.out" ||
  fail "the native run did not pass: $(tail -3 "$work/native.out")"

# ---- under mana: the park signal finds the threads past MPI_Pcontrol's park check ---------
: >"$work/run1.err"
MANA_FAULT=wrapper-linger COMPUTE_AFTER_CALL_STOP=$work/stop \
  "$bin/mana_launch" --ckptdir "$work/ck" mpiexec.mpich -n 2 "$program" \
  >"$work/run1.out" 2>"$work/run1.err" &
job=$!
wait_lines "$work/run1.err" "MANA_FAULT=wrapper-linger: pid .* stays in MPI_Pcontrol" 2 \
  "both ranks lingering in MPI_Pcontrol"
start=$SECONDS
ask "$work/ck" --checkpoint --kill >"$work/ask.out" 2>&1 ||
  fail "the checkpoint with --kill failed: $(tail -3 "$work/ask.out" | tr '\n' ' ')"
say "generation 1 committed $((SECONDS - start)) s after it was asked for, the ranks computing"
wait_job "the job after its kill checkpoint" "$work/run1.err"
grep -q "RESULT" "$work/run1.out" &&
  fail "the job ran to its end instead of being killed at the checkpoint"

# ---- restarted to the end ------------------------------------------------------------------
touch "$work/stop"
restart_as_native 2
say "PASS: the threads found past their last park check parked in their computation;" \
  "output as native"
