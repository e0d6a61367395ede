#!/usr/bin/env bash
# run_at_calls.sh - checkpoint, kill and restart a program at chosen MPI calls, compared with a
# native run: deterministic moments instead of wall-clock delays.
#
# usage: run_at_calls.sh [options] PROGRAM [ARGS...]
#
# Runs PROGRAM natively once (the reference stdout and exit status), then once under
# mana_launch with MANA_TEST_COUNT_CALLS to learn how many times rank 0 crosses into the lower
# half (N), then, for each of K moments drawn from the seed in [1, 0.9 x N], runs
#
#   MANA_TEST_CHECKPOINT_AT_CALL=k mana_launch --ckptdir D LAUNCHER -n R PROGRAM ARGS
#   mana_restart --ckptdir D LAUNCHER -n R          (the launcher form and the per-rank form
#                                                     alternate)
#
# and requires that a generation was committed (the checkpoint fell inside the run), that the
# killed part exited 0, and that the concatenated stdout of both parts equals the native one
# byte for byte, with the same exit status.  Every failure prints the moment and the seed.
#
# Options:
#   -n, --ranks R      ranks (default 2)
#   --bin DIR          mana's bin directory (default $MANA_BIN, else <checkout>/build/bin)
#   --moments K        how many moments (default 5)
#   --seed S           seed of the moments (default 1); printed
#   --calls LIST       exact moments instead (comma separated)
#   --timeout S        limit per run (default: 120 s or 4 x the native time + 60 s)
#   --keep             keep the work directory
# ARGS may contain @WORK@, replaced by a private directory.
# Exit status: 0 every moment identical to native, 1 a failure, 2 usage error.
set -euo pipefail
me=run_at_calls.sh
usage() { awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0" >&2; exit 2; }

ranks=2 bin=${MANA_BIN:-} moments=5 seed=1 calls="" limit="" keep=0
while [ $# -gt 0 ]; do
  case "$1" in
    -n|--ranks) ranks=${2:?}; shift 2 ;;
    --bin) bin=${2:?}; shift 2 ;;
    --moments) moments=${2:?}; shift 2 ;;
    --seed) seed=${2:?}; shift 2 ;;
    --calls) calls=${2:?}; shift 2 ;;
    --timeout) limit=${2:?}; shift 2 ;;
    --keep) keep=1; shift ;;
    -h|--help) usage ;;
    --) shift; break ;;
    -*) echo "$me: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
[ $# -ge 1 ] || usage
[ -n "$bin" ] || bin=$(cd "$(dirname "$0")/../.." && pwd)/build/bin
[ -x "$bin/mana_launch" ] || { echo "$me: no mana_launch in $bin" >&2; exit 2; }
program=$1
shift
work=$(mktemp -d /tmp/mana-at-calls.XXXXXX)
cleanup() { [ "$keep" = 1 ] && echo "$me: work directory kept: $work" >&2 || rm -rf "$work"; }
trap cleanup EXIT
args=()
for a in "$@"; do args+=("${a//@WORK@/$work/files}"); done
mkdir -p "$work/files"

say() { echo "$me: $*"; }
fail() { echo "$me: FAIL: $*"; exit 1; }

t0=$(date +%s%N)
set +e
timeout 600 mpiexec.mpich -n "$ranks" "$program" "${args[@]}" >"$work/native.out" 2>"$work/native.err"
native_rc=$?
set -e
native_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
[ "$native_rc" -ne 124 ] || fail "the native run timed out"
if [ -z "$limit" ]; then
  limit=$(( native_ms * 4 / 1000 + 60 ))
  [ "$limit" -ge 120 ] || limit=120
fi
say "native: exit $native_rc, $(wc -l <"$work/native.out") lines, ${native_ms} ms; limit per run ${limit} s"

if [ -z "$calls" ]; then
  rm -f "$work/count"
  MANA_TEST_COUNT_CALLS=$work/count timeout "$limit" "$bin/mana_launch" --ckptdir "$work/ck0" \
    mpiexec.mpich -n "$ranks" "$program" "${args[@]}" >"$work/count.out" 2>"$work/count.err" ||
    fail "the counting run under mana failed: $(tail -3 "$work/count.err")"
  cmp -s "$work/native.out" "$work/count.out" || fail "the counting run's output differs from native"
  n=$(awk '$1 == "rank" && $2 == 0 { print $4 }' "$work/count")
  [ -n "$n" ] && [ "$n" -gt 10 ] || fail "no call count for rank 0 ($(cat "$work/count" 2>/dev/null))"
  hi=$(( n * 9 / 10 ))
  # xorshift from the seed: the same seed gives the same moments
  x=$(( (seed * 2654435761 + 12345) & 0xffffffff ))
  list=()
  for ((i = 0; i < moments; i++)); do
    x=$(( (x ^ (x << 13)) & 0xffffffff )); x=$(( x ^ (x >> 17) )); x=$(( (x ^ (x << 5)) & 0xffffffff ))
    list+=($(( 1 + x % hi )))
  done
  calls=$(IFS=,; echo "${list[*]}")
  say "rank 0 makes $n calls; seed $seed: moments $calls"
fi

i=0
for k in ${calls//,/ }; do
  i=$((i + 1))
  d=$work/m$i
  mkdir -p "$d"
  set +e
  MANA_TEST_CHECKPOINT_AT_CALL=$k timeout "$limit" "$bin/mana_launch" --ckptdir "$d/ck" \
    mpiexec.mpich -n "$ranks" "$program" "${args[@]}" >"$d/out" 2>"$d/err1"
  rc1=$?
  set -e
  [ "$rc1" -ne 124 ] || fail "call $k: the run timed out (seed $seed): $(tail -3 "$d/err1")"
  [ -f "$d/ck/LATEST" ] || fail "call $k: no checkpoint was committed (exit $rc1): $(tail -3 "$d/err1")"
  [ "$rc1" -eq 0 ] || fail "call $k: the killed run exited $rc1: $(tail -3 "$d/err1")"
  set +e
  if [ $((i % 2)) -eq 1 ]; then
    timeout "$limit" "$bin/mana_restart" --ckptdir "$d/ck" mpiexec.mpich -n "$ranks" \
      >>"$d/out" 2>"$d/err2"
  else
    timeout "$limit" env MANA_CKPTDIR="$d/ck" mpiexec.mpich -n "$ranks" "$bin/mana_restart" \
      --ckptdir "$d/ck" >>"$d/out" 2>"$d/err2"
  fi
  rc2=$?
  set -e
  [ "$rc2" -ne 124 ] || fail "call $k: the restart timed out (seed $seed): $(tail -3 "$d/err2")"
  [ "$rc2" -eq "$native_rc" ] ||
    fail "call $k: exit status $rc2 after the restart, native $native_rc: $(tail -3 "$d/err2")"
  if ! cmp -s "$work/native.out" "$d/out"; then
    diff "$work/native.out" "$d/out" | head -10
    fail "call $k: output after the restart differs from native (seed $seed)"
  fi
  say "call $k: checkpointed, killed, restarted: identical to native"
done
say "PASS: $i moment(s) identical to native ($program, $ranks ranks)"
