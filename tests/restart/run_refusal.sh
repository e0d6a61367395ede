#!/usr/bin/env bash
# A checkpoint that cannot be taken safely is refused with its reason, and the job goes on
# unharmed: a job in a state mana cannot restore (MPI finalized, computing on) asked for a
# checkpoint must finish with native output, and mana_status must report the refusal, with a
# reason matching PATTERN, and a non-zero exit.
#   usage: run_refusal.sh [--after LINE] MANA_BIN RANKS PATTERN PROGRAM [ARGS...]
#   --after LINE   ask only once the job's stdout has a line starting with LINE (the program
#                  prints it when it is in the refused state); default: as soon as the ranks
#                  have connected
set -u
ready=
if [ "${1:-}" = --after ]; then
  ready=$2
  shift 2
fi
bin=$1 ranks=$2 pattern=$3
shift 3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

timeout 120 mpiexec.mpich -n "$ranks" "$@" >"$work/native" 2>/dev/null || fail "native run failed"
timeout 120 "$bin/mana_launch" --ckptdir "$work/ckpt" mpiexec.mpich -n "$ranks" "$@" \
  >"$work/mana" 2>"$work/mana.err" &
job=$!
end=$((SECONDS + 100))
if [ -n "$ready" ]; then
  until grep -q "^$ready" "$work/mana"; do
    kill -0 "$job" 2>/dev/null || fail "the job ended before printing '$ready': $(tail -3 "$work/mana.err")"
    [ $SECONDS -lt $end ] || fail "no line '$ready' within 100 s"
    sleep 0.1
  done
fi
# asked as soon as every rank has connected, again while they are still connecting
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
