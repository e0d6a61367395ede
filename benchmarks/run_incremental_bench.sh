#!/usr/bin/env bash
# run_incremental_bench.sh - what an incremental generation writes after a known share of the
# memory changed, against the full image of the same job, in one run.
#
# usage: benchmarks/run_incremental_bench.sh [options]
#   -n N         ranks (default 2)
#   -m MIB       heap per rank, filled with non-zero data (default 256)
#   -c LIST      percentages of each rank's heap pages changed before each incremental
#                generation (default "0 1 10")
#   -d DIR       where the images go (default ${TMPDIR:-/tmp})
#   --forked     forked writers too (mana_launch --forked-writers)
#   -k           keep the work directory (printed)
#
# benchmarks/incr_app (incr_app.c) holds MIB MiB per rank and, at each step, changes exactly
# the given share of its pages and says "ready". The job runs under
# mana_launch --incremental --full-every 1000; generation 1 is full, each later generation is
# written against the one before. For each generation the benchmark prints the bytes written
# (MANIFEST), their share of the full generation, and the write phase (committed_write_seconds minus the
# drain, from mana_status --json). At the end the newest generation, which reads pages from
# every older one, is restarted and must print the checksum the uninterrupted job printed.
# Target: after 1 % changed, an incremental generation writes <= INCR_PCT (2) % of the full.
# Exit status: 0 target met, 1 missed, 2 usage, 3 a run failed.
set -euo pipefail

me=run_incremental_bench.sh
src=$(cd "$(dirname "$0")/.." && pwd)
ranks=2 mib=256 changes="0 1 10" dir=${TMPDIR:-/tmp} keep=0 forked=()
usage() { awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    -n) ranks=$2; shift 2 ;;
    -m) mib=$2; shift 2 ;;
    -c) changes=$2; shift 2 ;;
    -d) dir=$2; shift 2 ;;
    --forked) forked=(--forked-writers); shift ;;
    -k) keep=1; shift ;;
    -h|--help) usage ;;
    *) echo "$me: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
for v in "$ranks" "$mib" $changes; do
  case "$v" in ''|*[!0-9]*) echo "$me: '$v' is not a whole number" >&2; exit 2 ;; esac
done
INCR_PCT=${INCR_PCT:-2}
MPIEXEC=${MPIEXEC:-mpiexec.mpich}
die() { echo "$me: FAIL: $*" >&2; exit 3; }
. "$src/benchmarks/bench_lib.sh"
find_mana_bin
app=${INCR_APP_BIN:-$(dirname "$MANA_BIN")/benchmarks/incr_app}
if [ ! -x "$app" ] || [ "$src/benchmarks/incr_app.c" -nt "$app" ]; then
  mkdir -p "${TMPDIR:-/tmp}/mana-bench-$(id -u)"
  app=${TMPDIR:-/tmp}/mana-bench-$(id -u)/incr_app
  mpicc.mpich -O2 -o "$app" "$src/benchmarks/incr_app.c" || die "cannot compile incr_app.c"
fi

mkdir -p "$dir"
work=$(mktemp -d "$dir/mana-incr-bench.XXXXXX")
ckdir=$work/ck
job=""
cleanup() {
  if [ -n "$job" ] && kill -0 "$job" 2>/dev/null; then kill -TERM "$job" 2>/dev/null || true; wait "$job" 2>/dev/null || true; fi
  if [ "$keep" = 1 ]; then echo "work directory kept: $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 3' INT TERM HUP

st() { "$MANA_BIN/mana_status" --ckptdir "$ckdir" "$@"; }
wait_ready() { # wait_ready K FILE
  local end=$((SECONDS + 300))
  until grep -qx "ready $1" "$2" 2>/dev/null; do
    [ $SECONDS -lt $end ] || die "no 'ready $1' within 300 s: $(tail -3 "$work/job.err")"
    [ -n "$job" ] && ! kill -0 "$job" 2>/dev/null && die "the job ended early: $(tail -3 "$work/job.err")"
    sleep 0.02
  done
}
checkpoint() { # checkpoint: asked again while the ranks connect
  local end=$((SECONDS + 120)) out
  until out=$(st --checkpoint --wait 2>&1); do
    case $out in
      *"ranks are connected"* | *"no rank has connected"* | *"no coordinator is running"*) ;;
      *) die "checkpoint: $out" ;;
    esac
    [ $SECONDS -lt $end ] || die "checkpoint: $out"
    sleep 0.1
  done
}
gen_bytes() { sed -n 's/^GENERATION .* bytes=\([0-9]*\).*/\1/p' "$(printf '%s/gen-%06d/MANIFEST' "$ckdir" "$1")"; }

echo "date $(date -Is)  host $(uname -n)  kernel $(uname -r)  $(nproc) CPUs"
echo "dir  $dir: $(df -PT "$dir" | awk 'NR==2 {print $2 " on " $1}')"
echo "mana $MANA_BIN   app $app   $ranks rank(s) x $mib MiB   ${forked[*]:-synchronous writers}"
echo

# The uninterrupted job's result, for the restart's comparison.
k=1
for c in $changes; do echo "$c" >"$work/native.$k"; k=$((k + 1)); done
echo end >"$work/native.$k"
"$MPIEXEC" -n "$ranks" "$app" "$mib" "$work/native" >"$work/native.out" 2>"$work/native.err" ||
  die "the native run failed: $(tail -3 "$work/native.err")"

"$MANA_BIN/mana_launch" --ckptdir "$ckdir" --incremental --full-every 1000 "${forked[@]}" \
  "$MPIEXEC" -n "$ranks" "$app" "$mib" "$work/ctl" >"$work/job.out" 2>"$work/job.err" &
job=$!
printf '%-10s %14s %10s %12s %12s %10s\n' generation bytes "% of full" write_ms ckpt_ms changed
k=0 full=0 missed=0
for c in full $changes; do
  if [ "$c" != full ]; then
    echo "$c" >"$work/ctl.$k"
  fi
  wait_ready "$k" "$work/job.out"
  t0=${EPOCHREALTIME/./}
  checkpoint
  t1=${EPOCHREALTIME/./}
  j=$(st --json)
  gen=$(cat "$ckdir/LATEST")
  bytes=$(gen_bytes "$gen")
  [ "$c" = full ] && full=$bytes
  write_s=$(json_field committed_write_seconds <<<"$j")
  drain_s=$(json_field committed_drain_seconds <<<"$j")
  pct=$(awk -v b="$bytes" -v f="$full" 'BEGIN { printf "%.2f", 100 * b / f }')
  printf '%-10s %14s %10s %12.1f %12.1f %10s\n' "$gen" "$bytes" "$pct" \
    "$(awk -v w="$write_s" -v d="${drain_s:-0}" 'BEGIN { print (w - d) * 1000 }')" \
    "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print (b - a) / 1000 }')" \
    "$([ "$c" = full ] && echo "(full)" || echo "$c %")"
  if [ "$c" = 1 ] && awk -v p="$pct" -v t="$INCR_PCT" 'BEGIN { exit !(p > t) }'; then
    missed=1
  fi
  k=$((k + 1))
done
echo end >"$work/ctl.$k"
set +e; wait "$job"; rc=$?; set -e
job=""
[ "$rc" -eq 0 ] || die "the job exited $rc: $(tail -3 "$work/job.err")"
grep -q "^incr_app: checksum" "$work/job.out" || die "the job printed no checksum"
grep "generation .* is incremental" "$ckdir/.mana/coordinator.log" | sed 's/^/  log: /' | tail -n 3 || true

# The newest generation reads pages from every older one; its restart ends as natively.
t0=${EPOCHREALTIME/./}
"$MANA_BIN/mana_restart" --ckptdir "$ckdir" "$MPIEXEC" -n "$ranks" >"$work/restart.out" \
  2>"$work/restart.err" || die "the restart failed: $(tail -3 "$work/restart.err")"
t1=${EPOCHREALTIME/./}
[ "$(grep '^incr_app: checksum' "$work/restart.out")" = "$(grep '^incr_app: checksum' "$work/native.out")" ] ||
  die "the restart of generation $gen printed another checksum than the native run"
echo "restart of generation $gen (pages from generations 1-$gen): $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", (b - a) / 1000 }') ms to the end, checksum as native"
if [ "$missed" = 0 ]; then
  echo "VERDICT: after 1 % changed the generation writes <= $INCR_PCT % of the full one"
  exit 0
fi
echo "VERDICT: MISS: after 1 % changed the generation writes more than $INCR_PCT % of the full one"
exit 1
