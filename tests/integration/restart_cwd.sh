#!/usr/bin/env bash
# restart_cwd.sh - a restart launched from another directory puts the ranks back in the
# working directory they had at the checkpoint (lower-half/state_cwd.c).
#
#   usage: restart_cwd.sh --bin DIR --program PATH [--timeout S]
#     PATH: tests/programs/cwd_relative, which opens its files by relative paths
#
# The job runs in app/ under mana_launch, holds before iteration 10 of 20, and is
# checkpointed with --kill there.  Then:
#   1. with app/ moved away, a restart from elsewhere/ must fail within 60 s, naming the
#      directory it cannot return to, and leave the checkpoint usable;
#   2. with app/ back, a restart from elsewhere/ must give the native output (stdout before
#      the kill and after the restart, concatenated) and write every iteration's line in
#      app/, none in elsewhere/ (before state_cwd.c the last ten went to elsewhere/).
# Exit status 0 when all holds, 1 with one FAIL line otherwise, 2 on a usage error.
set -u
me=restart_cwd.sh
here=$(cd "$(dirname "$0")" && pwd)
. "$here/job_lib.sh"
parse_job_args "tests/programs/cwd_relative" "$@"
program=$(cd "$(dirname "$program")" && pwd)/$(basename "$program")
job_workdir restart_cwd
mpiexec=mpiexec.mpich
export UCX_LOG_LEVEL=error
cd "$work" && mkdir native app elsewhere || fail "cannot make the directories in $work"
hold=$work/hold

touch "$hold"
(cd native && timeout "$timeout" "$mpiexec" -n 2 "$program" 20 "$hold" 10 >../native.out 2>../native.err) ||
  fail "native run failed: $(tail -3 native.err)"
rm -f "$hold"

(cd app && exec "$bin/mana_launch" --ckptdir "$work/ck" "$mpiexec" -n 2 "$program" 20 "$hold" 10 \
  >../run1.out 2>../run1.err) &
job=$!
end=$((SECONDS + timeout))
until grep -q '^holding' run1.out 2>/dev/null; do
  [ $SECONDS -lt $end ] || fail "the job did not reach its hold in ${timeout}s: $(tail -3 run1.err)"
  kill -0 "$job" 2>/dev/null || fail "the job ended before its hold: $(tail -3 run1.err)"
  sleep 0.05
done
out=$(ask "$work/ck" --checkpoint --kill) || fail "the kill checkpoint: $out"
wait_job "the job after its kill checkpoint" run1.err

mv app app.moved
start=$SECONDS
rc=0
(cd elsewhere && timeout 60 "$bin/mana_restart" --ckptdir ../ck "$mpiexec" -n 2 >../bad.out 2>../bad.err) || rc=$?
[ $rc -ne 0 ] || fail "a restart whose working directory is gone succeeded"
[ $rc -ne 124 ] || fail "a restart whose working directory is gone hung for 60 s: $(tail -3 bad.err)"
grep -q "cannot return to the working directory $work/app " bad.err ||
  fail "a restart whose working directory is gone does not say so: $(tail -3 bad.err)"
say "with app/ gone the restart failed in $((SECONDS - start)) s: $(grep -m1 'working directory' bad.err)"
mv app.moved app

touch "$hold"
(cd elsewhere && timeout "$timeout" "$bin/mana_restart" --ckptdir ../ck "$mpiexec" -n 2 \
  >../run2.out 2>../run2.err) || fail "the restart failed: $(tail -3 run2.err)"
cat run1.out run2.out | cmp -s - native.out ||
  fail "output differs from native: $(cat run1.out run2.out | diff native.out - | head -6 | tr '\n' '|')"
stray=$(ls elsewhere)
[ -z "$stray" ] || fail "the restarted ranks wrote in the restart's directory: $stray"
for r in 0 1; do
  n=$(grep -c '^iteration' "app/cwd_relative.$r")
  [ "$n" = 20 ] || fail "app/cwd_relative.$r holds $n iterations, not 20"
done
say "restarted from elsewhere/: native output, all 20 iterations in app/, nothing in elsewhere/"
echo "1 passed, 0 failed"
