#!/usr/bin/env bash
# run_shm_placement.sh - ranks that shared memory at a checkpoint must be restarted
# on one node: on two, each would go on with its own copy and the job's results would be
# wrong without a word; and ranks of two nodes that each shared a segment of one name there
# must not be restarted on one node, where they would share one.
#
#   split   PROGRAM, tests/programs/posix_shm (2 ranks sharing a POSIX segment) or sysv_shm
#           (a System V segment found by its key), is checkpointed and killed
#           at call 40 of rank 0, then restarted with rank 1 taking itself for a rank on
#           another node (MANA_FAULT=restart-other-node:1, include/mana/fault.h);
#   merged  checkpointed with rank 1 taking itself for a rank on another node as its image
#           is written (MANA_FAULT=checkpoint-other-node:1: its segment is another node's of
#           the same name), restarted with both ranks on this node;
# each time every rank must say why in one line and the restart must end with an error
# within the limit (every rank finds the same after the restarted MPI_Init, and all end
# through MPI_Finalize: an MPI_Abort right after the line let Hydra drop it, and the restart
# ended with exit 1 and no word, 2 of 25 runs); the split checkpoint must still restart to
# the native output afterwards.
#
# usage: run_shm_placement.sh --bin DIR --program PATH [--timeout S]
set -euo pipefail

me=run_shm_placement.sh
timeout=120
. "$(dirname "$0")/../integration/job_lib.sh"
parse_job_args tests/programs/posix_shm "$@"
job_workdir shm-placement
# What the killed runs leave: the POSIX segments by name, the System V ones by key prefix.
trap 'job_cleanup; rm -f /dev/shm/mana_shm_placement.*
      "$(dirname "$0")/remove_orphan_sysv_shm.sh" 16384 6d70' EXIT
export UCX_LOG_LEVEL=error

case "$(basename "$program")" in
  sysv_shm) args=("$program" 40 keyed 6d70) ;;
  *) args=("$program" 40 mana_shm_placement) ;;
esac
mpiexec.mpich -n 2 "${args[@]}" >"$work/native.out" 2>"$work/native.err" ||
  fail "the native run failed: $(tail -3 "$work/native.err")"

# checkpoint CKPTDIR OUT [VAR=VALUE...]: checkpointed and killed at call 40 of rank 0.
checkpoint() {
  local ck=$1 out=$2
  shift 2
  env "$@" MANA_TEST_CHECKPOINT_AT_CALL=40 MANA_TEST_CHECKPOINT_RANK=0 timeout "$timeout" \
    "$bin/mana_launch" --ckptdir "$ck" mpiexec.mpich -n 2 "${args[@]}" >"$out" 2>"$out.err" ||
    fail "the checkpointed run failed: $(tail -3 "$out.err")"
  [ -e "$ck/LATEST" ] || fail "no checkpoint was committed at call 40: $(tail -3 "$out.err")"
}

# refused NAME CKPTDIR WHY [VAR=VALUE...]: the restart fails within the limit, every rank saying WHY.
refused() {
  local name=$1 ck=$2 why=$3 rc=0 start=$SECONDS
  shift 3
  env "$@" timeout "$timeout" mpiexec.mpich -n 2 "$bin/mana_restart" --ckptdir "$ck" \
    >"$work/$name.out" 2>"$work/$name.err" || rc=$?
  [ "$rc" -ne 0 ] || fail "$name: the restart succeeded: $(tail -3 "$work/$name.out")"
  [ "$rc" -ne 124 ] || fail "$name: the restart hung for ${timeout}s"
  local lines
  lines=$(grep -c "$why" "$work/$name.err" || true)
  [ "$lines" -ge 2 ] || fail "$name: not every rank said why ($lines line(s)), exit $rc: $(tail -n 4 "$work/$name.err" | tr '\n' '|')"
  say "$name: refused in $((SECONDS - start))s, exit $rc, on every rank: $(grep -m1 "$why" "$work/$name.err")"
}

checkpoint "$work/ck" "$work/run1.out"
refused split "$work/ck" \
  "ranks 0 and 1 shared memory on one node at the checkpoint but were restarted on different nodes" \
  MANA_FAULT=restart-other-node:1
checkpoint "$work/ck2" "$work/merged-run1.out" MANA_FAULT=checkpoint-other-node:1
refused merged "$work/ck2" \
  "ranks 0 and 1 each shared memory of one name on their own node at the checkpoint but were restarted on one node"

timeout "$timeout" mpiexec.mpich -n 2 "$bin/mana_restart" --ckptdir "$work/ck" \
  >"$work/run2.out" 2>"$work/run2.err" || fail "the restart on one node failed: $(tail -3 "$work/run2.err")"
cat "$work/run1.out" "$work/run2.out" | cmp -s - "$work/native.out" ||
  fail "output differs from native: $(cat "$work/run1.out" "$work/run2.out" | diff "$work/native.out" - | head -4 | tr '\n' '|')"
say "restarted on one node afterwards: output identical to native"
say "PASS"
