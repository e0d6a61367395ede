#!/usr/bin/env bash
# Checkpoint (coordinator-less test hook), kill and restart a program CYCLES times and compare
# the concatenated output with an uninterrupted native run.
#   usage: run_local_restart.sh MANA_BIN RANKS CYCLES CKPT_AFTER_MS PROGRAM [ARGS...]
# Each restart is itself checkpointed and killed CKPT_AFTER_MS later, except the last, which
# runs to the end.  PROGRAM's stdout must be deterministic.
set -u
bin=$1 ranks=$2 cycles=$3 after=$4
shift 4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

timeout 120 mpiexec.mpich -n "$ranks" "$@" >"$work/native" 2>"$work/native.err" ||
  fail "native run failed: $(tail -3 "$work/native.err")"

: >"$work/mana"
mkdir -p "$work/ckpt0"
MANA_TEST_CHECKPOINT_AFTER_MS=$after MANA_TEST_CHECKPOINT_DIR=$work/ckpt0 MANA_TEST_CHECKPOINT_KILL=1 \
  timeout 120 mpiexec.mpich -n "$ranks" "$bin/mana_lh" "$@" >>"$work/mana" 2>"$work/run0.err" ||
  fail "first run failed: $(tail -3 "$work/run0.err")"
[ "$(ls "$work/ckpt0" | wc -l)" = "$ranks" ] ||
  fail "first run wrote no complete checkpoint (did it finish before ${after} ms?)"
for ((i = 1; i <= cycles; i++)); do
  prev=$work/ckpt$((i - 1))
  if [ "$i" -lt "$cycles" ]; then
    mkdir -p "$work/ckpt$i"
    env=(MANA_TEST_CHECKPOINT_AFTER_MS=$after MANA_TEST_CHECKPOINT_DIR=$work/ckpt$i MANA_TEST_CHECKPOINT_KILL=1)
  else
    env=()
  fi
  env "${env[@]}" timeout 120 mpiexec.mpich -n "$ranks" "$bin/mana_lh" --restart "$prev" \
    >>"$work/mana" 2>"$work/run$i.err" || fail "restart $i failed: $(tail -3 "$work/run$i.err")"
done
if ! cmp -s "$work/native" "$work/mana"; then
  diff "$work/native" "$work/mana" | head -20
  fail "output after $cycles restart(s) differs from the native run"
fi
echo "identical to native after $cycles checkpoint/kill/restart cycle(s) ($(wc -l <"$work/mana") lines)"
echo "1 passed, 0 failed"
