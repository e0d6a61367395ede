#!/usr/bin/env bash
# run_all.sh - every checkpoint and overhead figure mana has a target for, in one run, each
# against native MPICH or dd measured in the same run, then one summary.
#
# usage: benchmarks/run_all.sh [-d DIR] [-q] [-k]
#   -d DIR   where images and dd files go (default ${TMPDIR:-/tmp}); needs about 6 GiB free
#   -q       quick: smaller sizes and fewer rounds (a check that everything runs, not figures)
#   -k       keep the logs directory (printed)
#
# Parts, in this order (each prints its own table; their logs are kept in one directory):
#   1. run_ckpt_bench.sh -n 2 -m 64 and -m 1024, synchronous and --forked (5 s apart): pause per
#      checkpoint (the application's own longest stall), coordination, write rate against dd;
#   2. run_incremental_bench.sh -n 2 -m 1024 -c "0 1 10": bytes of a generation after 0, 1
#      and 10 % of the memory changed, against the full one;
#   3. run_image_bench.sh -s 1024 -r 7: image write and restore (read into place, as by
#      default and with forked writers) against dd reading the image file, and dd's reads into
#      fresh and into present memory (seven rounds: the VM's disk reads at 1 to 2.9 GB/s from
#      one second to the next, and the restore is compared with the dd reads of its own round);
#   4. run_overhead.sh -r 9: per-call overhead of local queries and communicating calls, the
#      native and the mana job of each round taking turns batch by batch, judged on the median
#      of the paired differences (one job of the same binary differs from the next by up to
#      300 ns on a 2-vCPU VM whose host moves its vCPUs; two batches 19 ms apart mostly do not);
#   5. coord_scale: the coordinator at 1,024 to 65,536 simulated ranks.
# Summary: one line per target of issue 11 with the measured figure, PASS or MISS. The
# figures only mean something on an idle machine; the load average is printed before and after
# each part. Exit status: 0 every target met, 1 some missed, 3 a part failed to run.
set -uo pipefail

me=run_all.sh
src=$(cd "$(dirname "$0")/.." && pwd)
dir=${TMPDIR:-/tmp} quick=0 keep=0
while [ $# -gt 0 ]; do
  case "$1" in
    -d) dir=$2; shift 2 ;;
    -q) quick=1; shift ;;
    -k) keep=1; shift ;;
    -h|--help) awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0" >&2; exit 2 ;;
    *) echo "$me: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
. "$src/benchmarks/bench_lib.sh"
find_mana_bin
bench=$(dirname "$MANA_BIN")/benchmarks
logs=$(mktemp -d "${TMPDIR:-/tmp}/mana-run-all.XXXXXX")
[ "$keep" = 1 ] && echo "logs in $logs"
trap '[ "$keep" = 1 ] || rm -rf "$logs"' EXIT

small=64 big=1024 reps=3 incr=1024 img=1024 irounds=7 orounds=9 space=5
[ "$quick" = 1 ] && big=256 reps=1 incr=128 img=256 irounds=1 orounds=1 space=1
broken=0
part() { # part NAME COMMAND...: runs it, output to the terminal and to $logs/NAME
  local name=$1 rc
  shift
  echo
  echo "######## $name   (load $(cut -d' ' -f1-3 /proc/loadavg))"
  "$@" 2>&1 | tee "$logs/$name"
  rc=${PIPESTATUS[0]}
  [ "$rc" -le 1 ] || { echo "$me: $name failed to run (exit $rc)"; broken=1; }
}

echo "date $(date -Is)  host $(uname -n)  kernel $(uname -r)  $(nproc) CPUs  mana $MANA_BIN"
part ckpt_sync "$src/benchmarks/run_ckpt_bench.sh" -n 2 -m "$small" -r "$reps" -d "$dir"
part ckpt_sync_big "$src/benchmarks/run_ckpt_bench.sh" -n 2 -m "$big" -r "$reps" -d "$dir"
# Forked checkpoints 5 s apart (-s): the background work after one (collapsing the huge pages
# its writer's copy-on-write split) is over before the next, as with any real interval.
part ckpt_forked "$src/benchmarks/run_ckpt_bench.sh" -n 2 -m "$small" -r "$reps" -d "$dir" --forked -s "$space"
part ckpt_forked_big "$src/benchmarks/run_ckpt_bench.sh" -n 2 -m "$big" -r "$reps" -d "$dir" --forked -s "$space"
part incremental "$src/benchmarks/run_incremental_bench.sh" -n 2 -m "$incr" -c "0 1 10" -d "$dir"
IMAGE_BENCH_BIN=${IMAGE_BENCH_BIN:-$bench/image_bench} \
  part image sh "$src/benchmarks/run_image_bench.sh" "$dir" -s "$img" -r "$irounds"
OVERHEAD_BIN=${OVERHEAD_BIN:-$bench/overhead} FLOOR_BIN=${FLOOR_BIN:-$bench/pair_floor} \
  part overhead "$src/benchmarks/run_overhead.sh" -r "$orounds"
part coord_scale "$bench/coord_scale"

# ---- the summary ----------------------------------------------------------------------------
# pause_med LOG: the median pause of the 2-rank row of run_ckpt_bench's summary
pause_med() { awk '$1 == 2 && NF >= 9 && $2 ~ /^[0-9.]+$/ { print $8 }' "$logs/$1" | tail -1; }
verdict() { awk -v v="$1" -v t="$2" -v op="$3" 'BEGIN { if (v == "") { print "n/a"; exit } if (op == "-") { print "(no target)"; exit } ok = op == "<=" ? v + 0 <= t + 0 : v + 0 >= t + 0; print ok ? "PASS" : "MISS" }'; }
line() { # line WHAT FIGURE OP TARGET UNIT
  local v
  v=$(verdict "$2" "$4" "$3")
  [ "$v" = MISS ] || [ "$v" = n/a ] && missed=1
  printf '%-66s %10s %-3s %-2s %-6s %s\n' "$1" "${2:-?}" "$5" "$3" "$4" "$v"
}
missed=0
echo
echo "SUMMARY (2 ranks; every figure from this run)"
line "pause per checkpoint, ${small} MiB/rank, synchronous (ms)" "$(pause_med ckpt_sync)" - "" ms
line "pause per checkpoint, ${big} MiB/rank, synchronous (ms)" "$(pause_med ckpt_sync_big)" - "" ms
line "pause per checkpoint, ${small} MiB/rank, forked writers (ms)" "$(pause_med ckpt_forked)" "<=" 20 ms
line "pause per checkpoint, ${big} MiB/rank, forked writers (ms)" "$(pause_med ckpt_forked_big)" "<=" 20 ms
for c in 0 1 10; do
  pct=$(awk -v c="$c %" '$NF == "%" && $(NF - 1) == c + 0 && NF == 7 { print $3 }' "$logs/incremental" | tail -1)
  [ "$c" = 1 ] && target=2 || target=100
  line "generation after $c % of the memory changed (% of a full one)" "$pct" "<=" "$target" "%"
done
# paired LABEL: the median over rounds of LABEL's rate over the best dd read of its round
paired() { sed -n "s/^info *$1 paired .* = \([0-9.]*\)\$/\1/p" "$logs/image" | tail -1; }
line "restore read rate / best dd read rate of its round (median)" "$(paired restore)" ">=" 0.90 x
line "the same, as a restart with forked writers restores" "$(paired restore-forked)" ">=" 0.90 x
line "dd's direct reads into fresh memory, no mana code: the same ratio" "$(paired fresh-memory\ reads)" - "" x
line "dd's direct reads into present memory, no mana code: the same ratio" "$(paired present-memory\ reads)" - "" x
line "restore read rate / those present-memory reads of its round (median)" "$(paired restore-over-present)" - "" x
write=$(sed -n 's/^verdict write .*image\/best dd = \([0-9.]*\).*/\1/p' "$logs/image" | tail -1)
line "image write rate / best dd write rate" "$write" ">=" 0.90 x
for f in comm_rank comm_size_split wtime; do
  d=$(awk -v f="$f" '$1 == "verdict" && $2 == f { for (i = 1; i <= NF; i++) if ($i == "delta") { v = $(i + 1); sub(/^\+/, "", v); print v } }' "$logs/overhead" | tail -1)
  [ -n "$d" ] && line "local query $f over native (ns)" "$d" "<=" 5 ns
done
for f in iallreduce4_wait ibcast4_wait; do
  d=$(awk -v f="$f" '$1 == "verdict" && $2 == f { for (i = 1; i <= NF; i++) if ($i == "delta") { v = $(i + 1); sub(/^\+/, "", v); print v } }' "$logs/overhead" | tail -1)
  line "$f over native, per pair (ns)" "$d" "<=" 60 ns
  q=$(awk -v f="$f" '/^paired:/ { t = 1 } t && $1 == f && NF == 5 { print $4 ".." $5 }' \
    "$logs/overhead" | tail -1)
  [ -n "$q" ] && line "  its paired differences' quartiles (ns)" "$q" - "" ns
done
# the lower of pair_floor's two "both" lines (four wrfsbase; selector in, wrfsbase out)
floor=$(awk '$1 == "both" && $2 ~ /^[-+][0-9.]+$/ { v = $2 + 0; if (m == "" || v < m) m = v } END { if (m != "") print m }' "$logs/overhead")
line "floor of that pair here: polling wait + 2 crossings' FS switches (ns)" "$floor" - "" ns
cs=$(awk '$1 == 65536 { print $NF }' "$logs/coord_scale" | tail -1)
line "coordination at 65,536 simulated ranks, all parked (ms of CPU)" "$cs" "<=" 1000 ms
lin=$(grep -c "VERDICT: PASS" "$logs/coord_scale")
line "coordinator CPU and TARGETS entries per rank linear (coord_scale)" "$lin" ">=" 1 ""
[ "$broken" = 0 ] || { echo "VERDICT: a part failed to run"; exit 3; }
[ "$missed" = 0 ] && { echo "VERDICT: every target met"; exit 0; }
echo "VERDICT: some targets missed"
exit 1
