#!/usr/bin/env bash
# MOCASSIN (Debian's mocassin: a 3D Monte Carlo photoionisation code, Fortran 90, linked to
# MPICH's libmpichfort/libmpich) under mana: a small model of the Meudon standard HII region
# at 2 ranks, run natively, under both mana_launch forms and checkpointed, killed and restarted
# at chosen MPI calls.  MOCASSIN is code nobody here wrote, and it reaches MPI only through
# the Fortran bindings (mpi_init_, mpi_comm_rank_/size_, mpi_allreduce_, mpi_barrier_,
# mpi_finalize_ in `nm -D /usr/bin/mocassin`): every rank traces its share of the photon
# packets through the whole grid, then each iteration's estimators are summed on every rank
# with MPI_Allreduce(MPI_SUM) of MPI_REAL and MPI_INTEGER arrays (up to 235,592 reals, about
# 0.9 MB, a rendezvous message), between MPI_Barriers: 75 calls per rank at 3 iterations,
# 21 more for each further one.
# Rank 0 writes the output/ files at the end of every iteration, and every rank writes the
# same output/tauNu.out.
#
#   usage: tests/realapps/mocassin.sh [--iterations I] [--points P] [--rank1-points Q]
#                                     [--chain-points C] [MANA_BIN]
#     --iterations I    Monte Carlo iterations of the model (default 3; 9x9x9 cells, 50,000
#                       packets each: about 1.6 s of CPU per rank and iteration)
#     --points P        checkpoints at P evenly spaced MPI calls of rank 0, every third a
#                       plain checkpoint, the others a kill and a restart (default 3)
#     --rank1-points Q  the same on rank 1's calls (default 1)
#     --chain-points C  C kill points with forked writers and incremental checkpoints
#                       (MANA_FORKED_WRITERS=1 MANA_INCREMENTAL=1), each after a plain
#                       checkpoint at a fifth of rank 0's calls: the restart reads a chain of
#                       two generations (default 2; 0: none)
#     MANA_BIN          the directory with mana_launch and mana_restart (default: $MANA_BIN,
#                       else build/bin)
#
# The model: the benchmark gas/HII40 of mocassin-benchmarks (a 40,000 K star in a uniform
# nebula), without autoPackets, on 9x9x9 cells with 50,000 packets and I iterations.  MOCASSIN
# reads input/input.in (which names input/abunHII40.in) and writes into output/, both under
# its current directory; Debian builds it with its atomic and dust data at the absolute
# /usr/share/mocassin/data and dustData (printed at start), so nothing else is needed there
# (only an input naming 'dustData/...' relative, which this gas model does not, would need a
# link).  Every run (the two native ones, each launch form, each point) has a directory of
# its own with a fresh input/ and an empty output/.
#
# Determinism.  Two native runs differ in every number (stdout and output files): MOCASSIN has
# no seed option, gfortran seeds its generator from the system's entropy, and MOCASSIN adds
# the wall clock's milliseconds (date_and_time) to every rank's seed each iteration.  Masking
# would leave nothing of the physics to compare, so every run, native or not, preloads
# mocassin/fixed_seed.c (built here): a fixed gfortran seed and zero milliseconds.  Then two
# native runs are identical but for the times of day MOCASSIN prints ("finished at HH:MM:SS"
# in stdout and output/summary.out, "total run time per processor"), which the normaliser
# masks.  The script checks that itself with a second native run, so that a machine where the
# seed does not hold reports that, not a mana failure.
#
# Checks: the native run exits 0, ends cleanly after I iterations with every output file
# written.  Under each launch form: the exit status, every rank's stdout (each rank to its own
# file: the ranks' first lines interleave otherwise) and every file of output/ equal the native
# run's, normalised.  Each point is one tests/restart/run_at_calls.sh --calls K
# (--refusals-fail: MOCASSIN's state must be restartable; --rank-output; the restart forms in
# turn) in a directory of its own, so that the files of each point can be checked: its
# joined stdout must equal native, and afterwards every output file must have been written
# by the runs under mana and equal the native files.  run_at_calls.sh's own native run comes
# first in the point's directory; MOCASSIN replaces each output file (summary.out too) rather
# than appending to it, and each must be newer than that run.  forms_lib.sh is not used: its
# runs merge the ranks' stdout and share one directory between the points.
# MANA_REALAPPS_TIMEOUT (default 300) is the limit of each run of the three forms, and four
# times it of each point (run_at_calls.sh limits each of its runs to 4 x its native run +
# 60 s, at least 120 s).  The default settings took 129 s on a 2-core machine shared with
# other jobs (load average 8), --points 12 --rank1-points 6 --chain-points 3 took 302 s.
#
# Exit status: 0 when every check passes, 1 otherwise (one FAIL line per failure, with the
# command that reproduces it; the preloaded library lives in the work directory, which
# MANA_REALAPPS_KEEP=1 keeps), 77 when mocassin, mocassin-benchmarks, MPICH or a C compiler
# is not installed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
iterations=3 points=3 rank1_points=1 chain_points=2
while [ $# -gt 0 ]; do
  case "$1" in
    --iterations) iterations=${2:-}; shift 2 || shift ;;
    --points) points=${2:-}; shift 2 || shift ;;
    --rank1-points) rank1_points=${2:-}; shift 2 || shift ;;
    --chain-points) chain_points=${2:-}; shift 2 || shift ;;
    -h|--help) awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0"; exit 2 ;;
    -*) echo "mocassin.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) break ;;
  esac
done
for n in "$iterations" "$points" "$rank1_points" "$chain_points"; do
  case "$n" in ''|*[!0-9]*) echo "mocassin.sh: a count must be a whole number, not '$n'" >&2; exit 2 ;; esac
done
[ "$iterations" -ge 1 ] || { echo "mocassin.sh: at least 1 iteration" >&2; exit 2; }
bin=${1:-${MANA_BIN:-$top/build/bin}}
mocassin=${MOCASSIN:-/usr/bin/mocassin}
bench=${MOCASSIN_BENCHMARK:-/usr/share/mocassin/benchmarks/gas/HII40}
mpiexec=${MPIEXEC:-mpiexec.mpich}     # never plain mpiexec: it may point at Open MPI
cc=${CC:-cc}
at_calls=$top/tests/restart/run_at_calls.sh
limit=${MANA_REALAPPS_TIMEOUT:-300}
ranks=2
if [ ! -x "$mocassin" ] || [ ! -r "$bench/input.in" ] || [ ! -r "$bench/abunHII40.in" ] ||
   ! command -v "$mpiexec" >/dev/null || ! command -v "$cc" >/dev/null; then
  echo "SKIP: $mocassin, $bench/input.in, $mpiexec or $cc is missing (apt-get install mocassin mocassin-benchmarks mpich gcc)"
  exit 77
fi
[ -x "$bin/mana_launch" ] && [ -x "$bin/mana_restart" ] ||
  { echo "FAIL: no mana_launch and mana_restart in $bin (build mana first)"; exit 1; }
bin=$(cd "$bin" && pwd) # the runs below change directory

tmp=$(mktemp -d "${TMPDIR:-/tmp}/mana-mocassin.XXXXXX")
cleanup() { if [ "${MANA_REALAPPS_KEEP:-0}" = 1 ]; then echo "kept $tmp"; else rm -rf "$tmp"; fi; }
trap cleanup EXIT
trap 'exit 130' INT TERM
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
t_start=$SECONDS

# ---- the preloaded seed, the model, the normaliser ----------------------------------------
shim=$tmp/fixed_seed.so
build=("$cc" -std=c17 -O2 -Wall -Wextra -shared -fPIC -o "$shim" "$here/mocassin/fixed_seed.c")
if ! "${build[@]}" >"$tmp/build.log" 2>&1; then
  fail "mocassin/fixed_seed.c does not build: $(head -3 "$tmp/build.log" | tr '\n' ' '); reproduce: ${build[*]}"
  exit 1
fi
# UCX prints its warnings on stdout.
envs=(UCX_LOG_LEVEL=error LD_PRELOAD="$shim")
shown_env="UCX_LOG_LEVEL=error LD_PRELOAD=$shim"

model=$tmp/input
mkdir -p "$model"
cp "$bench/abunHII40.in" "$model/"
sed -E -e '/^autoPackets/d' -e 's/^nPhotons .*/nPhotons 50000/' -e 's/^n([xyz]) .*/n\1 9/' \
    -e "s/^maxIterateMC .*/maxIterateMC $iterations 95./" "$bench/input.in" >"$model/input.in"
for want in 'nPhotons 50000' 'nx 9' 'ny 9' 'nz 9' "maxIterateMC $iterations 95." \
            'nebComposition "input/abunHII40.in"'; do
  grep -qxF "$want" <(sed 's/ *$//' "$model/input.in") ||
    { fail "the benchmark $bench/input.in has changed: no '$want' after shrinking it"; exit 1; }
done

# The times of day MOCASSIN prints (stdout and output/summary.out); every other number stays.
normalise="sed -E -e 's/finished at [0-9]{2}:[0-9]{2}:[0-9]{2}/finished at HH:MM:SS/' -e 's/(total run time per processor +)[0-9:]+/\\1HH:MM:SS/'"

# prepare DIR: DIR becomes a fresh current directory for MOCASSIN
prepare() {
  rm -rf "$1" && mkdir -p "$1/output" && cp -r "$model" "$1/input"
}

# files DIR: output/'s files, sorted, in DIR.files, each one normalised in DIR.norm/
files() {
  local dir=$1 f
  (cd "$dir/output" && find . -type f | sed 's|^\./||' | sort) >"$dir.files"
  rm -rf "$dir.norm" && mkdir -p "$dir.norm"
  while read -r f; do sh -c "$normalise" <"$dir/output/$f" >"$dir.norm/${f//\//_}"; done <"$dir.files"
}

list_of() { if [ -s "$1" ]; then tr '\n' ' ' <"$1" | sed 's/ $//'; else echo nothing; fi; }
# same_files NATIVE DIR: 0 when DIR's output files equal NATIVE's, normalised; else says why
same_files() {
  local nat=$1 dir=$2 f
  if ! cmp -s "$nat.files" "$dir.files"; then
    echo "wrote $(list_of "$dir.files") instead of $(list_of "$nat.files")"
    return 1
  fi
  while read -r f; do
    cmp -s "$nat.norm/${f//\//_}" "$dir.norm/${f//\//_}" && continue
    echo "output/$f differs from native (< native, > mana): $(diff "$nat.norm/${f//\//_}" "$dir.norm/${f//\//_}" | grep '^[<>]' | head -4 | tr '\n' '|' | cut -c1-300)"
    return 1
  done <"$nat.files"
}

# ---- native and the launch forms ----------------------------------------------------------
# run FORM: MOCASSIN in $tmp/FORM; the launcher's stdout, then each rank's after a "rank R:"
# line (as run_at_calls.sh --rank-output joins them), normalised, in $tmp/FORM.stdout; the
# exit status in FORM.rc, the command in FORM.cmd, the seconds in FORM.time.  The launcher
# form also counts the MPI calls of each rank (MANA_TEST_COUNT_CALLS, which only counts) for
# the points, instead of a run of its own.
run() {
  local form=$1 dir=$tmp/$1 r cmd env=("${envs[@]}")
  prepare "$dir"
  local outs=(-outfile-pattern "$dir.out.%r")
  case $form in
    native*)  cmd=("$mpiexec" -n "$ranks" "${outs[@]}" "$mocassin") ;;
    launcher) cmd=("$bin/mana_launch" --ckptdir "$dir.ck" "$mpiexec" -n "$ranks" "${outs[@]}" "$mocassin")
              env+=(MANA_TEST_COUNT_CALLS="$tmp/counts") ;;
    per-rank) cmd=("$mpiexec" -n "$ranks" "${outs[@]}" "$bin/mana_launch" --ckptdir "$dir.ck" "$mocassin") ;;
  esac
  echo "cd $dir && $shown_env timeout $limit ${cmd[*]}" >"$dir.cmd"
  local t0=$SECONDS
  (cd "$dir" && env "${env[@]}" timeout -k 10 "$limit" "${cmd[@]}" </dev/null >"$dir.launcher" 2>"$dir.err")
  echo $? >"$dir.rc"
  echo $((SECONDS - t0)) >"$dir.time"
  {
    cat "$dir.launcher"
    for ((r = 0; r < ranks; r++)); do
      echo "rank $r:"
      [ ! -e "$dir.out.$r" ] || cat "$dir.out.$r" # made at a rank's first output
    done
  } | sh -c "$normalise" >"$dir.stdout"
  files "$dir"
}

# check FORM: one FAIL line per difference from the native run
check() {
  local form=$1 nat=$tmp/native dir=$tmp/$1 rc why d bad=0 repro
  rc=$(cat "$dir.rc")
  repro="reproduce: $(cat "$dir.cmd")"
  if [ "$rc" != 0 ]; then
    fail "$form: exit status $rc (native 0): $(tail -2 "$dir.err" | tr '\n' ' ' | cut -c1-300); $repro"
    return 1
  fi
  d=$(diff "$nat.stdout" "$dir.stdout" | grep '^[<>]' | head -4 | tr '\n' '|' | cut -c1-300)
  [ -z "$d" ] || { fail "$form: stdout differs from native (< native, > $form): ${d%|}; $repro"; bad=1; }
  why=$(same_files "$nat" "$dir") || { fail "$form: $why; $repro"; bad=1; }
  return $bad
}

run native
out0=$tmp/native.out.0
if [ "$(cat "$tmp/native.rc")" != 0 ] || ! grep -q 'end simulation reached - clean exit' "$out0" 2>/dev/null; then
  fail "native: exit status $(cat "$tmp/native.rc"), no clean exit: the model fails without mana: $(tail -2 "$tmp/native.err" "$out0" 2>/dev/null | tr '\n' ' ' | cut -c1-300); reproduce: $(cat "$tmp/native.cmd")"
  exit 1
fi
iters=$(grep -c '\[Summary\] Iteration .* Total: .* converged cells over all grids' "$out0")
missing=""
for f in lineFlux.out temperature.out ionratio.out summary.out SED.out grid0.out grid1.out \
         grid2.out grid3.out photoSource.out; do
  grep -qxF "$f" "$tmp/native.files" || missing+=" $f"
done
if [ "$iters" != "$iterations" ] || [ -n "$missing" ]; then
  fail "native: $iters of $iterations iterations reported, missing output files:${missing:- none}; reproduce: $(cat "$tmp/native.cmd")"
  exit 1
fi
converged=$(sed -n 's/.*Total: *\([0-9.]*\) *% converged.*/\1/p' "$out0" | tail -1)
echo "native: exit 0, $iterations iterations, ${converged} % of cells converged, $(wc -l <"$tmp/native.files") output files ($(du -sk "$tmp/native/output" | cut -f1) KB), $(cat "$tmp/native.time") s"

# the seed must hold, or no comparison means anything
run native2
if [ "$(cat "$tmp/native2.rc")" != 0 ] || ! cmp -s "$tmp/native.stdout" "$tmp/native2.stdout" ||
   ! why=$(same_files "$tmp/native" "$tmp/native2"); then
  fail "native: a second native run differs from the first (the fixed seed of mocassin/fixed_seed.c does not hold here): ${why:-stdout: $(diff "$tmp/native.stdout" "$tmp/native2.stdout" | grep '^[<>]' | head -2 | tr '\n' '|' | cut -c1-200)}; reproduce: $(cat "$tmp/native2.cmd")"
  exit 1
fi
echo "native: a second run identical (stdout and every output file, normalised), $(cat "$tmp/native2.time") s"

forms_ok=1
for form in launcher per-rank; do
  run "$form"
  if check "$form"; then
    echo "$form form: identical to native (stdout and $(wc -l <"$tmp/$form.files") files), $(cat "$tmp/$form.time") s"
  else
    forms_ok=0
  fi
done

# ---- checkpoints at chosen calls ----------------------------------------------------------
calls_of() { awk -v r="$1" '$1 == "rank" && $2 == r && $3 == "calls" { print $4; exit }' "$tmp/counts" 2>/dev/null; }
n0=$(calls_of 0) n1=$(calls_of 1)
restarted=0 continued=0 npoints=0

# point GROUP I K RANK PLAIN FORM [FIRST]: run_at_calls.sh at call K of RANK (a plain
# checkpoint when PLAIN is 1, else a kill and a restart in FORM; after a plain one at FIRST
# when given) in $tmp/GROUP-pI, then its output files checked
point() {
  local group=$1 i=$2 k=$3 rank=$4 plain=$5 form=$6 first=${7:-}
  local dir=$tmp/$group-p$i cmd env=("${envs[@]}") shown=$shown_env
  prepare "$dir"
  cmd=("$at_calls" --bin "$bin" -n "$ranks" --rank "$rank" --calls "$k" ${first:+--first "$first"}
       --restart-forms "$form" --refusals-fail --rank-output --normalise "$normalise" --keep)
  [ "$plain" = 0 ] || cmd+=(--keep-every 1)
  cmd+=("$mocassin")
  if [ "$group" = chain ]; then
    env+=(MANA_FORKED_WRITERS=1 MANA_INCREMENTAL=1) shown+=" MANA_FORKED_WRITERS=1 MANA_INCREMENTAL=1"
  fi
  (cd "$dir" && env "${env[@]}" timeout -k 10 $((limit * 4)) "${cmd[@]}" </dev/null >"$dir.log" 2>&1)
  local rc=$? work line
  npoints=$((npoints + 1))
  work=$(sed -n 's/^run_at_calls.sh: work directory kept: //p' "$dir.log" | tail -1)
  line=$(grep -m1 -E "^$k (restarted|continued|refused|no checkpoint|FAIL)" "$dir.log")
  echo "  $group: ${line:-$k: no point line (run_at_calls.sh exited $rc)}" | cut -c1-240
  local repro
  repro="reproduce: cd $dir && $shown $(printf '%q ' "${cmd[@]}")"
  if [ "$rc" != 0 ] || ! grep -q 'PASS: every point identical to native' "$dir.log"; then
    fail "$group: call $k of rank $rank${first:+ after a plain checkpoint at $first}: run_at_calls.sh exited $rc: $(sed -n 's/^run_at_calls.sh: FAIL: //p' "$dir.log" | tail -1 | cut -c1-600); ${repro% }"
    return
  fi
  # every file written again under mana (run_at_calls.sh's native run came first, here) and
  # equal to native's
  local f stale="" why
  if [ ! -e "$work/native.out" ]; then
    fail "$group: call $k of rank $rank: run_at_calls.sh kept no native.out to date the files by (work directory '$work'); ${repro% }"
    return
  fi
  touch -r "$work/native.out" "$dir.start"
  files "$dir"
  while read -r f; do
    [ "$dir/output/$f" -nt "$dir.start" ] || stale+="$f "
  done <"$tmp/native.files"
  if [ -n "$stale" ]; then
    fail "$group: call $k of rank $rank ($line): output/${stale% } not written again under mana (only by run_at_calls.sh's native run); ${repro% }"
  elif ! why=$(same_files "$tmp/native" "$dir"); then
    fail "$group: call $k of rank $rank ($line): $why; ${repro% }"
  else
    case $line in
      *restarted*) restarted=$((restarted + 1)) ;;
      *continued*) continued=$((continued + 1)) ;;
    esac
    [ "${MANA_REALAPPS_KEEP:-0}" = 1 ] || rm -rf "$work" "$dir" "$dir.norm"
  fi
}

# group NAME RANK COUNT LO HI KEEP_EVERY [FIRST]: COUNT points evenly spaced inside LO..HI (as
# run_at_calls.sh --points spaces them), every KEEP_EVERY-th plain (0: none), the restart
# forms in turn
group() {
  local name=$1 rank=$2 count=$3 lo=$4 hi=$5 every=$6 first=${7:-} i k plain kills=0 form
  for ((i = 1; i <= count; i++)); do
    k=$((lo + (hi - lo) * i / (count + 1)))
    plain=0
    [ "$every" -gt 0 ] && [ $((i % every)) = 0 ] && plain=1
    form=outer
    [ $((kills % 2)) = 0 ] || form=inner
    [ "$plain" = 1 ] || kills=$((kills + 1))
    point "$name" "$i" "$k" "$rank" "$plain" "$form" "$first"
  done
}

if [ $((points + rank1_points + chain_points)) -gt 0 ]; then
  if [ "$forms_ok" = 0 ]; then
    echo "points: not run, the launch forms already differ from native"
  elif [ -z "$n0" ] || [ -z "$n1" ]; then
    fail "the launcher form reported no call counts ($(head -c 200 "$tmp/counts" 2>/dev/null)); reproduce: MANA_TEST_COUNT_CALLS=\$PWD/counts $(cat "$tmp/launcher.cmd")"
  else
    echo "points: rank 0 makes $n0 MPI calls, rank 1 $n1"
    [ "$points" = 0 ] || group rank0 0 "$points" 1 "$n0" 3
    [ "$rank1_points" = 0 ] || group rank1 1 "$rank1_points" 1 "$n1" 3
    first=$((n0 / 5))
    [ "$chain_points" = 0 ] || group chain 0 "$chain_points" $((first + 1)) "$n0" 0 "$first"
    echo "points: $npoints run, $restarted restarted and $continued continued identical to native (stdout and files)"
  fi
fi

echo "mocassin: $failures failure(s), $((SECONDS - t_start)) s"
if [ "$failures" = 0 ]; then
  echo "mocassin.sh: PASS"
  exit 0
fi
echo "mocassin.sh: $failures failure(s)"
exit 1
