# forms_lib.sh - sourced by the scripts that run one real program natively, under both
# mana_launch forms and through tests/restart/run_at_calls.sh (bagel.sh, mpy.sh).
#
# The sourcing script sets:
#   app        array: the program and its arguments
#   ranks      the -n of every run
#   bin        mana's bin directory (absolute)
#   mpiexec    MPICH's launcher (never plain mpiexec: it may point at Open MPI)
#   limit      the limit of one run, in seconds
#   tmp        a private directory for the runs
#   normalise  a filter command (sh -c) every compared stdout goes through; empty for none
#   shown_env  the environment shown in front of reproducing commands (may be empty)
# and defines fail MESSAGE, which prints one FAIL line and counts it.

# forms_run FORM: the program in $tmp/FORM (native, launcher or per-rank), which is its
# current directory; the normalised stdout in norm there, the exit status in rc, the command
# in cmd, the seconds it took in time.
forms_run() {
  local form=$1 dir=$tmp/$1 cmd
  mkdir -p "$dir"
  case $form in
    native)   cmd=("$mpiexec" -n "$ranks" "${app[@]}") ;;
    launcher) cmd=("$bin/mana_launch" --ckptdir "$dir/ck" "$mpiexec" -n "$ranks" "${app[@]}") ;;
    per-rank) cmd=("$mpiexec" -n "$ranks" "$bin/mana_launch" --ckptdir "$dir/ck" "${app[@]}") ;;
  esac
  echo "${shown_env:+$shown_env }${cmd[*]}" >"$dir/cmd"
  local t0=$SECONDS
  (cd "$dir" && timeout -k 10 "$limit" "${cmd[@]}" </dev/null >out 2>err)
  echo $? >"$dir/rc"
  echo $((SECONDS - t0)) >"$dir/time"
  sh -c "${normalise:-cat}" <"$dir/out" >"$dir/norm"
}

# forms_native: the native run; 1 when it failed (a FAIL line printed).
forms_native() {
  forms_run native
  local rc
  rc=$(cat "$tmp/native/rc")
  [ "$rc" = 0 ] && return 0
  fail "native: exit status $rc: the program fails without mana: $(tail -2 "$tmp/native/err" | tr '\n' ' '); reproduce: $(cat "$tmp/native/cmd")"
  return 1
}

# forms_launch: both launch forms, each compared with the native run.
forms_launch() {
  local form dir rc
  for form in launcher per-rank; do
    forms_run "$form"
    dir=$tmp/$form rc=$(cat "$tmp/$form/rc")
    if [ "$rc" != 0 ]; then
      fail "$form: exit status $rc (native 0): $(tail -2 "$dir/err" | tr '\n' ' '); reproduce: $(cat "$dir/cmd")"
    elif ! cmp -s "$tmp/native/norm" "$dir/norm"; then
      fail "$form: stdout differs from native: $(diff "$tmp/native/norm" "$dir/norm" | head -4 | tr '\n' ' '); reproduce: $(cat "$dir/cmd")"
    else
      echo "$form form: identical to native, $(cat "$dir/time") s"
    fi
  done
}

# forms_at_calls NAME ARGS...: run_at_calls.sh ARGS on the program in $tmp/NAME (refusals
# fail), its point lines shown; a failure is one FAIL line with the replaying command.
forms_at_calls() {
  local name=$1 dir=$tmp/$1
  shift
  mkdir -p "$dir"
  local cmd=("$(dirname "${BASH_SOURCE[0]}")/../restart/run_at_calls.sh" --bin "$bin" -n "$ranks"
             --refusals-fail ${normalise:+--normalise "$normalise"} "$@" "${app[@]}")
  (cd "$dir" && timeout -k 10 $((limit * 40)) "${cmd[@]}" </dev/null >log 2>&1)
  local rc=$?
  sed -n -e '/^[0-9]* /p' -e 's/^run_at_calls.sh: //p' "$dir/log" | sed "s/^/  $name: /" | cut -c1-240
  if [ "$rc" != 0 ] || ! grep -q 'PASS: every point identical to native' "$dir/log"; then
    fail "$name: run_at_calls.sh exited $rc: $(sed -n 's/^run_at_calls.sh: FAIL: //p' "$dir/log" | tail -1 | cut -c1-600); reproduce: cd \$(mktemp -d) && ${shown_env:+$shown_env }${cmd[*]}"
  fi
}

# forms_calls_of_rank0 NAME: the call count run_at_calls.sh printed in $tmp/NAME/log, else
# one counting run under mana; empty when neither gives one.
forms_calls_of_rank0() {
  local calls cnt=$tmp/count
  calls=$(sed -n 's/^run_at_calls.sh: rank 0 makes \([0-9]*\) calls.*/\1/p' "$tmp/$1/log" 2>/dev/null)
  if [ -z "$calls" ]; then
    mkdir -p "$cnt"
    (cd "$cnt" && MANA_TEST_COUNT_CALLS=$cnt/counts timeout -k 10 "$limit" "$bin/mana_launch" \
      --ckptdir "$cnt/ck" "$mpiexec" -n "$ranks" "${app[@]}" </dev/null >out 2>err)
    calls=$(awk '$1 == "rank" && $2 == 0 && $3 == "calls" { print $4 }' "$cnt/counts" 2>/dev/null)
  fi
  echo "$calls"
}

# forms_chain POINTS: POINTS kill points with forked writers and incremental checkpoints, each
# after a plain checkpoint at a fifth of rank 0's calls (from the run NAME=rank0 when it ran),
# so that every restart reads a chain of two generations.
forms_chain() {
  local calls first
  calls=$(forms_calls_of_rank0 rank0)
  if [ -z "$calls" ]; then
    fail "chain: no call count for rank 0"
    return
  fi
  first=$((calls / 5))
  local shown_env="${shown_env:+$shown_env }MANA_FORKED_WRITERS=1 MANA_INCREMENTAL=1"
  MANA_FORKED_WRITERS=1 MANA_INCREMENTAL=1 \
    forms_at_calls chain --points "$1" --first "$first" --from $((first + 1))
}

# forms_after_native P Q C: once the native run passed its own checks, both launch forms,
# then P points on rank 0's calls and Q on rank 1's (every third a plain checkpoint) and C
# forked incremental chains; a count of 0 skips that part.
forms_after_native() {
  forms_launch
  [ "$1" = 0 ] || forms_at_calls rank0 --points "$1" --keep-every 3
  [ "$2" = 0 ] || forms_at_calls rank1 --rank 1 --points "$2" --keep-every 3
  [ "$3" = 0 ] || forms_chain "$3"
}

# forms_verdict SCRIPT: the last line, and the exit status (0 or 1) from the FAIL lines.
forms_verdict() {
  if [ "$failures" = 0 ]; then
    echo "$1: PASS"
    exit 0
  fi
  echo "$1: $failures failure(s)"
  exit 1
}
