#!/usr/bin/env bash
# thread_in_park.sh - a thread created while a checkpoint parks the rank must be parked and
# saved like the others (tests/programs/callback_thread: a user op of MPI_Reduce_local starts
# a worker that counts on a global counter).
#
# A thread inside a callback goes on running when it is signalled, and parks only when its
# MPI call returns.  If it creates a thread and parks between the park's listing of the
# threads and its count of the parked ones, the count is complete without the new thread,
# which then runs on, never signalled, while the image is written: the image holds a page
# hashed before the worker's last writes and written after them (refused at restart), and no
# record of the worker (lost at restart).  MANA_FAULT=park-slow-rounds makes every round of
# the park pause 200 ms after its listing and say so; the program creates its worker once
# both ranks said it, so that it is born during such a pause.
#
# Natively, then under mana: the ranks wait in the op; a checkpoint with --kill; once both
# ranks are parking, the workers are created; the checkpoint must commit and the job end; a
# restart from it must run to the end.  The two runs' output together must equal the
# native output.
#
# usage: thread_in_park.sh --bin DIR --program PATH [--timeout S]
set -euo pipefail

me=thread_in_park.sh
. "$(dirname "$0")/job_lib.sh"
parse_job_args tests/programs/callback_thread "$@"
job_workdir thread-in-park

# ---- natively ------------------------------------------------------------------------------
timeout "$timeout" mpiexec.mpich -n 2 "$program" >"$work/native.out" 2>"$work/native.err" ||
  fail "the native run failed: $(tail -3 "$work/native.err")"
grep -q "RESULT PASS" "$work/native.out" || fail "the native run did not pass: $(tail -3 "$work/native.out")"

# ---- under mana: the workers are born while the ranks park --------------------------------
: >"$work/run1.err"
MANA_FAULT=park-slow-rounds CALLBACK_THREAD_GO=$work/go \
  "$bin/mana_launch" --ckptdir "$work/ck" mpiexec.mpich -n 2 "$program" \
  >"$work/run1.out" 2>"$work/run1.err" &
job=$!
wait_lines "$work/run1.err" "callback_thread: rank .* in the callback" 2 "both ranks were in the op"
ask "$work/ck" --checkpoint --kill >"$work/ask.out" 2>&1 &
asker=$!
wait_lines "$work/run1.err" "MANA_FAULT=park-slow-rounds: pid .* parking" 2 "both ranks were parking"
touch "$work/go"
say "both ranks parking for generation 1, the workers created in the op"
wait "$asker" || fail "the checkpoint with --kill failed: $(cat "$work/ask.out")"
wait_job "the job after its kill checkpoint" "$work/run1.err"
grep -q "RESULT" "$work/run1.out" && fail "the job ran to its end instead of being killed at the checkpoint"

# ---- restarted to the end ------------------------------------------------------------------
restart_as_native 2
say "PASS: the workers born during the park were saved and ran on after the restart, output as native"
