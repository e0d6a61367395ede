# job_lib.sh - what the integration scripts that drive one mana job by hand share (sourced).
#
# The sourcing script sets `me` (its name) first. Provides:
#   parse_job_args WHAT "$@"  --bin DIR --program PATH [--timeout S] into bin, program and
#                             timeout (default: $timeout if set, else 180); WHAT names the program for the usage error
#   say, fail                 one line prefixed with $me; fail exits 1
#   wait_step FILE K          until tests/programs/iterative (ITERATIVE_PROGRESS) reported step K
#                             or later in FILE; fails when $job is gone or after $timeout s
#   wait_lines FILE PATTERN N WHAT
#                             until FILE has N lines matching the grep PATTERN; fails, naming
#                             WHAT, when $job is gone or after $timeout s
#   ask CKPTDIR ARGS...       mana_status --ckptdir CKPTDIR ARGS --wait, asked again while the
#                             ranks are still connecting; prints its answer, non-zero on refusal
#   wait_job WHAT [ERRFILE]   waits for $job and clears it; fails unless it exited 0, naming
#                             WHAT and the end of ERRFILE
#   job_workdir NAME          work: a new directory ${TMPDIR:-/tmp}/mana-NAME.XXXXXX; job=""; at
#                             exit $job (if set) is killed and $work removed (KEEP=1 keeps it)
#   restart_as_native NP      restarts $work/ck on NP ranks (output in $work/run2.out, .err); fails
#                             unless it ends well and $work/run1.out then run2.out equal
#                             $work/native.out

parse_job_args() {
  local what=$1
  shift
  bin="" program="" timeout=${timeout:-180}
  while [ $# -gt 0 ]; do
    case $1 in
      --bin) bin=$2; shift 2 ;;
      --program) program=$2; shift 2 ;;
      --timeout) timeout=$2; shift 2 ;;
      *) echo "$me: unknown argument '$1'" >&2; exit 2 ;;
    esac
  done
  [ -x "$bin/mana_launch" ] || { echo "$me: --bin must hold mana_launch" >&2; exit 2; }
  [ -x "$program" ] || { echo "$me: --program must be $what" >&2; exit 2; }
  bin=$(cd "$bin" && pwd)
}

say() { printf '%s: %s\n' "$me" "$*"; }
fail() { say "FAIL: $*"; exit 1; }

wait_step() {
  local end=$((SECONDS + timeout))
  until awk -v k="$2" '$1 == "iterative:" && $2 == "step" && $3 >= k { f = 1 } END { exit !f }' "$1"; do
    [ $SECONDS -lt $end ] || fail "no step $2 in $1 after ${timeout}s: $(tail -3 "$1")"
    kill -0 "$job" 2>/dev/null || fail "the job ended before step $2: $(tail -3 "$1")"
    sleep 0.05
  done
}

wait_lines() {
  local end=$((SECONDS + timeout)) n
  # no count at all while the job has not created FILE yet
  until n=$(grep -c -- "$2" "$1" 2>/dev/null) || true; [ "${n:-0}" -ge "$3" ]; do
    [ $SECONDS -lt $end ] || fail "$4 after ${timeout}s: $(tail -3 "$1" | tr '\n' ' ')"
    kill -0 "$job" 2>/dev/null || fail "the job ended before $4: $(tail -3 "$1" | tr '\n' ' ')"
    sleep 0.02
  done
}

ask() {
  local dir=$1 end=$((SECONDS + timeout)) out
  shift
  until out=$("$bin/mana_status" --ckptdir "$dir" "$@" --wait 2>&1); do
    case $out in
      *"ranks are connected"* | *"no rank has connected"* | *"no coordinator is running"*) ;;
      *) echo "$out"; return 1 ;;
    esac
    [ $SECONDS -lt $end ] || { echo "$out"; return 1; }
    sleep 0.1
  done
  echo "$out"
}

wait_job() {
  local rc=0
  wait "$job" || rc=$?
  job=""
  [ $rc -eq 0 ] || fail "$1 exited $rc${2:+: $(tail -5 "$2")}"
}

job_workdir() {
  work=$(mktemp -d "${TMPDIR:-/tmp}/mana-$1.XXXXXX")
  job=""
  trap job_cleanup EXIT
}

job_cleanup() {
  if [ -n "$job" ]; then kill -KILL "$job" 2>/dev/null || true; fi
  if [ "${KEEP:-0}" != 1 ]; then rm -rf "$work"; else say "kept $work"; fi
}

restart_as_native() {
  timeout "$timeout" mpiexec.mpich -n "$1" "$bin/mana_restart" --ckptdir "$work/ck" \
    >"$work/run2.out" 2>"$work/run2.err" ||
    fail "the restart failed ($?): $(tail -3 "$work/run2.err" | tr '\n' ' ')"
  cat "$work/run1.out" "$work/run2.out" | cmp -s - "$work/native.out" ||
    fail "the output differs from native: $(cat "$work/run1.out" "$work/run2.out" |
      diff "$work/native.out" - | head -6 | tr '\n' ' ')"
}
