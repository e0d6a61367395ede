#!/usr/bin/env bash
# incremental.sh - incremental checkpoints (--incremental) and pruning (--keep) on a real MPI
# program, compared with its native run.
#
#   1. tests/programs/iterative, small field (NLOCAL 4096: the libraries and the heap dominate
#      memory, so most pages stay unchanged), launched with --incremental --full-every 3
#      --keep 1 and held at steps 2000, 4000, 6000, 7000 (ITERATIVE_HOLD: the checkpoints fall
#      at known steps, not at wall-clock moments):
#        gen 1 at 2000 full; gen 2 at 4000 incremental, each image under a third of gen 1's;
#        gen 3 at 6000 incremental and ends the job (--kill). Gens 1-3 are all kept (3 needs 1).
#      mana_restart --check verifies the chain; with gen 1's image of rank 0 moved away it
#      fails and names generation 1; put back, it passes.
#   2. the job restarted from gen 3 (which reads pages from gens 1, 2 and 3) with the same
#      options; gen 4 at 7000 is full again (--full-every 3), after which --keep 1 removes
#      gens 1-3. The job ends with the native output.
#   3. gen 4 restarted: native output again (pruning left what LATEST needs).
#   4. forked writers writing incrementally, switched on by the environment
#      (MANA_FORKED_WRITERS=1 MANA_INCREMENTAL=1, as a site's module file would): two
#      checkpoints while the job runs, both by forked writers, the second incremental;
#      restarting it gives the native output.
#
# usage: incremental.sh --bin DIR --program PATH [--timeout S]
set -euo pipefail

me=incremental.sh
. "$(dirname "$0")/job_lib.sh"
parse_job_args tests/programs/iterative "$@"
job_workdir incremental

iters=8000 nlocal=4096
args=("$program" $iters $nlocal)
holds="$work/h1:2000,$work/h2:4000,$work/h3:6000,$work/h4:7000"
image_bytes() { stat -c %s "$work/ck/gen-$(printf %06d "$1")/rank-$(printf %06d "$2").img"; }
gens_left() { (cd "$work/ck" && ls -d gen-* 2>/dev/null | tr '\n' ' '); }
log=$work/ck/.mana/coordinator.log

ITERATIVE_PROGRESS=1000 mpiexec.mpich -n 2 "${args[@]}" >"$work/native.out" 2>"$work/native.err" ||
  fail "the native run failed: $(tail -3 "$work/native.err")"

# ---- 1. a full generation, an incremental one, an incremental one that ends the job --------
opts=(--ckptdir "$work/ck" --incremental --full-every 3 --keep 1)
ITERATIVE_PROGRESS=1000 ITERATIVE_HOLD=$holds "$bin/mana_launch" "${opts[@]}" \
  mpiexec.mpich -n 2 "${args[@]}" >"$work/run1.out" 2>"$work/run1.err" &
job=$!
wait_step "$work/run1.err" 2000
out=$(ask "$work/ck" --checkpoint) || fail "gen 1: $out"
touch "$work/h1"
wait_step "$work/run1.err" 4000
out=$(ask "$work/ck" --checkpoint) || fail "gen 2: $out"
touch "$work/h2"
wait_step "$work/run1.err" 6000
out=$(ask "$work/ck" --kill) || fail "gen 3 (--kill): $out"
wait_job "the job after the kill checkpoint" "$work/run1.err"
grep -q "generation 1 .*incremental" "$log" && fail "generation 1 is not full: $(grep 'generation 1 ' "$log")"
for g in 2 3; do
  grep -q "generation $g is incremental" "$log" ||
    fail "generation $g is not incremental: $(grep "generation $g " "$log")"
done
for r in 0 1; do
  full=$(image_bytes 1 $r) inc=$(image_bytes 2 $r)
  [ $((inc * 3)) -lt "$full" ] ||
    fail "rank $r: the incremental image of gen 2 has $inc bytes, the full one of gen 1 $full"
  say "rank $r: gen 1 full $full bytes, gen 2 incremental $inc bytes, gen 3 $(image_bytes 3 $r)"
done
[ "$(gens_left)" = "gen-000001 gen-000002 gen-000003 " ] ||
  fail "--keep 1 must keep what gen 3 refers to, left: $(gens_left)"

out=$("$bin/mana_restart" --ckptdir "$work/ck" --check 2>&1) || fail "--check of the chain: $out"
mv "$work/ck/gen-000001/rank-000000.img" "$work/moved.img"
if out=$("$bin/mana_restart" --ckptdir "$work/ck" --check 2>&1); then
  fail "--check passed without gen 1's image of rank 0: $out"
fi
case $out in
  *"generation 1"*) ;;
  *) fail "--check without gen 1's image does not name generation 1: $out" ;;
esac
say "--check without gen 1's image: $out"
mv "$work/moved.img" "$work/ck/gen-000001/rank-000000.img"
"$bin/mana_restart" --ckptdir "$work/ck" --check >/dev/null 2>&1 || fail "--check after putting it back"

# ---- 2. restarted from gen 3; gen 4 is full and the older ones go ---------------------------
touch "$work/h3" # gen 3 was taken while the job held at step 6000
ITERATIVE_PROGRESS=1000 "$bin/mana_restart" "${opts[@]}" mpiexec.mpich -n 2 \
  >"$work/run2.out" 2>"$work/run2.err" &
job=$!
wait_step "$work/run2.err" 7000
out=$(ask "$work/ck" --checkpoint) || fail "gen 4: $out"
touch "$work/h4"
wait_job "the restarted job" "$work/run2.err"
cmp -s "$work/run2.out" "$work/native.out" ||
  fail "the restart from the incremental gen 3 differs from native: $(diff "$work/run2.out" "$work/native.out" | head -5)"
grep -q "generation 4 is incremental" "$log" && fail "generation 4 is not full (--full-every 3)"
[ "$(gens_left)" = "gen-000004 " ] || fail "--keep 1 after the full gen 4 left: $(gens_left)"
say "gen 3 (incremental) restarted to the native output; gen 4 full; --keep 1 left $(gens_left)"

# ---- 3. the survivor restarts ---------------------------------------------------------------
rc=0
"$bin/mana_restart" --ckptdir "$work/ck" mpiexec.mpich -n 2 >"$work/run3.out" 2>"$work/run3.err" ||
  rc=$?
[ $rc -eq 0 ] || fail "the restart of gen 4 exited $rc: $(tail -5 "$work/run3.err")"
cmp -s "$work/run3.out" "$work/native.out" || fail "gen 4 restarts to another result"

# ---- 4. forked writers, incrementally ------------------------------------------------------
rm -rf "$work/ck" "$work"/h?
ITERATIVE_PROGRESS=1000 ITERATIVE_HOLD="$work/h1:3000,$work/h2:5000" MANA_FORKED_WRITERS=1 \
  MANA_INCREMENTAL=1 "$bin/mana_launch" --ckptdir "$work/ck" mpiexec.mpich -n 2 "${args[@]}" \
  >"$work/run4.out" 2>"$work/run4.err" &
job=$!
wait_step "$work/run4.err" 3000
out=$(ask "$work/ck" --checkpoint) || fail "forked gen 1: $out"
touch "$work/h1"
wait_step "$work/run4.err" 5000
out=$(ask "$work/ck" --checkpoint) || fail "forked gen 2: $out"
touch "$work/h2"
wait_job "the forked job" "$work/run4.err"
cmp -s "$work/run4.out" "$work/native.out" || fail "the forked job's output differs from native"
grep -q "generation 2 is incremental" "$log" || fail "forked generation 2 is not incremental"
[ "$(grep -c "started (.*written by forked writers while the job runs)" "$log")" -eq 2 ] ||
  fail "MANA_FORKED_WRITERS=1 did not make forked generations: $(grep started "$log")"
rc=0
"$bin/mana_restart" --ckptdir "$work/ck" mpiexec.mpich -n 2 >"$work/run5.out" 2>"$work/run5.err" ||
  rc=$?
[ $rc -eq 0 ] || fail "the restart of forked gen 2 exited $rc: $(tail -5 "$work/run5.err")"
cmp -s "$work/run5.out" "$work/native.out" || fail "forked incremental gen 2 restarts to another result"
say "forked writers: gen 2 incremental ($(image_bytes 2 0) bytes vs $(image_bytes 1 0)); its restart matches native"
say "PASS"
