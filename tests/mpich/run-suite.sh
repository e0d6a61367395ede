#!/usr/bin/env bash
# run-suite.sh - MPICH's own test suite (test/mpi of MPICH 4.0.2) run natively and under mana.
#
# usage: run-suite.sh [options]
#
# Modes (each runs MPICH's runtests over the chosen tests):
#   native   runtests -mpiexec=mpiexec.mpich: the baseline, kept in the cache (which tests
#            pass natively on this machine); mana modes run only the tests that pass natively
#   launch   runtests -mpiexec=mana-launch-mpiexec: every test under mana_launch; also keeps
#            rank 0's call count of every test for the restart mode
#   restart  runtests -mpiexec=mana-restart-mpiexec, once per seed: every test checkpointed at
#            a call K drawn from the seed and its call count, killed, and restarted with
#            mana_restart (see mana-restart-mpiexec for the formula)
#   restart2 the same with a plain checkpoint at a call J between MPI_Init and K before the
#            kill at K: the restart reads a chain of two generations (with MANA_FORKED_WRITERS=1
#            MANA_INCREMENTAL=1 in the environment the first is written by forked writers and
#            the second refers to it); counted with restart for --min-restart-pass
#   restart-first  restart2's two checkpoints, but the restart reads generation 1 alone: the
#            plain checkpoint taken while the test ran (by forked writers with
#            MANA_FORKED_WRITERS=1), as after a crash past an interval checkpoint; the restart
#            runs J..K again, and only its output is shown; counted with restart
#   abort    once per seed, the checkpoint at K is aborted (the last rank reports that a thread
#            would not park, MANA_FAULT=park-fail): every test must still pass, as if no
#            checkpoint had been asked for, like the launch mode
#
# Options:
#   --modes LIST             modes to run, comma separated (default native,launch,restart;
#                            also restart2, restart-first, abort).
#                            Without native, the cached baseline is used; tests that have
#                            none are run natively first (a native timeout is cached too:
#                            --refresh or the native mode runs it again).  Without launch, the restart mode
#                            uses the cached call counts and counts the tests that have none.
#   --dirs LIST              test directories (default: group,comm,attr,errhan,info,init,topo,
#                            datatype,pt2pt,part,coll,rma,io,threads,mpi_t,impls and the
#                            Fortran and C++ ones, f77, f90, f08 and cxx, without their io
#                            subdirectories: there four ranks make thousands of collective
#                            writes and take longer than their time limit natively on two
#                            cores; name them to run them)
#   --tests REGEX            only the tests whose key matches REGEX (Python syntax, searched;
#                            a key is "DIR/PROGRAM NP [ARGS] [ENV]", e.g. "coll/bcasttest 4")
#   --list FILE              only the tests whose keys FILE lists, one per line (# comments)
#   --seed S                 a restart seed (repeatable); --seeds 1,2,3 gives several at once
#                            (default: one seed, 1)
#   --maxnp N                at most N processes per test (runtests -maxnp; default 4)
#   --bin DIR                mana's bin directory (default: build/bin of this checkout)
#   --timeout S              time limit of a test that its list does not set (default 180,
#                            runtests' own)
#   --native-scale F         in the mana modes a test gets at least F times the seconds its
#                            native run took (default 2; 0: the lists' limits only): MPICH's
#                            rma/acc_flush_get takes 262 s of its 270 s natively here
#   --timeout-multiplier X   every limit times X (default 1.5: a loaded 2-core machine; in
#                            the restart mode each of the two segments has the limit)
#   --min-restart-pass PCT   the restart mode must pass at least PCT% of the runs of tests
#                            that pass natively (default 98)
#   --refresh                redo the native baseline and the call counts of the chosen tests
#   --cache DIR              cache of the built suite, baseline and counts (default
#                            $MANA_MPICH_SUITE_CACHE, else /var/tmp/mana-mpich-suite)
#   --jobs N                 make -j when building (default 2)
#   --report FILE            also write the report to FILE
#   --keep                   keep the work directory (runtests logs, JUnit and TAP files, the
#                            wrappers' accounts, the tree the tests ran in); printed
#
# Prints a table per directory (tests, passing natively, passing in each mode out of those
# that pass natively), one summary line, and every test that passes natively but fails in a
# mode with its first error line, then the same grouped by error line.
# Exit status: 0 when every test that passes natively passes in launch mode and the restart
# mode reaches --min-restart-pass; 1 otherwise (the last line says why); 2 usage error;
# 77 the MPICH source cannot be downloaded here (no network), so nothing was tested.
set -euo pipefail

me=run-suite.sh
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$(dirname "$here")")
usage() {
  awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0" >&2
  exit 2
}
die_usage() { echo "$me: $*" >&2; exit 2; }
fail() { echo "$me: FAIL: $*"; exit 1; }
say() { echo "$me: $*"; }

modes=native,launch,restart
dirs=group,comm,attr,errhan,info,init,topo,datatype,pt2pt,part,coll,rma,io,threads,mpi_t,impls
for lang in "f77 attr coll datatype pt2pt info rma init comm ext topo profile" \
            "f90 attr coll comm ext info init misc pt2pt datatype f90types rma timer topo profile" \
            "f08 attr pt2pt coll datatype comm rma subarray topo ext info init misc timer profile" \
            "cxx attr pt2pt comm coll errhan init info datatype topo rma"; do
  read -r -a words <<<"$lang"
  for sub in "${words[@]:1}"; do dirs+=",${words[0]}/$sub"; done
done
regex="" list="" seeds=() maxnp=4 bin="" base_timeout=180 multiplier=1.5 native_scale=2 min_restart=98
refresh=0 cache=${MANA_MPICH_SUITE_CACHE:-/var/tmp/mana-mpich-suite} jobs=2 report="" keep=0
while [ $# -gt 0 ]; do
  opt=$1
  case "$opt" in
    --*=*) set -- "${opt%%=*}" "${opt#*=}" "${@:2}"; continue ;;
    --modes|--dirs|--tests|--list|--seed|--seeds|--maxnp|--bin|--timeout|--timeout-multiplier|--native-scale|\
    --min-restart-pass|--cache|--jobs|--report)
      [ $# -ge 2 ] || die_usage "$opt needs a value"
      val=$2
      shift 2 ;;
    --refresh) refresh=1; shift; continue ;;
    --keep) keep=1; shift; continue ;;
    -h|--help) usage ;;
    *) die_usage "unknown argument $opt (see --help)" ;;
  esac
  case "$opt" in
    --modes) modes=$val ;;
    --dirs) dirs=$val ;;
    --tests) regex=$val ;;
    --list) list=$val ;;
    --seed) seeds+=("$val") ;;
    --seeds) IFS=, read -r -a more <<<"$val"; seeds+=("${more[@]}") ;;
    --maxnp) maxnp=$val ;;
    --bin) bin=$val ;;
    --timeout) base_timeout=$val ;;
    --timeout-multiplier) multiplier=$val ;;
    --native-scale) native_scale=$val ;;
    --min-restart-pass) min_restart=$val ;;
    --cache) cache=$val ;;
    --jobs) jobs=$val ;;
    --report) report=$val ;;
  esac
done
[ ${#seeds[@]} -gt 0 ] || seeds=(1)
for s in "${seeds[@]}"; do
  case "$s" in ''|*[!0-9]*) die_usage "a seed must be a whole number, not '$s'" ;; esac
done
for v in maxnp base_timeout jobs; do
  case "${!v}" in ''|*[!0-9]*) die_usage "--${v//_/-} must be a whole number, not '${!v}'" ;; esac
done
[[ "$multiplier" =~ ^[0-9]+(\.[0-9]+)?$ ]] || die_usage "--timeout-multiplier must be a number"
[[ "$native_scale" =~ ^[0-9]+(\.[0-9]+)?$ ]] || die_usage "--native-scale must be a number"
[[ "$min_restart" =~ ^[0-9]+(\.[0-9]+)?$ ]] || die_usage "--min-restart-pass must be a number"
run_native=0 run_launch=0 run_restart=0 seeded=()
IFS=, read -r -a mode_list <<<"$modes"
for m in "${mode_list[@]}"; do
  case "$m" in
    native) run_native=1 ;;
    launch) run_launch=1 ;;
    restart|restart2|restart-first|abort) run_restart=1 seeded+=("$m") ;;
    *) die_usage "unknown mode '$m' (native, launch, restart, restart2, restart-first, abort)" ;;
  esac
done
if [ -n "$list" ]; then
  [ -f "$list" ] || die_usage "--list: no file $list"
  list=$(cd "$(dirname "$list")" && pwd)/$(basename "$list")
fi
[ -n "$report" ] && report=$(cd "$(dirname "$report")" && pwd)/$(basename "$report")

for tool in perl python3 mpiexec.mpich sha1sum sha256sum timeout; do
  command -v "$tool" >/dev/null || fail "$tool is missing (tests/setup/install-deps.sh installs it)"
done
bin=${bin:-$top/build/bin}
if [ $run_launch -eq 1 ] || [ $run_restart -eq 1 ]; then
  for t in mana_launch mana_restart mana_lh; do
    [ -x "$bin/$t" ] || fail "$bin/$t not found: build mana first (tests/run-all.sh builds it) or give --bin"
  done
  bin=$(cd "$bin" && pwd)
fi

# The tree: configured once in the cache; the chosen tests' programs built there; then a
# hard-linked copy to run in (tests write files into their directory, and another run may
# use the cache at the same time).
mkdir -p "$cache/runs"
work=$(mktemp -d "$cache/runs/run.XXXXXX")
native_recorded=0
record_native() {
  if [ $native_recorded -eq 0 ] && [ -n "${state:-}" ] && [ -f "$work/native.junit.xml" ]; then
    python3 "$here/suite.py" record-native --manifest "$work/manifest" \
      --junit "$work/native.junit.xml" --state "$state" || true
  fi
  native_recorded=1
}
# An interrupted native run keeps what it measured (an hour at -maxnp=4 on 2 cores): the next
# run measures only the tests still missing.
cleanup() {
  record_native
  if [ $keep -eq 1 ]; then say "work directory kept: $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

rc=0
tree=$("$here/prepare-tree.sh" --cache "$cache" --jobs "$jobs" | tail -n 1) || rc=$?
if [ $rc -eq 3 ]; then
  echo "$me: SKIP: the MPICH source cannot be downloaded here, nothing was tested"
  exit 77
fi
[ $rc -eq 0 ] || fail "the MPICH test suite could not be prepared (see above)"
state=$(dirname "$tree")/state
mkdir -p "$state"

python3 "$here/suite.py" select --tree "$tree" --dirs "$dirs" --maxnp "$maxnp" \
  ${regex:+--regex "$regex"} ${list:+--list "$list"} --out "$work/manifest" ||
  fail "cannot select the tests (see above)"
total=$(wc -l <"$work/manifest")
[ "$total" -gt 0 ] || fail "no test of $dirs matches${regex:+ --tests '$regex'}${list:+ --list $list}"
programs=$(python3 "$here/suite.py" programs --manifest "$work/manifest")
"$here/prepare-tree.sh" --cache "$cache" --jobs "$jobs" --programs "$programs" \
  --snapshot "$work/mpi" >/dev/null || fail "the chosen tests could not be built (see above)"
snap=$work/mpi
say "$total tests of $dirs (maxnp $maxnp) from $tree; working in $work"

# Every runtests variable that would change what it runs or how it reads output is ours.
unset VERBOSE V RUNTESTS_VERBOSE RUNTESTS_SHOWPROGRESS MPITEST_PROGRAM_WRAPPER MPITEST_BATCH \
      MPITEST_STOPTEST MPITEST_MPIEXECARG MPITEST_PPNARG MPITEST_TIMELIMITARG || true
export MPITEST_TIMEOUT=$base_timeout MPITEST_TIMEOUT_MULTIPLIER=$multiplier
export USER=${USER:-$(id -un)} # runtests looks for leftover processes with ps -U $USER

# run_mode NAME MPIEXEC KEYS-FILE|"": runtests over the chosen tests (or those KEYS-FILE
# names), JUnit output in $work/NAME.junit.xml, its log in $work/NAME.log.  Outside the native
# mode a test's limit is at least --native-scale times its native seconds.
run_mode() {
  local name=$1 mpiexec=$2 keys=$3 n t0=$SECONDS scale=$native_scale
  [ "$name" != native ] || scale=0
  n=$(python3 "$here/suite.py" lists --tree "$snap" --manifest "$work/manifest" --maxnp "$maxnp" \
        --name "testlist.mana-$name" ${keys:+--keys "$keys"} --state "$state" \
        --native-scale "$scale" --multiplier "$multiplier" --base-timeout "$base_timeout")
  if [ "$n" -eq 0 ]; then
    say "[$name] no test to run"
    return 0
  fi
  say "[$name] $n tests"
  # runtests through perl -e only to flush its stdout line by line (progress as it goes)
  (cd "$snap" && perl -e 'STDOUT->autoflush(1); do "./runtests"; die $@ if $@' -- \
     -srcdir=. -tests="testlist.mana-$name" -testdirs="$dirs" \
     -mpiexec="$mpiexec" -maxnp="$maxnp" -junitfile="$work/$name.junit.xml" \
     -tapfile="$work/$name.tap" </dev/null 2>&1) |
    tee "$work/$name.log" |
    while IFS= read -r line; do # (mawk reads a pipe in blocks: no progress from awk)
      case "$line" in "Looking in "*) line=${line#Looking in }; echo "  [$name] ${line%%/testlist.mana-*}" ;; esac
    done
  say "[$name] done in $((SECONDS - t0)) s: $(tail -n 3 "$work/$name.log" | grep -E 'tests (failed|passed)' | sed 's/^ *//' || true)"
}

if [ $refresh -eq 1 ]; then
  python3 "$here/suite.py" forget --manifest "$work/manifest" --state "$state"
fi

if [ $run_native -eq 1 ] || [ $refresh -eq 1 ]; then
  run_mode native mpiexec.mpich ""
else
  python3 "$here/suite.py" keys --manifest "$work/manifest" --state "$state" --native-missing \
    >"$work/native-missing"
  if [ -s "$work/native-missing" ]; then
    say "[native] no cached baseline for $(wc -l <"$work/native-missing") tests: running them natively"
    run_mode native mpiexec.mpich "$work/native-missing"
  fi
fi
record_native
python3 "$here/suite.py" keys --manifest "$work/manifest" --state "$state" --native-pass \
  >"$work/native-pass"
say "$(wc -l <"$work/native-pass") tests pass natively"

export MANA_BIN=$bin MANA_SUITE_STATE=$state
# Call counts are kept per stub (wrapper-common.sh): which calls cross depends on it.
MANA_SUITE_STUB_ID=$(sha256sum "$bin/../lib/mana/libmpich.so.12.2.2" 2>/dev/null | cut -c1-16)
export MANA_SUITE_STUB_ID=${MANA_SUITE_STUB_ID:-unknown}
report_modes=()
if [ $run_launch -eq 1 ]; then
  MANA_SUITE_LOGDIR=$work/logs/launch run_mode launch "$here/mana-launch-mpiexec" "$work/native-pass"
  report_modes+=(--mode "launch=$work/launch.junit.xml,$work/logs/launch")
fi
for m in "${seeded[@]}"; do
  variant=""
  case $m in restart2) variant=two ;; restart-first) variant=first ;; abort) variant=abort ;; esac
  for s in "${seeds[@]}"; do
    MANA_SUITE_VARIANT=$variant MANA_SUITE_SEED=$s MANA_SUITE_LOGDIR=$work/logs/$m-s$s \
      run_mode "$m-s$s" "$here/mana-restart-mpiexec" "$work/native-pass"
    report_modes+=(--mode "$m-s$s=$work/$m-s$s.junit.xml,$work/logs/$m-s$s")
  done
done

echo
python3 "$here/suite.py" report --manifest "$work/manifest" --state "$state" \
  --min-restart-pass "$min_restart" ${report:+--out "$report"} "${report_modes[@]}"
