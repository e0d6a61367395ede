#!/usr/bin/env bash
# run_at_calls.sh - checkpoint a program at chosen MPI calls, kill and restart it (or let it go
# on), and compare with a native run: deterministic moments instead of wall-clock delays.
#
# usage: run_at_calls.sh [options] PROGRAM [ARGS...]
#
# Runs PROGRAM natively once (the reference stdout and exit status), then once under
# mana_launch with MANA_TEST_COUNT_CALLS, which must match the native run too, to learn how
# many times rank R crosses into the lower half (N), then, for each chosen call K:
#
#   MANA_TEST_CHECKPOINT_AT_CALL=K MANA_TEST_CHECKPOINT_RANK=R \
#     mana_launch --ckptdir D mpiexec.mpich -n RANKS PROGRAM ARGS
#   and, when a generation was committed, a restart in one of two forms, used in turn:
#     outer (launcher form)   mana_restart --ckptdir D mpiexec.mpich -n RANKS
#     inner (per-rank form)   mpiexec.mpich -n RANKS mana_restart --ckptdir D
#
# The killed run must exit 0, the restart with the native status, and the two runs' stdout,
# concatenated, must equal the native stdout byte for byte.  A plain checkpoint (--keep-every)
# must leave a job that goes on to the native stdout and status.  A point whose checkpoint was
# not taken must match the native run alone.  Each point prints one line:
#   K restarted [FORM, T s]      killed at K and restarted, identical to native
#   K continued [plain checkpoint, T s]   the job went on after it, identical to native
#   K refused: REASON            a rank refused (state mana cannot save yet); a failure with
#                                --refusals-fail
#   K no checkpoint[: WHY]       MPI was finalized or a rank had ended first, or the request
#                                was not taken
#   K FAIL: WHY                  followed by the tails of the logs that tell why
# A failing point keeps its logs (the work directory is printed); the last line names the
# first failure with its call, the seed or spread, and the options that replay it alone.
#
# Which calls (one of; default --moments 5 --seed 1):
#   --moments K          K calls drawn from --seed S (default 1, printed) in [FROM, TO]
#                        (default TO: 0.9 x N, so that every checkpoint falls inside the run)
#   --points P           P calls evenly spaced inside [FROM, TO], ends excluded (default
#                        TO: N; the first call may come before every rank is connected,
#                        the last is MPI_Finalize)
#   --calls LIST         exactly these calls (comma separated; no counting run)
#   --from K0, --to K1   the range of --moments and --points (FROM default 1)
# Options:
#   -n, --ranks RANKS    ranks (default 2)
#   --rank R             the rank whose calls are counted and that asks for the checkpoint
#                        (default 0)
#   --first J            before each point K, a plain checkpoint at call J < K of the same run
#                        (MANA_TEST_CHECKPOINT_AT_CALL=J,K): a kill point must then commit
#                        both, and its restart reads the chain of two generations
#   --from-first         with --first, the restart reads generation 1 alone (mana_restart
#                        --generation 1): the plain checkpoint taken while the job ran, as
#                        after a crash past it (a forked writer's image, with
#                        MANA_FORKED_WRITERS=1); the program must print nothing before its end
#   --keep-every M       every M-th point is a plain checkpoint instead of a kill (default 0:
#                        none)
#   --restart-forms L    restart forms used in turn, comma separated (default outer,inner)
#   --refusals-fail      a refused checkpoint is a failure (state that must be restartable)
#   --min-restarts M     fail unless at least M points were killed and restarted (default 1,
#                        0 when every point is plain)
#   --max-raises R       fail a point whose committed generation took more than R raises
#                        (the coordinator's count: how often a rank moved a target while the
#                        ranks converged; each costs every rank a round)
#   --bin DIR            mana_launch and mana_restart (default $MANA_BIN, else <build>/bin when
#                        PROGRAM is in <build>/tests/..., else <checkout>/build/bin)
#   --timeout S          limit of every run (default: 600 s for the native run, then 4 x the
#                        longer of the native run and the counting run + 60 s, at least 120 s:
#                        a loaded machine is slow for all of them)
#   --keep               keep the whole work directory (printed)
#   --rank-output        compare each rank's stdout on its own (mpiexec -outfile-pattern), in
#                        rank order, instead of the launcher's merged stdout: for programs
#                        whose ranks all print, where the merged order is a race natively too
#   --before-restart CMD run CMD (sh -c) after each killed run, before its restart: what
#                        a restart on another node would not find, e.g. the program's files
#                        in /dev/shm
#   --restart-prefix CMD each restart runs under CMD (words split on spaces), e.g. a time
#                        namespace whose clocks differ as on another node:
#                        --restart-prefix "unshare --time --fork --monotonic 86400"
#   --normalise CMD      every stdout compared (native and under mana, after the killed and
#                        restarted runs' are joined) is first piped through CMD (sh -c): for
#                        programs that print timings, e.g. --normalise "sed 's/ [0-9.]* s$//'"
# ARGS may contain @WORK@, replaced by a private directory (for programs that write files).
# Exit status: 0 every point identical to native, 1 a failure (the last line says which),
# 2 usage error.
set -uo pipefail

me=run_at_calls.sh
usage() {
  awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0" >&2
  exit 2
}
die_usage() { echo "$me: $*" >&2; exit 2; }

ranks=2 rank=0 bin=${MANA_BIN:-} mode="" moments=5 seed=1 seed_given=0 points=0 calls=""
from="" to="" first="" keep_every=0 rforms=outer,inner refusals_fail=0 min_restarts="" limit="" keep=0 max_raises=""
rank_output=0 normalise="" before_restart="" from_first=0
restart_prefix=()
choose() { # choose MODE: the options that choose the calls exclude each other
  [ -z "$mode" ] || [ "$mode" = "$1" ] || die_usage "--$mode and --$1 exclude each other"
  mode=$1
}
while [ $# -gt 0 ]; do
  opt=$1
  case "$opt" in
    --*=*) set -- "${opt%%=*}" "${opt#*=}" "${@:2}"; continue ;;
    -n|--ranks|--rank|--moments|--seed|--points|--calls|--from|--to|--first|--keep-every|\
    --restart-forms|--min-restarts|--max-raises|--bin|--timeout|--normalise|--before-restart|\
    --restart-prefix)
      [ $# -ge 2 ] || die_usage "$opt needs a value"
      val=$2
      shift 2 ;;
    --refusals-fail) refusals_fail=1; shift; continue ;;
    --keep) keep=1; shift; continue ;;
    --from-first) from_first=1; shift; continue ;;
    --rank-output) rank_output=1; shift; continue ;;
    -h|--help) usage ;;
    --) shift; break ;;
    -*) die_usage "unknown option $opt (see --help)" ;;
    *) break ;;
  esac
  case "$opt" in
    -n|--ranks) ranks=$val ;;
    --rank) rank=$val ;;
    --moments) choose moments; moments=$val ;;
    --seed) seed=$val seed_given=1 ;;
    --points) choose points; points=$val ;;
    --calls) choose calls; calls=$val ;;
    --from) from=$val ;;
    --to) to=$val ;;
    --first) first=$val ;;
    --keep-every) keep_every=$val ;;
    --restart-forms) rforms=$val ;;
    --min-restarts) min_restarts=$val ;;
    --max-raises) max_raises=$val ;;
    --bin) bin=$val ;;
    --timeout) limit=$val ;;
    --normalise) normalise=$val ;;
    --before-restart) before_restart=$val ;;
    --restart-prefix) read -r -a restart_prefix <<<"$val" ;;
  esac
done
[ $# -ge 1 ] || die_usage "no program (see --help)"
mode=${mode:-moments}
whole() { case "$2" in ''|*[!0-9]*) die_usage "$1 must be a whole number, not '$2'" ;; esac; }
whole --ranks "$ranks"; whole --rank "$rank"; whole --moments "$moments"; whole --seed "$seed"
whole --points "$points"; whole --keep-every "$keep_every"
[ -z "$from" ] || whole --from "$from"
[ -z "$to" ] || whole --to "$to"
[ -z "$first" ] || whole --first "$first"
[ "$from_first" = 0 ] || [ -n "$first" ] || die_usage "--from-first needs --first"
[ -z "$min_restarts" ] || whole --min-restarts "$min_restarts"
[ -z "$limit" ] || whole --timeout "$limit"
[ "$ranks" -ge 1 ] || die_usage "--ranks must be at least 1"
[ "$rank" -lt "$ranks" ] || die_usage "--rank $rank: there are only $ranks ranks"
[ "$seed_given" = 0 ] || [ "$mode" = moments ] || die_usage "--seed goes with --moments"
[ "$mode" != calls ] || [ -z "$from$to" ] || die_usage "--from and --to go with --moments or --points"
case "$mode" in
  moments) [ "$moments" -ge 1 ] || die_usage "--moments must be at least 1" ;;
  points) [ "$points" -ge 1 ] || die_usage "--points must be at least 1" ;;
  calls) [[ "$calls" =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] ||
           die_usage "--calls must be calls counted from 1, comma separated, not '$calls'" ;;
esac
IFS=, read -r -a restart_forms <<<"$rforms"
[ ${#restart_forms[@]} -ge 1 ] || die_usage "--restart-forms is empty"
for f in "${restart_forms[@]}"; do
  case "$f" in outer|inner) ;; *) die_usage "unknown restart form '$f' (outer or inner)" ;; esac
done

program=$1
shift
prog_args=("$@")
[ -x "$program" ] || die_usage "program $program not found or not executable"
if [ -z "$bin" ]; then
  case "$program" in
    */tests/*) bin=${program%%/tests/*}/bin ;;
    *) bin=$(cd "$(dirname "$0")/../.." && pwd)/build/bin ;;
  esac
fi
[ -x "$bin/mana_launch" ] && [ -x "$bin/mana_restart" ] ||
  die_usage "no mana_launch and mana_restart in '$bin' (--bin)"

work=$(mktemp -d "${TMPDIR:-/tmp}/mana-at-calls.XXXXXX")
failed=0
cleanup() {
  if [ "$keep" = 1 ] || [ "$failed" -gt 0 ]; then
    echo "$me: work directory kept: $work"
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT
for sig in INT TERM HUP; do
  trap "echo \"$me: FAIL: killed by SIG$sig\"; failed=1; exit 1" "$sig"
done
mkdir -p "$work/files"
args=()
for a in "${prog_args[@]}"; do args+=("${a//@WORK@/$work/files}"); done
# launcher OUT: the launcher command in L; with --rank-output rank R's stdout goes to OUT.rR
launcher() {
  L=(mpiexec.mpich)
  [ "$rank_output" = 0 ] || L+=(-outfile-pattern "$1.r%r")
  L+=(-n "$ranks")
}
# gather OUT RUN...: OUT becomes the stdout of the RUNs one after the other; with --rank-output,
# the launchers' own stdout, then for each rank a "rank R:" line and its stdout in every RUN;
# with --normalise, through its command
gather() {
  local out=$1 r b
  shift
  {
    for b in "$@"; do cat "$b"; done
    for ((r = 0; rank_output && r < ranks; r++)); do
      echo "rank $r:"
      for b in "$@"; do [ ! -e "$b.r$r" ] || cat "$b.r$r"; done # made at a rank's first output
    done
  } >"$out.gathered"
  if [ -n "$normalise" ]; then
    sh -c "$normalise" <"$out.gathered" >"$out.normalised" ||
      fail "--normalise '$normalise' failed on the stdout of $*"
    mv "$out.normalised" "$out.gathered"
  fi
  mv "$out.gathered" "$out"
}

now_ms() { local t=${EPOCHREALTIME/./}; echo $(( t / 1000 )); }
say() { echo "$me: $*"; }
fail() { failed=1; say "FAIL: $*"; exit 1; }
tail_of() { [ -s "$1" ] && tail -n "${2:-5}" "$1" | sed "s|^|    ${1#"$work"/}: |" || true; }
one_line() { tail -n "${2:-2}" "$1" 2>/dev/null | tr '\n' ' ' | cut -c1-300; }
timed_out() { [ "$1" -eq 124 ] || [ "$1" -eq 137 ]; }
# The limit of one run under mana: four times a measured run and a minute, at least 120 s.
scaled_limit() { local s=$(( $1 * 4 / 1000 + 60 )); echo $(( s < 120 ? 120 : s )); }

# ---- native reference, and the range of calls under mana ----------------------------------
t=$(now_ms)
launcher "$work/native.out"
timeout -k 5 "${limit:-600}" "${L[@]}" "$program" "${args[@]}" </dev/null \
  >"$work/native.out" 2>"$work/native.err"
native_rc=$?
gather "$work/native.out" "$work/native.out"
native_ms=$(( $(now_ms) - t ))
timed_out "$native_rc" && fail "the native run timed out after ${limit:-600} s"
run_limit=${limit:-$(scaled_limit "$native_ms")}
say "${program}${prog_args[*]:+ ${prog_args[*]}}: $ranks rank(s); native run: exit $native_rc, $(wc -l <"$work/native.out") lines, $native_ms ms"

if [ "$mode" != calls ]; then
  t=$(now_ms)
  launcher "$work/count.out"
  MANA_TEST_COUNT_CALLS=$work/counts timeout -k 5 "$run_limit" "$bin/mana_launch" \
    --ckptdir "$work/count.ck" "${L[@]}" "$program" "${args[@]}" </dev/null \
    >"$work/count.out" 2>"$work/count.err"
  rc=$?
  gather "$work/count.out" "$work/count.out"
  count_ms=$(( $(now_ms) - t ))
  timed_out "$rc" && fail "the counting run under mana timed out after $run_limit s: $(one_line "$work/count.err")"
  [ "$rc" -eq "$native_rc" ] ||
    fail "the counting run under mana exited $rc, native $native_rc: $(one_line "$work/count.err")"
  cmp -s "$work/native.out" "$work/count.out" ||
    fail "the counting run's stdout under mana differs from native: $(diff "$work/native.out" "$work/count.out" | head -4 | tr '\n' ' ')"
  n=$(awk -v r="$rank" '$1 == "rank" && $2 == r && $3 == "calls" { print $4; exit }' "$work/counts" 2>/dev/null)
  [ -n "$n" ] && [ "$n" -ge 1 ] || fail "rank $rank reported no call count ($(cat "$work/counts" 2>/dev/null))"
  [ -n "$limit" ] || run_limit=$(scaled_limit $(( count_ms > native_ms ? count_ms : native_ms )))
  lo=${from:-1}
  if [ "$mode" = moments ]; then hi=${to:-$(( n * 9 / 10 ))}; else hi=${to:-$n}; fi
  [ "$hi" -ge "$lo" ] && [ "$lo" -ge 1 ] ||
    fail "no calls to choose from: range $lo..$hi (rank $rank makes $n calls; --from/--to)"
  list=()
  if [ "$mode" = moments ]; then
    # xorshift from the seed: the same seed gives the same moments
    x=$(( (seed * 2654435761 + 12345) & 0xffffffff ))
    for ((i = 0; i < moments; i++)); do
      x=$(( (x ^ (x << 13)) & 0xffffffff )); x=$(( x ^ (x >> 17) )); x=$(( (x ^ (x << 5)) & 0xffffffff ))
      list+=($(( lo + x % (hi - lo + 1) )))
    done
    chosen="seed $seed"
  else
    for ((i = 1; i <= points; i++)); do
      list+=($(( lo + (hi - lo) * i / (points + 1) )))
    done
    chosen="$points points"
  fi
  calls=$(IFS=,; echo "${list[*]}")
  say "rank $rank makes $n calls under mana ($count_ms ms); $chosen in $lo..$hi: calls $calls"
else
  chosen="calls $calls"
fi
IFS=, read -r -a list <<<"$calls"
if [ -n "$first" ]; then
  for k in "${list[@]}"; do
    [ "$k" -gt "$first" ] || die_usage "--first $first must come before every point (call $k)"
  done
  chosen+=", each after a plain checkpoint at call $first"
  [ "$from_first" = 0 ] || chosen+=", restarted from that one"
fi

total=${#list[@]} kills=0
for ((i = 1; i <= total; i++)); do
  [ "$keep_every" -gt 0 ] && [ $(( i % keep_every )) -eq 0 ] || kills=$(( kills + 1 ))
done
if [ -z "$min_restarts" ]; then min_restarts=$(( kills > 0 ? 1 : 0 )); fi
[ "$min_restarts" -le "$kills" ] ||
  die_usage "--min-restarts $min_restarts, but only $kills of the $total points are kills"
say "limit per run $run_limit s; $kills kill point(s), $(( total - kills )) plain; restart forms ${restart_forms[*]}"

# ---- one point ----------------------------------------------------------------------------
form_name() { [ "$1" = outer ] && echo "launcher form" || echo "per-rank form"; }

# The reason the coordinator gave when the checkpoint of the point's first run was aborted.
abort_reason() {
  sed -n 's/.*generation [0-9]* aborted: //p' "$d/ck/.mana/coordinator.log" 2>/dev/null | head -1
}

# leaks FILE...: MPI's report of objects left at MPI_Finalize (MPICH's datatype engine) in the
# stderr of a run under mana, when the native run has none; prints the first, 0 if there is one.
leaks() {
  grep -q 'yaksa: .*leaked' "$work/native.err" 2>/dev/null && return 1
  local line
  line=$(grep -h 'yaksa: .*leaked' "$@" 2>/dev/null | head -1)
  [ -n "$line" ] && echo "$line"
}

# too_many_raises: the committed generation's raise count, printed when over --max-raises.
too_many_raises() {
  [ -n "$max_raises" ] || return 1
  local n
  n=$(sed -n 's/.* committed: .* epochs, \([0-9]*\) raises,.*/\1/p' "$d/ck/.mana/coordinator.log" 2>/dev/null | tail -1)
  [ -n "$n" ] && [ "$n" -gt "$max_raises" ] && echo "$n"
}

# point K PLAIN FORM: runs one point in $d; sets result (restarted, continued, refused, none,
# fail, timeout), why, and logs (the files that tell why a point failed)
point() {
  local k=$1 plain=$2 form=$3 rc1 rc2 reason plain_env=()
  why="" logs=("$d/err1" "$d/ck/.mana/coordinator.log")
  [ "$plain" = 1 ] && plain_env=(MANA_TEST_CHECKPOINT_KEEP=1)
  launcher "$d/out1"
  env MANA_TEST_CHECKPOINT_AT_CALL="${first:+$first,}$k" MANA_TEST_CHECKPOINT_RANK="$rank" "${plain_env[@]}" \
    timeout -k 5 "$run_limit" "$bin/mana_launch" --ckptdir "$d/ck" "${L[@]}" \
    "$program" "${args[@]}" </dev/null >"$d/out1" 2>"$d/err1"
  rc1=$?
  gather "$d/out1.all" "$d/out1"
  if timed_out "$rc1"; then
    result=timeout why="the run with the checkpoint timed out after $run_limit s"
  elif [ -n "$first" ] && [ -e "$d/ck/LATEST" ] && [ "$(cat "$d/ck/LATEST")" = 1 ]; then
    # the plain one at J alone: the run went on past K to its end
    reason=$(abort_reason)
    result=fail why="only the plain checkpoint at call $first was committed, not the one at $k${reason:+: $reason}"
  elif [ -e "$d/ck/LATEST" ] && [ "$plain" = 0 ]; then
    if [ "$rc1" -ne 0 ]; then
      result=fail why="the killed run exited $rc1 (expected 0): $(one_line "$d/err1")"
      return
    fi
    local cmd
    if [ -n "$before_restart" ] && ! sh -c "$before_restart" >"$d/before-restart.log" 2>&1; then
      result=fail why="--before-restart failed: $(one_line "$d/before-restart.log")"
      return
    fi
    launcher "$d/out2"
    local gen=()
    [ "$from_first" = 0 ] || gen=(--generation 1)
    if [ "$form" = outer ]; then
      cmd=("$bin/mana_restart" --ckptdir "$d/ck" "${gen[@]}" "${L[@]}")
    else
      cmd=("${L[@]}" "$bin/mana_restart" --ckptdir "$d/ck" "${gen[@]}")
    fi
    timeout -k 5 "$run_limit" "${restart_prefix[@]}" "${cmd[@]}" </dev/null >"$d/out2" 2>"$d/err2"
    rc2=$?
    logs=("$d/err1" "$d/err2" "$d/ck/.mana/coordinator.log")
    gather "$d/out" "$d/out1" "$d/out2"
    if timed_out "$rc2"; then
      result=timeout why="the restart ($(form_name "$form")) timed out after $run_limit s"
    elif [ "$rc2" -ne "$native_rc" ]; then
      result=fail why="the restart ($(form_name "$form")) exited $rc2, native $native_rc: $(one_line "$d/err2")"
    elif ! cmp -s "$work/native.out" "$d/out"; then
      result=fail why="the stdout after the restart ($(form_name "$form")) differs from native: $(diff "$work/native.out" "$d/out" | head -4 | tr '\n' ' ' | cut -c1-300)"
    elif reason=$(leaks "$d/err1" "$d/err2"); then
      result=fail why="MPI reported leaks a native run does not: $reason"
    elif reason=$(too_many_raises); then
      result=fail why="the checkpoint took $reason raises to converge, more than --max-raises $max_raises"
    else
      result=restarted
    fi
  elif [ "$rc1" -ne "$native_rc" ]; then
    result=fail why="exit $rc1 ($([ -e "$d/ck/LATEST" ] && echo "after a plain checkpoint" || echo "no checkpoint was committed")), native $native_rc: $(one_line "$d/err1")"
  elif ! cmp -s "$work/native.out" "$d/out1.all"; then
    result=fail why="the stdout $([ -e "$d/ck/LATEST" ] && echo "after a plain checkpoint" || echo "without a checkpoint") differs from native: $(diff "$work/native.out" "$d/out1.all" | head -4 | tr '\n' ' ' | cut -c1-300)"
  elif [ -e "$d/ck/LATEST" ]; then
    result=continued
  else
    reason=$(abort_reason)
    case "$reason" in
      "") result=none
          why=$(sed -n 's/^mana: test checkpoint at MPI call [0-9]*: //p' "$d/err1" | head -1) ;;
      *"refused the checkpoint: the application has finalized"*)
          result=none why="MPI was finalized (${reason%% refused*})" ;;
      *"refused the checkpoint: "*)
          result=refused why=${reason#*refused the checkpoint: }
          [ "$refusals_fail" = 0 ] || result=fail why="refused, which --refusals-fail forbids: $why" ;;
      *" disconnected during the checkpoint")
          result=none why="a rank had ended (${reason% during*})" ;;
      *) result=fail why="the checkpoint was aborted: $reason" ;;
    esac
  fi
}

# ---- every point --------------------------------------------------------------------------
restarted=0 continued=0 refused=0 none=0 first_fail="" nkill=0
for ((i = 1; i <= total; i++)); do
  k=${list[$((i - 1))]}
  plain=0
  [ "$keep_every" -gt 0 ] && [ $(( i % keep_every )) -eq 0 ] && plain=1
  form=${restart_forms[$(( nkill % ${#restart_forms[@]} ))]}
  [ "$plain" = 1 ] || nkill=$(( nkill + 1 ))
  d=$work/p$i-k$k
  mkdir -p "$d"
  t=$(now_ms)
  point "$k" "$plain" "$form"
  t=$(( $(now_ms) - t ))
  secs=$(printf '%d.%d' $(( t / 1000 )) $(( t % 1000 / 100 )))
  case "$result" in
    restarted) echo "$k restarted [$(form_name "$form"), $secs s]"; restarted=$(( restarted + 1 )) ;;
    continued) echo "$k continued [plain checkpoint, $secs s]"; continued=$(( continued + 1 )) ;;
    refused) echo "$k refused: $why"; refused=$(( refused + 1 )) ;;
    none) echo "$k no checkpoint${why:+: $why}"; none=$(( none + 1 )) ;;
    fail|timeout)
      for f in "${logs[@]}"; do tail_of "$f"; done
      echo "$k FAIL: $why"
      failed=$(( failed + 1 ))
      if [ -z "$first_fail" ]; then
        replay="--calls $k${first:+ --first $first}"
        [ "$from_first" = 0 ] || replay+=" --from-first"
        [ "$rank" -eq 0 ] || replay+=" --rank $rank"
        [ "$plain" = 0 ] || replay+=" --keep-every 1"
        [ "$plain" = 1 ] || [ "$form" = outer ] || replay+=" --restart-forms inner"
        [ "$rank_output" = 0 ] || replay+=" --rank-output"
        [ -z "$normalise" ] || replay+=" --normalise $(printf %q "$normalise")"
        first_fail="call $k (point $i of $total, $chosen): $why; logs in $d; replay: $me -n $ranks $replay ${program}${prog_args[*]:+ ${prog_args[*]}}"
      fi
      if [ "$result" = timeout ]; then
        say "the remaining $(( total - i )) point(s) are not run after a timeout"
        break
      fi
      continue ;;
  esac
  # a point that wrote an image is large; refusals and missed ones are kept for --min-restarts
  [ "$keep" = 1 ] || [ "$result" = refused ] || [ "$result" = none ] || rm -rf "$d"
done

say "$restarted restarted, $continued continued after a plain checkpoint, $refused refused, $none without a checkpoint, $failed failed ($chosen)"
[ "$failed" -eq 0 ] || fail "$first_fail"
[ "$restarted" -ge "$min_restarts" ] ||
  fail "only $restarted of $kills kill points restarted, --min-restarts $min_restarts ($chosen)"
say "PASS: every point identical to native ($program, $ranks ranks, $chosen)"
