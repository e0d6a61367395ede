#!/usr/bin/env bash
# run_ckpt_bench.sh - what a checkpoint costs a running job, against the targets, in one run.
#
# usage: benchmarks/run_ckpt_bench.sh [options]
#   -n LIST      rank counts, e.g. "1 2 4" (default "1 2 4")
#   -m MIB       heap per rank, filled with non-zero data (default 64)
#   -r N         checkpoints without kill per rank count (default 3)
#   -d DIR       where the images and the dd test file go (default ${TMPDIR:-/tmp}); the
#                figures are about this directory's storage
#   --forked     forked writers (mana_launch --forked-writers): each rank resumes once drained
#                while a forked child writes its image (the kill checkpoint stays synchronous)
#   -s SECONDS   time from one checkpoint's commit to the next request (default 0.3), as an
#                interval would space them; after a forked generation the ranks collapse the
#                huge pages its copy-on-write split (docs/checkpoint-engine.md, 3.1), about
#                0.3 s of CPU per GiB at the writers' nice value, and a checkpoint that comes
#                before that is over forks with 4 KiB page tables again
#   --overhead   also run benchmarks/run_overhead.sh (per-call runtime overhead, no checkpoints)
#   -k           keep the work directory (printed)
#
# For every rank count it starts benchmarks/ckpt_app (ckpt_app.c: MIB MiB per rank, an
# Allreduce and a ring Sendrecv per iteration, a timestamp per iteration in a progress file
# per rank) with mana_launch, then measures:
#   a) coordination: CKPT sent to every rank until every rank is parked and drained: the safe
#      point (committed_sync_seconds of mana_status --json, CKPT to DRAIN) plus the parking and
#      the drain (committed_drain_seconds, DRAIN to the last rank's "drained" PROGRESS); target
#      <= 50 ms at 2-4 ranks;
#   b) write throughput: image bytes / (the last rank drained until the last image is written
#      and fsync'ed: committed_write_seconds - committed_drain_seconds) against
#      dd if=/dev/zero of=DIR/ddtest bs=4M count=N oflag=direct conv=fsync of the same
#      total size, run before and after the checkpoints (target >= 90 % of dd; with --forked
#      shown without a target: the writers run at nice 10 beside the resumed application);
#   c) image size (MANIFEST bytes) against the ranks' upper-half RSS: the Rss of their
#      mappings in [0x600000000000, 0x610000000000) from /proc/PID/smaps just before the
#      request (target <= 1.02 x);
#   d) pause: the longest gap between two consecutive progress timestamps of any rank around
#      the checkpoint (the application's own view of how long it stood still);
#   e) restart: from starting mana_restart until every rank has written a new progress line.
# The last checkpoint of each rank count is a kill checkpoint, followed by the restart.
#
# Binaries: MANA_BIN (default <repo>/build/bin, else <repo>/build-tests/bin); CKPT_APP_BIN
# (default: next to mana's build, benchmarks/ckpt_app, else compiled here with mpicc.mpich
# into ${TMPDIR:-/tmp}/mana-bench-$UID/). Targets: COORD_MS (50), WRITE_PCT (90),
# IMAGE_RATIO (1.02). Exit status: 0 every target met, 1 some missed, 2 usage, 3 a run failed.
set -euo pipefail

me=run_ckpt_bench.sh
src=$(cd "$(dirname "$0")/.." && pwd)
ranks_list="1 2 4" mib=64 reps=3 dir=${TMPDIR:-/tmp} overhead=0 keep=0 forked=() space=0.3
usage() { awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    -n) ranks_list=$2; shift 2 ;;
    -m) mib=$2; shift 2 ;;
    -r) reps=$2; shift 2 ;;
    -s) space=$2; shift 2 ;;
    -d) dir=$2; shift 2 ;;
    --overhead) overhead=1; shift ;;
    --forked) forked=(--forked-writers); shift ;;
    -k) keep=1; shift ;;
    -h|--help) usage ;;
    *) echo "$me: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
for v in "$mib" "$reps" $ranks_list; do
  case "$v" in ''|*[!0-9]*) echo "$me: '$v' is not a whole number" >&2; exit 2 ;; esac
done
[ "$reps" -ge 1 ] || { echo "$me: -r must be at least 1" >&2; exit 2; }
case "$space" in ''|*[!0-9.]*) echo "$me: -s '$space' is not a number of seconds" >&2; exit 2 ;; esac
COORD_MS=${COORD_MS:-50} WRITE_PCT=${WRITE_PCT:-90} IMAGE_RATIO=${IMAGE_RATIO:-1.02}
MPIEXEC=${MPIEXEC:-mpiexec.mpich}

die() { echo "$me: FAIL: $*" >&2; exit 3; }
. "$src/benchmarks/bench_lib.sh"
find_mana_bin
app=${CKPT_APP_BIN:-}
if [ -z "$app" ]; then
  app=$(dirname "$MANA_BIN")/benchmarks/ckpt_app
  if [ ! -x "$app" ] || [ "$src/benchmarks/ckpt_app.c" -nt "$app" ]; then
    out=${TMPDIR:-/tmp}/mana-bench-$(id -u)
    mkdir -p "$out"
    app=$out/ckpt_app
    if [ ! -x "$app" ] || [ "$src/benchmarks/ckpt_app.c" -nt "$app" ]; then
      mpicc.mpich -O2 -o "$app" "$src/benchmarks/ckpt_app.c" || die "cannot compile ckpt_app.c"
    fi
  fi
fi

mkdir -p "$dir"
work=$(mktemp -d "$dir/mana-ckpt-bench.XXXXXX")
job=""
cleanup() {
  if [ -n "$job" ] && kill -0 "$job" 2>/dev/null; then kill -TERM "$job" 2>/dev/null || true; wait "$job" 2>/dev/null || true; fi
  if [ "$keep" = 1 ]; then echo "work directory kept: $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 3' INT TERM HUP

now_us() { echo "${EPOCHREALTIME/./}"; }
st() { "$MANA_BIN/mana_status" --ckptdir "$ckdir" "$@"; }

# dd_mbs MIB: MB/s of a direct, fsync'ed write of MIB MiB into the directory
dd_mbs() {
  local count=$(( ($1 + 3) / 4 )) out
  out=$(dd if=/dev/zero of="$work/ddtest" bs=4M count="$count" oflag=direct conv=fsync 2>&1 | tail -1)
  rm -f "$work/ddtest"
  awk -v l="$out" 'BEGIN { n = split(l, f, " "); for (i = 1; i <= n; i++) if (f[i] == "copied,") { printf "%.1f", f[1] / f[i + 1] / 1e6; exit } }'
}

# window_rss_kb PID: Rss of the mappings of PID in [0x600000000000, 0x610000000000)
window_rss_kb() {
  awk '/^[0-9a-f]+-[0-9a-f]+ / { split($1, a, "-"); win = length(a[1]) == 12 && substr(a[1], 1, 2) == "60"; next }
       /^Rss:/ { if (win) kb += $2 } END { print kb + 0 }' "/proc/$1/smaps"
}

# max_gap_ms FROM_US TO_US: longest gap between consecutive progress lines of any rank that
# overlaps [FROM, TO]
max_gap_ms() {
  local f best=0 g
  for f in "$work"/progress.*; do
    g=$(awk -v from="$1" -v to="$2" '{ t = $2 / 1000 } NR > 1 && t >= from && prev <= to { if (t - prev > m) m = t - prev } { prev = t } END { printf "%.0f", m }' "$f")
    [ "$g" -gt "$best" ] && best=$g
  done
  awk -v us="$best" 'BEGIN { printf "%.1f", us / 1000 }'
}

# iteration_ms: mean time per iteration of rank 0 over its last 200 lines
iteration_ms() {
  tail -n 200 "$work/progress.0" | awk 'NR == 1 { a = $2 } { b = $2; n++ } END { if (n > 1) printf "%.3f", (b - a) / (n - 1) / 1e6; else print "?" }'
}

wait_progress_since() { # wait_progress_since US NRANKS: until every rank wrote a line after US
  local since=$1 n=$2 r last deadline=$(( $(now_us) + 120000000 ))
  while [ "$(now_us)" -lt "$deadline" ]; do
    local all=1
    for ((r = 0; r < n; r++)); do
      last=$(tail -n 1 "$work/progress.$r" 2>/dev/null | awk '{ printf "%.0f", $2 / 1000 }' || true)
      [ -n "$last" ] && [ "$last" -gt "$since" ] || { all=0; break; }
    done
    [ "$all" = 1 ] && return 0
    [ -n "$job" ] && ! kill -0 "$job" 2>/dev/null && die "the job ended early: $(tail -3 "$work/job.err")"
    sleep 0.002
  done
  die "no progress from every rank within 120 s"
}

# first_after_us US: the latest, over the ranks, of each rank's first progress time after US
first_after_us() {
  local f best=0 t
  for f in "$work"/progress.*; do
    t=$(awk -v from="$1" '$2 / 1000 > from { printf "%.0f", $2 / 1000; exit }' "$f")
    [ -n "$t" ] && [ "$t" -gt "$best" ] && best=$t
  done
  echo "$best"
}

echo "date $(date -Is)  host $(uname -n)  kernel $(uname -r)  $(nproc) CPUs"
echo "dir  $dir: $(df -PT "$dir" | awk 'NR==2 {print $2 " on " $1}')"
echo "mana $MANA_BIN   app $app   $mib MiB per rank, $reps checkpoint(s) + 1 kill/restart per rank count, $space s from a commit to the next request"
echo "targets: coordination <= $COORD_MS ms (2-4 ranks), write >= $WRITE_PCT % of dd, image <= $IMAGE_RATIO x upper-half RSS"
echo
summary=()
missed=0
for n in $ranks_list; do
  ckdir=$work/ckpt-$n
  rm -f "$work"/progress.*
  total_mib=$(( n * mib ))
  dd_before=$(dd_mbs "$total_mib")
  echo "== $n rank(s): dd ${total_mib} MiB direct+fsync: $dd_before MB/s"
  "$MANA_BIN/mana_launch" --ckptdir "$ckdir" "${forked[@]}" "$MPIEXEC" -n "$n" "$app" "$mib" 600 "$work/progress" \
    >"$work/job.out" 2>"$work/job.err" &
  job=$!
  wait_progress_since "$(now_us)" "$n"
  for ((i = 0; i < 100; i++)); do
    j=$(st --json 2>/dev/null || true)
    [ "$(json_field connected <<<"$j")" = "$n" ] && [ "$(json_field state <<<"$j")" = running ] && break
    sleep 0.05
  done
  [ "$(json_field connected <<<"$j")" = "$n" ] || die "the ranks did not connect to the coordinator"
  sleep 1 # warm-up
  pids=$(st --json | sed -n 's/^      "pid": \([0-9]*\),\{0,1\}$/\1/p')
  sync_list="" write_list="" pause_list="" ratio_list="" mbs_list=""
  for ((k = 1; k <= reps + 1; k++)); do
    kill_opt=()
    [ "$k" -gt "$reps" ] && kill_opt=(--kill)
    rss=0
    for p in $pids; do rss=$(( rss + $(window_rss_kb "$p") )); done
    iter=$(iteration_ms)
    t_req=$(now_us)
    out=$(st --checkpoint --wait "${kill_opt[@]}" 2>&1) || die "checkpoint: $out"
    t_done=$(now_us)
    if [ "${#kill_opt[@]}" -eq 0 ]; then
      j=$(st --json)
      sleep "$space"
      pause=$(max_gap_ms "$t_req" "$t_done")
    else
      # the ranks exit once it is committed: read the phase times from the manifest
      set +e; wait "$job"; rc=$?; set -e
      job=""
      [ "$rc" -eq 0 ] || die "the job exited with $rc after the kill checkpoint: $(tail -3 "$work/job.err")"
      pause="-"
      j=""
    fi
    gen=$(cat "$ckdir/LATEST")
    manifest=$(printf '%s/gen-%06d/MANIFEST' "$ckdir" "$gen")
    bytes=$(sed -n 's/^GENERATION .* bytes=\([0-9]*\).*/\1/p' "$manifest")
    if [ -n "$j" ]; then
      sync_s=$(json_field committed_sync_seconds <<<"$j")
      drain_s=$(json_field committed_drain_seconds <<<"$j")
      write_s=$(json_field committed_write_seconds <<<"$j")
      # coordination = safe point + park and drain; the write phase starts after the drain
      coord_s=$(awk -v a="$sync_s" -v b="${drain_s:-0}" 'BEGIN { printf "%.6f", a + b }')
      write_s=$(awk -v w="$write_s" -v d="${drain_s:-0}" 'BEGIN { printf "%.6f", w - d }')
      total_s=$(json_field committed_seconds <<<"$j")
    else
      sync_s="" drain_s="" coord_s="" write_s="" total_s=""
    fi
    ratio=$(awk -v b="$bytes" -v r="$rss" 'BEGIN { printf "%.4f", b / (r * 1024) }')
    if [ -n "$sync_s" ]; then
      mbs=$(awk -v b="$bytes" -v s="$write_s" 'BEGIN { printf "%.1f", (s > 0 ? b / s / 1e6 : 0) }')
      printf '   ckpt %d: request->commit %6.1f ms | coordination %7.3f ms (safe point %.3f + park and drain %.3f) | write %7.1f ms = %7.1f MB/s | image %6.1f MiB / RSS %6.1f MiB = %s | pause %s ms (iteration %s ms)\n' \
        "$k" "$(awk -v a="$t_req" -v b="$t_done" 'BEGIN { print (b - a) / 1000 }')" \
        "$(awk -v s="$coord_s" 'BEGIN { print s * 1000 }')" "$(awk -v s="$sync_s" 'BEGIN { print s * 1000 }')" \
        "$(awk -v s="${drain_s:-0}" 'BEGIN { print s * 1000 }')" "$(awk -v s="$write_s" 'BEGIN { print s * 1000 }')" \
        "$mbs" "$(awk -v b="$bytes" 'BEGIN { print b / 1048576 }')" "$(awk -v r="$rss" 'BEGIN { print r / 1024 }')" \
        "$ratio" "$pause" "$iter"
      sync_list+=" $coord_s" write_list+=" $write_s" pause_list+=" $pause" mbs_list+=" $mbs"
    else
      printf '   ckpt %d (kill): request->commit %6.1f ms | image %6.1f MiB / RSS %6.1f MiB = %s | %s\n' "$k" \
        "$(awk -v a="$t_req" -v b="$t_done" 'BEGIN { print (b - a) / 1000 }')" \
        "$(awk -v b="$bytes" 'BEGIN { print b / 1048576 }')" "$(awk -v r="$rss" 'BEGIN { print r / 1024 }')" "$ratio" "$out"
    fi
    ratio_list+=" $ratio"
    [ -n "$job" ] && sleep 0.3
  done

  # restart: until every rank made progress again
  t_r0=$(now_us)
  "$MANA_BIN/mana_restart" --ckptdir "$ckdir" "$MPIEXEC" -n "$n" >>"$work/job.out" 2>"$work/job.err" &
  job=$!
  wait_progress_since "$t_r0" "$n"
  t_r1=$(first_after_us "$t_r0")
  restart_ms=$(awk -v a="$t_r0" -v b="$t_r1" 'BEGIN { printf "%.1f", (b - a) / 1000 }')
  st --quit >/dev/null 2>&1 || true
  set +e; wait "$job"; set -e
  job=""
  dd_after=$(dd_mbs "$total_mib")
  dd_mean=$(awk -v a="$dd_before" -v b="$dd_after" 'BEGIN { printf "%.1f", (a + b) / 2 }')
  echo "   restart: ${restart_ms} ms from mana_restart to every rank's next iteration; dd after: $dd_after MB/s"

  # medians over the plain checkpoints, and the verdicts
  med() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
  worst() { tr ' ' '\n' | grep . | sort -g | tail -1; }
  sync_med_ms=$(awk -v s="$(med <<<"$sync_list")" 'BEGIN { printf "%.3f", s * 1000 }')
  sync_max_ms=$(awk -v s="$(worst <<<"$sync_list")" 'BEGIN { printf "%.3f", s * 1000 }')
  mbs_med=$(med <<<"$mbs_list")
  write_pct=$(awk -v m="$mbs_med" -v d="$dd_mean" 'BEGIN { printf "%.1f", (d > 0 ? 100 * m / d : 0) }')
  ratio_max=$(worst <<<"$ratio_list")
  pause_med=$(med <<<"$pause_list")
  v_coord=PASS v_write=PASS v_image=PASS
  if [ "$n" -ge 2 ] && awk -v a="$sync_max_ms" -v t="$COORD_MS" 'BEGIN { exit !(a > t) }'; then v_coord=MISS; fi
  [ "$n" -lt 2 ] && v_coord="n/a (1 rank)"
  awk -v a="$write_pct" -v t="$WRITE_PCT" 'BEGIN { exit !(a < t) }' && v_write=MISS
  # Forked writers run at nice 10 beside the resumed application, whose ranks busy-poll in MPI:
  # they are meant to take longer than an idle dd, so their rate is shown, not judged.
  [ ${#forked[@]} -gt 0 ] && v_write="(forked: no target)"
  awk -v a="$ratio_max" -v t="$IMAGE_RATIO" 'BEGIN { exit !(a > t) }' && v_image=MISS
  for v in "$v_coord" "$v_write" "$v_image"; do [ "$v" = MISS ] && missed=$(( missed + 1 )); done
  summary+=("$(printf '%5s %12s %12s %12s %8s %9s %10s %12s %10s' "$n" "$sync_med_ms" "$sync_max_ms" "$mbs_med" "$dd_mean" "$write_pct%" "$ratio_max" "$pause_med" "$restart_ms")")
  summary+=("$(printf '      coordination %s (max %s ms vs %s ms), write %s (%s%% vs %s%%), image %s (%s vs %s)' "$v_coord" "$sync_max_ms" "$COORD_MS" "$v_write" "$write_pct" "$WRITE_PCT" "$v_image" "$ratio_max" "$IMAGE_RATIO")")
  echo
done

echo "SUMMARY (medians over the plain checkpoints; pause and restart in ms)"
printf '%5s %12s %12s %12s %8s %9s %10s %12s %10s\n' ranks coord_med_ms coord_max_ms write_MB/s dd_MB/s "% of dd" image/RSS pause_med_ms restart_ms
printf '%s\n' "${summary[@]}"
if [ "$overhead" = 1 ]; then
  echo
  echo "== runtime overhead without checkpoints (benchmarks/run_overhead.sh)"
  MANA_BIN=$MANA_BIN "$src/benchmarks/run_overhead.sh" || true
fi
[ "$missed" -eq 0 ] && { echo "VERDICT: every target met"; exit 0; }
echo "VERDICT: $missed target(s) missed"
exit 1
