#!/usr/bin/env bash
# A checkpoint that cannot be taken safely is refused with its reason, and the job goes on
# unharmed: a job holding state mana cannot restore (an MPI_T performance variable session)
# asked for a checkpoint in mid-run must finish with native output, and mana_status must report the refusal, with a
# reason matching PATTERN, and a non-zero exit.
#   usage: run_refusal.sh MANA_BIN RANKS PATTERN PROGRAM [ARGS...]
set -u
bin=$1 ranks=$2 pattern=$3
shift 3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

timeout 120 mpiexec.mpich -n "$ranks" "$@" >"$work/native" 2>/dev/null || fail "native run failed"
timeout 120 "$bin/mana_launch" --ckptdir "$work/ckpt" mpiexec.mpich -n "$ranks" "$@" \
  >"$work/mana" 2>"$work/mana.err" &
job=$!
# asked as soon as every rank has connected (the job holds its refused state from right after
# MPI_Init on), again while they are still connecting
end=$((SECONDS + 100))
until out=$("$bin/mana_status" --ckptdir "$work/ckpt" --checkpoint --wait 2>&1); do
  case $out in
    *"ranks are connected"* | *"no rank has connected"* | *"no coordinator is running"*) ;;
    *) break ;;
  esac
  [ $SECONDS -lt $end ] || fail "the ranks did not connect within 100 s: $out"
  kill -0 "$job" 2>/dev/null || fail "the job ended before its ranks connected: $(tail -3 "$work/mana.err")"
  sleep 0.1
done
[ -n "$out" ] && ! grep -q "committed" <<<"$out" || fail "the checkpoint was not refused: $out"
echo "refused as expected: $out"
printf '%s\n' "$out" | grep -q "$pattern" || fail "the refusal does not say why: $out"
wait "$job" || fail "the job failed after the refusal: $(tail -3 "$work/mana.err")"
cmp -s "$work/native" "$work/mana" || { diff "$work/native" "$work/mana" | head; fail "output differs"; }
[ ! -e "$work/ckpt/LATEST" ] || fail "a refused checkpoint left a LATEST file"
ls -d "$work"/ckpt/gen-* >/dev/null 2>&1 && fail "a refused checkpoint left a generation directory"
echo "job finished with native output; nothing was committed"
echo "1 passed, 0 failed"
