#!/usr/bin/env bash
# A 2-rank program that asks for its own checkpoint at the one point it tests
# (mana_test_checkpoint_now: reroute_wait.c, waitall_parked.c): checkpointed there, killed,
# restarted in both restart forms; stdout and exit status must equal the native run's.
#   usage: run_self_checkpoint.sh MANA_BIN PROGRAM
set -u
bin=$1 prog=$2
name=$(basename "$prog")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $name: $*"; exit 1; }

timeout 300 mpiexec.mpich -n 2 "$prog" >"$work/native" 2>"$work/native.err" ||
  fail "native run failed: $(tail -3 "$work/native.err")"
for form in outer inner; do
  ck=$work/ck-$form
  timeout 300 "$bin/mana_launch" --ckptdir "$ck" mpiexec.mpich -n 2 "$prog" >"$work/$form.out" \
    2>"$work/$form.err1" || fail "$form: the checkpointed run exited $?: $(tail -3 "$work/$form.err1")"
  [ -f "$ck/LATEST" ] || fail "$form: no checkpoint was committed: $(tail -3 "$work/$form.err1")"
  if [ "$form" = outer ]; then
    timeout 300 "$bin/mana_restart" --ckptdir "$ck" mpiexec.mpich -n 2 >>"$work/$form.out" \
      2>"$work/$form.err2"
  else
    timeout 300 mpiexec.mpich -n 2 "$bin/mana_restart" --ckptdir "$ck" >>"$work/$form.out" \
      2>"$work/$form.err2"
  fi
  rc=$?
  [ "$rc" -eq 0 ] || fail "$form: the restart exited $rc: $(cat "$work/$form.out"; tail -n 5 "$work/$form.err2")"
  cmp -s "$work/native" "$work/$form.out" ||
    { diff "$work/native" "$work/$form.out"; fail "$form: output differs from native"; }
  echo "$form: restarted at the program's checkpoint; identical to native: $(cat "$work/native")"
done
