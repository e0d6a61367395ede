#!/usr/bin/env bash
# Runs NetPIPE (Debian's NPmpich2, dynamically linked with libmpich.so.12) at 2 ranks
# natively and under both mana_launch forms, and checks that mana changes nothing:
# same exit status, same message sizes, every size completed, integrity checks passed,
# the same output apart from timings.  Bandwidth and latency are printed for information.
#
#   usage: tests/realapps/netpipe.sh [--full] [MANA_BIN]
#     --full    NetPIPE's whole default sweep (1 byte to 8 MiB, repeat counts chosen by
#               timing, about a minute per run) instead of a short one (up to 1 MiB,
#               10 repeats per size, well under a second per run on an idle machine)
#     MANA_BIN  the directory with mana_launch (default: $MANA_BIN, else build/bin)
#
# Exit status: 0 when every check passes, 1 otherwise (one FAIL line per failure, with
# the command that reproduces it), 77 when NetPIPE or MPICH is not installed.
# MANA_REALAPPS_KEEP=1 keeps the temporary directory with every run's output;
# MANA_REALAPPS_TIMEOUT=SECONDS changes the time limit of each run (90, --full 200).
set -u

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)

full=0
if [ "${1:-}" = "--full" ]; then full=1; shift; fi
if [ $# -gt 1 ] || [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then
  sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 2
fi
bindir=${1:-${MANA_BIN:-$top/build/bin}}
launch=$bindir/mana_launch
mpiexec=${MPIEXEC:-mpiexec.mpich}     # never plain mpiexec: it may point at Open MPI
np=${NETPIPE:-NPmpich2}

if ! command -v "$np" >/dev/null || ! command -v "$mpiexec" >/dev/null; then
  echo "SKIP: $np or $mpiexec not installed (tests/setup/install-deps.sh installs them)"
  exit 77
fi
np=$(command -v "$np")
if [ ! -x "$launch" ]; then
  echo "FAIL: $launch not found or not executable (build mana first)"; exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/mana-netpipe.XXXXXX")
cleanup() { if [ "${MANA_REALAPPS_KEEP:-0}" = 1 ]; then echo "kept $tmp"; else rm -rf "$tmp"; fi; }
trap cleanup EXIT
trap 'exit 130' INT TERM

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

if [ $full = 1 ]; then
  perf_opts=""                  # NetPIPE's own sweep
  integ_opts="-i -n 20"         # integrity check over the whole range (to 8 MiB)
  limit=${MANA_REALAPPS_TIMEOUT:-200}
else
  perf_opts="-u 1048576 -n 10"
  integ_opts="-i -u 1048576 -n 10"
  limit=${MANA_REALAPPS_TIMEOUT:-90}
fi
# name|NetPIPE options|what it exercises
runs=(
  "perf|$perf_opts|blocking MPI_Send/MPI_Recv ping-pong"
  "integrity|$integ_opts|data integrity check"
  "integrity-offset|-i -O 1,3 -u 65536 -n 10|integrity check, unaligned buffers"
  "async|-a -u 65536 -n 10|preposted MPI_Irecv"
  "sync|-S -u 65536 -n 10|MPI_Ssend"
  "bidir|-2 -a -u 65536 -n 10|both directions at once"
  "stream|-s -u 65536 -n 10|one-way streaming"
)
# Not used, because they fail natively, without mana: -z (MPI_ANY_SOURCE) hangs after
# the first size; -B and -a -z stop with "Can't prepare to receive: outstanding receive!".

forms=(native launcher per-rank)

# run FORM NAME OPTS: runs NetPIPE in $tmp/NAME.FORM/.  Each rank's stdout and stderr go
# to their own files (out.RANK, err.RANK) so that the ranks' lines cannot interleave;
# mpiexec's (and mana_launch's) own output goes to out and err.
run() {
  local form=$1 name=$2 opts=$3 dir=$tmp/$2.$1
  mkdir -p "$dir"
  local files=(-outfile-pattern out.%r -errfile-pattern err.%r)
  local cmd
  case $form in
    native)   cmd=("$mpiexec" -n 2 "${files[@]}" "$np") ;;
    launcher) cmd=("$launch" -v "$mpiexec" -n 2 "${files[@]}" "$np") ;;
    per-rank) cmd=("$mpiexec" -n 2 "${files[@]}" "$launch" -v "$np") ;;
  esac
  # shellcheck disable=SC2206
  cmd+=($opts -o np.out)
  echo "cd \$(mktemp -d) && timeout $limit ${cmd[*]}" > "$dir/cmd"
  local t0 t1
  t0=$(date +%s.%N)
  (cd "$dir" && timeout -k 10 "$limit" "${cmd[@]}" </dev/null >out 2>err)
  echo $? > "$dir/rc"
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f\n", b - a }' > "$dir/time"
  touch "$dir/out.0" "$dir/out.1" "$dir/err.0" "$dir/err.1"
}

# normalised FILE: the file without mana_launch -v lines and with the timing part of the
# progress reports ("  3:       4 bytes     20 times -->   301.18 Mbps in  0.10 usec")
# and the repeat count (chosen by timing without -n) replaced by fixed text.
normalised() {
  grep -v '^mana_launch: running: ' "$1" |
    sed -E -e 's/^( *[0-9]+: +[0-9]+ bytes) +[0-9]+ times -->/\1 N times -->/' \
           -e 's/--> +[0-9.]+ Mbps in +[0-9.]+ usec/--> TIMING/' -e 's/[[:space:]]+$//'
}
progress_count() { grep -cE '^ *[0-9]+: +[0-9]+ bytes +[0-9]+ times -->' "$1"; }
passed_count() { grep -c 'Integrity check passed' "$1"; }

errors_re='error|fail|abort|fatal|segmentation|signal|assert|can.t |cannot|killed|core dump|truncat|invalid|denied|not found|warning'
error_text() {
  local d=$1
  cat "$d/out" "$d/err" "$d"/out.? "$d"/err.? | grep -v '^mana_launch: running: ' |
    grep -iE "$errors_re" | head -3 | tr '\n' '|' | sed 's/|$//'
}

# check NAME FORM: one FAIL line per problem; returns 1 if there was any.
check() {
  local name=$1 form=$2 nat=$tmp/$1.native dir=$tmp/$1.$2
  local repro; repro="reproduce: $(cat "$dir/cmd")"
  local bad=0 rc nrc
  rc=$(cat "$dir/rc"); nrc=$(cat "$nat/rc")
  local why=""; { [ "$rc" = 124 ] || [ "$rc" = 137 ]; } && why=" (timed out after ${limit}s)"
  if [ "$form" = native ]; then
    [ "$rc" = 0 ] || { fail "$name native: exit status $rc$why: NetPIPE fails without mana; $repro"; bad=1; }
  elif [ "$rc" != "$nrc" ]; then
    fail "$name $form: exit status $rc$why, native $nrc; $repro"; bad=1
  fi
  local errs; errs=$(error_text "$dir")
  [ -z "$errs" ] || { fail "$name $form: error text: $errs; $repro"; bad=1; }
  if [ ! -s "$dir/np.out" ]; then
    fail "$name $form: no results file (np.out); $repro"; return 1
  fi
  local nsizes nprog
  nsizes=$(wc -l < "$dir/np.out"); nprog=$(progress_count "$dir/err.0")
  if [ "$nprog" != "$nsizes" ]; then
    fail "$name $form: $nsizes sizes in np.out but $nprog progress reports from rank 0; $repro"; bad=1
  fi
  if [[ $name == integrity* ]] && [ "$(passed_count "$dir/err.0")" != "$nsizes" ]; then
    fail "$name $form: $(passed_count "$dir/err.0") 'Integrity check passed' for $nsizes sizes; $repro"; bad=1
  fi
  [ "$form" = native ] && return $bad

  # mana really ran the program: mana_launch -v names mana_lh once per launch
  local got want=1
  got=$(cat "$dir/err" "$dir"/err.? | grep -c '^mana_launch: running: .*/mana_lh ')
  [ "$form" = per-rank ] && want=2
  if [ "$got" != "$want" ]; then
    fail "$name $form: $got 'mana_launch: running: ... mana_lh' line(s), expected $want: did mana run it?"; bad=1
  fi
  if ! cmp -s <(awk '{print $1}' "$nat/np.out") <(awk '{print $1}' "$dir/np.out"); then
    fail "$name $form: message sizes differ from native ($(wc -l < "$dir/np.out") sizes, native $(wc -l < "$nat/np.out"); first difference: $(diff <(awk '{print $1}' "$nat/np.out") <(awk '{print $1}' "$dir/np.out") | grep -m1 '^[<>]')); $repro"
    bad=1
  fi
  # with -n the integrity results (size, repeats) are deterministic: compare them whole
  if [[ $name == integrity* ]] && ! cmp -s "$nat/np.out" "$dir/np.out"; then
    fail "$name $form: results file differs from native; $repro"; bad=1
  fi
  local f d
  for f in out err out.0 out.1 err.0 err.1; do
    d=$(diff <(normalised "$nat/$f") <(normalised "$dir/$f") | grep '^[<>]' | head -2 | tr '\n' '|')
    [ -z "$d" ] || { fail "$name $form: $f differs from native (< native, > mana): ${d%|}; $repro"; bad=1; }
  done
  return $bad
}

# bandwidth (Mbps) at the largest size, latency (usec) at the smallest size
bw_lat() { awk 'NR == 1 { lat = $3 * 1e6; small = $1 } { bw = $2; size = $1 }
                END { printf "%s %s %s %s\n", bw, size, lat, small }' "$1/np.out"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }

echo "NetPIPE: $np ($( [ $full = 1 ] && echo full || echo short) mode), mana: $launch"
t_start=$(date +%s)
for r in "${runs[@]}"; do
  IFS='|' read -r name opts what <<< "$r"
  for form in "${forms[@]}"; do run "$form" "$name" "$opts"; done
  line="$name ($what; NPmpich2 ${opts:-<defaults>}):"
  for form in "${forms[@]}"; do line="$line $form $(cat "$tmp/$name.$form/time")s"; done
  ok=1
  if check "$name" native; then
    for form in launcher per-rank; do check "$name" "$form" || ok=0; done
  else
    ok=0
  fi
  if [ $ok = 1 ]; then
    echo "ok   $line; $(wc -l < "$tmp/$name.native/np.out") sizes, same as native"
  else
    echo "BAD  $line"
  fi
done

# Information only: timings are not checked.
if [ -s "$tmp/perf.native/np.out" ]; then
  read -r nbw size nlat small < <(bw_lat "$tmp/perf.native")
  echo "info: perf run: bandwidth at $size bytes, latency at $small byte(s); ratio = mana / native"
  printf "info:   %-9s %12.2f Mbps %9.3f usec\n" native "$nbw" "$nlat"
  for form in launcher per-rank; do
    [ -s "$tmp/perf.$form/np.out" ] || continue
    read -r bw _ lat _ < <(bw_lat "$tmp/perf.$form")
    printf "info:   %-9s %12.2f Mbps %9.3f usec   bandwidth ratio %s, latency ratio %s\n" \
      "$form" "$bw" "$lat" "$(ratio "$bw" "$nbw")" "$(ratio "$lat" "$nlat")"
  done
fi
echo "netpipe: $failures failure(s), $(( $(date +%s) - t_start ))s"
[ $failures = 0 ]
