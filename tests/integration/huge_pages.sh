#!/usr/bin/env bash
# huge_pages.sh - with forked writers the application's large anonymous mappings get
# transparent huge pages (lower-half/huge_pages.h: fork copies 512 times fewer page-table
# entries), at launch and again after a restart; MANA_HUGE_PAGES=0 and the default
# (synchronous writers) leave 4 KiB pages. Each run's output equals the native run's.
#
#   1. MANA_FORKED_WRITERS=1: tests/programs/iterative (4 MiB arrays per rank) held at step
#      1000: every rank's upper half has AnonHugePages; a forked checkpoint, then a kill
#      checkpoint; the restart, held at step 2000, has as many AnonHugePages again within
#      seconds (read into 4 KiB pages, then collapsed); it ends as natively.
#   2. the application rewrites its arrays while a forked writer still shares them (the writer
#      held by MANA_TEST_WRITER_HOLD): the copy-on-write splits the huge pages; once the
#      generation is written they are huge again within seconds
#      (lower-half/huge_pages_collapse.c), long before khugepaged would get to them; the job
#      ends as natively. The writers run at nice 10.
#   3. MANA_FORKED_WRITERS=1 MANA_HUGE_PAGES=0, and 4. no forked writers: no AnonHugePages.
# Exits 77 (skipped) when the kernel's THP setting is "never".
#
# usage: huge_pages.sh --bin DIR --program PATH [--timeout S]
set -euo pipefail

me=huge_pages.sh
. "$(dirname "$0")/job_lib.sh"
parse_job_args tests/programs/iterative "$@"
thp=/sys/kernel/mm/transparent_hugepage/enabled
if [ ! -r $thp ] || grep -q '\[never\]' $thp; then
  say "SKIP: transparent huge pages are off here ($(cat $thp 2>/dev/null || echo "no $thp"))"
  exit 77
fi

job_workdir huge-pages

args=("$program" 3000)
# huge_kb CKPTDIR: the least, over the ranks, of the AnonHugePages (kB) of their upper halves
huge_kb() {
  local pids p least="" end=$((SECONDS + timeout))
  until pids=$("$bin/mana_status" --ckptdir "$1" --json 2>/dev/null |
    sed -n 's/^      "pid": \([0-9]*\),\{0,1\}$/\1/p') && [ "$(echo $pids | wc -w)" -eq 2 ]; do
    [ $SECONDS -lt $end ] || fail "mana_status does not list the two ranks' pids"
    sleep 0.1
  done
  for p in $pids; do
    kb=$(awk '/^[0-9a-f]+-[0-9a-f]+ / { split($1, a, "-"); win = length(a[1]) == 12 && substr(a[1], 1, 2) == "60"; next }
              /^AnonHugePages:/ { if (win) kb += $2 } END { print kb + 0 }' "/proc/$p/smaps")
    if [ -z "$least" ] || [ "$kb" -lt "$least" ]; then least=$kb; fi
  done
  echo "$least"
}
# run_held NAME ENV...: launches the held job with ENV (job=its pid), waits for step 1000 and
# sets kb to huge_kb
run_held() {
  local name=$1
  shift
  env "$@" ITERATIVE_PROGRESS=500 ITERATIVE_HOLD="$work/$name-h1:1000,$work/$name-h2:2000" \
    "$bin/mana_launch" --ckptdir "$work/$name" mpiexec.mpich -n 2 "${args[@]}" \
    >"$work/$name.out" 2>"$work/$name.err" &
  job=$!
  wait_step "$work/$name.err" 1000
  kb=$(huge_kb "$work/$name")
}

mpiexec.mpich -n 2 "${args[@]}" >"$work/native.out" 2>"$work/native.err" ||
  fail "the native run failed: $(tail -3 "$work/native.err")"

# ---- 1. forked writers: huge pages, and again after a restart --------------------------------
run_held forked MANA_FORKED_WRITERS=1
[ "$kb" -gt 0 ] || fail "with forked writers a rank's upper half has no huge pages"
out=$(ask "$work/forked" --checkpoint) || fail "the forked checkpoint: $out"
out=$(ask "$work/forked" --kill) || fail "the kill checkpoint: $out"
wait_job "the job after the kill checkpoint"
touch "$work/forked-h1"
MANA_FORKED_WRITERS=1 "$bin/mana_restart" --ckptdir "$work/forked" mpiexec.mpich -n 2 \
  >"$work/restart.out" 2>"$work/restart.err" &
job=$!
wait_step "$work/restart.err" 2000
# the restart reads the pages into 4 KiB pages and collapses them in the background
end=$((SECONDS + 8))
until kb2=$(huge_kb "$work/forked"); [ "$kb2" -ge "$kb" ]; do
  [ $SECONDS -lt $end ] || fail "8 s after the restarted job reached step 2000 a rank's upper half has $kb2 kB of huge pages (was $kb)"
  sleep 0.1
done
touch "$work/forked-h2"
wait_job "the restarted job" "$work/restart.err"
cmp -s "$work/restart.out" "$work/native.out" || fail "the restarted job's output differs from native"
say "forked writers: $kb kB of huge pages per rank at launch, $kb2 kB after the restart; output as native"

# ---- 2. huge pages split while a writer runs are huge again after it ------------------------
run_held split MANA_FORKED_WRITERS=1 MANA_TEST_WRITER_HOLD="$work/writer-go"
[ "$kb" -gt 0 ] || fail "split: a rank's upper half has no huge pages at launch"
ask "$work/split" --checkpoint >"$work/split-ask.out" 2>&1 &
asker=$!
until "$bin/mana_status" --ckptdir "$work/split" --json 2>/dev/null | grep -Eq '"phase": *"writing"'; do
  kill -0 $asker 2>/dev/null || fail "split: the checkpoint ended early: $(cat "$work/split-ask.out")"
  sleep 0.05
done
# the writers run at nice 10 (MANA_WRITER_NICE's default), or at their rank's when higher
pids=$("$bin/mana_status" --ckptdir "$work/split" --json | sed -n 's/^      "pid": \([0-9]*\),\{0,1\}$/\1/p')
for p in $pids; do
  w=$(pgrep -P "$p" | head -1)
  [ -n "$w" ] || fail "split: rank pid $p has no writer process"
  own=$(awk '{ print $19 }' "/proc/$p/stat") nice=$(awk '{ print $19 }' "/proc/$w/stat")
  want=$(( own > 10 ? own : 10 ))
  [ "$nice" = "$want" ] || fail "split: the writer $w of rank pid $p (nice $own) runs at nice $nice, not $want"
done
touch "$work/split-h1" # the arrays are rewritten a thousand times while the writer waits
# The least seen while they are rewritten, up to step 2000: once the copies are made,
# khugepaged may collapse the 4 KiB pages again at any moment (it did under load, before the
# one reading after step 2000, and the test failed for want of a split).
kb_split=$kb end=$((SECONDS + timeout))
until awk '$1 == "iterative:" && $2 == "step" && $3 >= 2000 { f = 1 } END { exit !f }' \
        "$work/split.err"; do
  now=$(huge_kb "$work/split")
  [ "$now" -ge "$kb_split" ] || kb_split=$now
  [ $SECONDS -lt $end ] || fail "no step 2000 in $work/split.err after ${timeout}s"
  kill -0 "$job" 2>/dev/null || fail "the job ended before step 2000: $(tail -3 "$work/split.err")"
  sleep 0.02
done
now=$(huge_kb "$work/split")
[ "$now" -ge "$kb_split" ] || kb_split=$now
[ "$kb_split" -lt "$kb" ] || fail "split: still $kb_split kB of huge pages during the rewrite (the test needs a split)"
touch "$work/writer-go"
wait $asker || fail "split: the checkpoint: $(cat "$work/split-ask.out")"
end=$((SECONDS + 8)) # khugepaged scans 16 MiB per 10 s; the collapse after a writer takes ms
until kb_again=$(huge_kb "$work/split"); [ "$kb_again" -ge "$kb" ]; do
  [ $SECONDS -lt $end ] || fail "split: $kb_again kB of huge pages 8 s after the writer (was $kb, $kb_split while it ran)"
  sleep 0.1
done
touch "$work/split-h2"
wait_job "split: the job" "$work/split.err"
cmp -s "$work/split.out" "$work/native.out" || fail "split: the output differs from native"
say "a rewrite during the writer split the huge pages ($kb -> $kb_split kB per rank); $kb_again kB after it"

# ---- 3. and 4. no huge pages when asked not to, or without forked writers -------------------
for name in optout default; do
  if [ $name = optout ]; then run_held $name MANA_FORKED_WRITERS=1 MANA_HUGE_PAGES=0
  else run_held $name MANA_FORKED_WRITERS=; fi
  [ "$kb" -eq 0 ] || fail "$name: $kb kB of huge pages in a rank's upper half"
  touch "$work/$name-h1" "$work/$name-h2"
  wait_job "$name: the job"
  cmp -s "$work/$name.out" "$work/native.out" || fail "$name: the output differs from native"
done
say "MANA_HUGE_PAGES=0 and synchronous writers: 4 KiB pages"
say "PASS"
