# wrapper-common.sh - what mana-launch-mpiexec and mana-restart-mpiexec share (sourced).
#
# Both are given to MPICH's runtests as its mpiexec, which runs them through the shell as
#   WRAPPER -n NP [MPIEXEC-ARGS...] ./PROGRAM [PROGRAM-ARGS...]
# in the test's directory, with MPIEXEC_TIMEOUT set to the test's time limit and the test's
# env= settings in the environment, and expects the test's output on stdout+stderr.
#
# Environment (set by run-suite.sh; all optional when a wrapper is used by hand):
#   MANA_BIN           directory of mana_launch and mana_restart (default: <checkout>/build/bin)
#   MANA_SUITE_TEST    the test's key with '~' for spaces, e.g. coll~bcasttest~4 (default:
#                      derived from the current directory and the arguments)
#   MANA_SUITE_STATE   where call counts are kept: STATE/calls/SHA1(key) holds
#                      "KEY<TAB>N<TAB>INIT<TAB>STUB": rank 0's count, its count at the end of
#                      MPI_Init, and which mana stub counted them (a count by another stub is
#                      not used: which calls cross into the lower half changes with the stub,
#                      as when MPI_Comm_rank stopped crossing)
#   MANA_SUITE_STUB_ID that stub's id (default: computed from MANA_BIN's stub library)
#   MANA_SUITE_LOGDIR  where each test's one-line account goes: LOGDIR/SHA1(key)
#   MANA_SUITE_MARGIN  seconds a segment may run past MPIEXEC_TIMEOUT before the wrapper kills
#                      it (default 60; mpiexec's own MPIEXEC_TIMEOUT normally ends it first)
#
# A failure the wrapper itself detects (no checkpoint, a segment that timed out) is one line
# "WRAPPER: FAIL: reason" and exit status 0: every runtests check then counts a failure, the
# default check on the extra line and the status checks (resultTest=TestStatus, TestErrFatal,
# which accept any output with a nonzero status) on the zero status.

suite_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
MANA_BIN=${MANA_BIN:-$(dirname "$(dirname "$suite_here")")/build/bin}
MPIEXEC=${MPIEXEC_MPICH:-mpiexec.mpich}

# The stub the counts are made with: the start of its library's SHA-256.
suite_stub_id() {
  if [ -z "${MANA_SUITE_STUB_ID:-}" ]; then
    MANA_SUITE_STUB_ID=$(sha256sum "$MANA_BIN/../lib/mana/libmpich.so.12.2.2" 2>/dev/null |
                         cut -c1-16)
    MANA_SUITE_STUB_ID=${MANA_SUITE_STUB_ID:-unknown}
  fi
  echo "$MANA_SUITE_STUB_ID"
}

# suite_calls_field N: field N of this test's kept counts, if that stub made them.
suite_calls_field() {
  [ -n "${MANA_SUITE_STATE:-}" ] && [ -f "$MANA_SUITE_STATE/calls/$key_sha" ] || return 0
  awk -F'\t' -v n="$1" -v stub="$(suite_stub_id)" '$4 == stub { print $n; exit }' \
    "$MANA_SUITE_STATE/calls/$key_sha"
}

# suite_parse_args "$@": sets np, launcher_args (everything before the program), program,
# program_args.  runtests names the program ./NAME.
suite_parse_args() {
  np="" program="" launcher_args=() program_args=()
  while [ $# -gt 0 ]; do
    case "$1" in
      -n|-np) np=$2; launcher_args+=("$1" "$2"); shift 2 ;;
      ./*) program=$1; shift; program_args=("$@"); break ;;
      *) launcher_args+=("$1"); shift ;;
    esac
  done
  if [ -z "$np" ] || [ -z "$program" ]; then
    echo "$me: usage: $me -n NP [MPIEXEC-ARGS...] ./PROGRAM [ARGS...]" >&2
    exit 2
  fi
}

# suite_key: the test's key ("DIR/PROGRAM NP [ARGS...] [ENV=VALUE...]", see run-suite.sh) and
# its SHA-1, the name of its files in the state and log directories.
suite_key() {
  if [ -n "${MANA_SUITE_TEST:-}" ]; then
    key=${MANA_SUITE_TEST//\~/ }
  else
    key="$(basename "$PWD")/${program#./} $np${program_args[*]:+ ${program_args[*]}}"
  fi
  key_sha=$(printf '%s' "$key" | sha1sum | cut -c1-40)
}

# suite_limit: the wall-clock limit of one segment (mpiexec's own limit plus a margin).
suite_limit() {
  local t=${MPIEXEC_TIMEOUT:-180}
  t=${t%.*}
  case "$t" in ''|*[!0-9]*) t=180 ;; esac
  echo $((t + ${MANA_SUITE_MARGIN:-60}))
}

# suite_run LIMIT CMD...: runs CMD under timeout (its own process group: the launcher and
# every rank are killed together), stdin from /dev/null; sets seg_rc and seg_secs.
suite_run() {
  local limit=$1 t0=$SECONDS
  shift
  seg_rc=0
  timeout -k 10 "$limit" "$@" </dev/null || seg_rc=$?
  seg_secs=$((SECONDS - t0))
}

suite_timed_out() { [ "$seg_rc" -eq 124 ] || [ "$seg_rc" -eq 137 ]; }

# suite_record_calls FILE: keeps rank 0's count from a MANA_TEST_COUNT_CALLS file in the
# state directory, with the count at the end of its MPI_Init; prints the count (empty when
# rank 0 neither reached MPI_Finalize nor exited).
suite_record_calls() {
  local n init
  n=$(awk '$1 == "rank" && $2 == "0" && $3 == "calls" { print $4; exit }' "$1" 2>/dev/null || true)
  init=$(awk '$1 == "rank" && $2 == "0" && $3 == "init" { print $4; exit }' "$1" 2>/dev/null || true)
  suite_init_calls=${init:-0}
  if [ -n "$n" ] && [ -n "${MANA_SUITE_STATE:-}" ]; then
    mkdir -p "$MANA_SUITE_STATE/calls"
    printf '%s\t%s\t%s\t%s\n' "$key" "$n" "${init:-0}" "$(suite_stub_id)" \
      >"$MANA_SUITE_STATE/calls/$key_sha.$$"
    mv -f "$MANA_SUITE_STATE/calls/$key_sha.$$" "$MANA_SUITE_STATE/calls/$key_sha"
  fi
  echo "$n"
}

# suite_cached_init: rank 0's count at the end of MPI_Init kept for this test, or 0.
suite_cached_init() {
  local init
  init=$(suite_calls_field 3)
  echo "${init:-0}"
}

# suite_cached_calls: rank 0's count kept for this test by this stub, or nothing.
suite_cached_calls() {
  suite_calls_field 2
}

# suite_log TEXT: the test's one-line account for the report.
suite_log() {
  [ -n "${MANA_SUITE_LOGDIR:-}" ] || return 0
  mkdir -p "$MANA_SUITE_LOGDIR"
  printf '%s\t%s\n' "$key" "$*" >"$MANA_SUITE_LOGDIR/$key_sha"
}

suite_check_bin() {
  local t
  for t in "$@"; do
    if [ ! -x "$MANA_BIN/$t" ]; then
      echo "$me: FAIL: $MANA_BIN/$t not found (set MANA_BIN)"
      exit 0
    fi
  done
}
