#!/usr/bin/env bash
# HPC Challenge (HPCC 1.5.0, the source of Debian's hpcc package, built here against MPICH:
# Debian's binary is linked to Open MPI) under mana: the whole benchmark at 2 ranks (a 1 x 2
# grid, N = 1000, NB = 64) run natively, under both mana_launch forms and with checkpoints
# inside the run.  HPCC is C code nobody here wrote, and each of its parts uses MPI its own way:
#   - HPL (LU factorization): MPI_Comm_split into row and column communicators, the panel
#     broadcast around a ring (MPI_Send/MPI_Recv, MPI_Iprobe to overlap it with the update)
#     with MPI_Type_struct/MPI_Address datatypes (MPI-1 calls MPICH still exports), pivoting
#     and norms through HPL's own trees of MPI_Send/MPI_Recv, MPI_Issend;
#   - PTRANS (parallel transpose): a BLACS-like layer on MPI_Comm_split, MPI_Type_vector,
#     MPI_Sendrecv, user-defined MPI_Op_create reductions;
#   - MPI RandomAccess (and its LCG variant): irregular all-to-all updates with MPI_Isend and
#     MPI_Irecv from MPI_ANY_SOURCE/MPI_ANY_TAG polled by MPI_Test/MPI_Testany, MPI_Waitall,
#     MPI_Get_count, and the receives still posted at the end cancelled (MPI_Cancel);
#   - MPI FFT: MPI_Alltoall transposes with MPI_Type_contiguous; STREAM, DGEMM, the Star and
#     Single variants: MPI_Bcast, MPI_Reduce, MPI_Allreduce, MPI_Gather, MPI_Barrier;
#   - latency and bandwidth: ping-pong pairs (MPI_Send/MPI_Recv) and naturally and randomly
#     ordered rings (MPI_Sendrecv, MPI_Isend/MPI_Irecv/MPI_Waitall), their repeat counts
#     calibrated with MPI_Wtime.
#
#   usage: tests/realapps/hpcc.sh [--points P] [--rank1-points Q] [--chain-points C]
#                                 [--sections LIST] [--restart-here] [MANA_BIN]
#     --points P        checkpoints at P evenly spaced MPI calls of rank 0, every third a
#                       plain checkpoint, the others a kill and a restart (default 3)
#     --rank1-points Q  the same on rank 1's calls (default 0: none)
#     --chain-points C  C kill points with forked writers and incremental checkpoints
#                       (MANA_FORKED_WRITERS=1 MANA_INCREMENTAL=1), each after a plain
#                       checkpoint at a fifth of the run: the restart reads a chain of two
#                       generations (default 2; 0: none)
#     --sections LIST   a checkpoint with --kill (mana_status) as soon as hpccoutf.txt shows
#                       the start of each of these sections, and a restart, the forms in
#                       turn: comma separated names (MPIRandomAccess, PTRANS, MPIFFT,
#                       LatencyBandwidth, HPL...), all, or none (default HPL)
#     --restart-here    those restarts run in the job's own directory, not (the default) in
#                       another, empty one, where the ranks must get their own working
#                       directory back (see below)
#     MANA_BIN          the directory with mana_launch and mana_restart (default: $MANA_BIN,
#                       else build/bin)
#
# The program.  `apt-get source --download-only hpcc=1.5.0-3` through a private apt
# configuration (its own sources.list with one deb-src line for bookworm, lists and cache in a
# temporary directory: the machine's apt sources are never read or changed) fetches the orig
# tarball, which apt checks against the signed index; only the upstream source is used, not
# Debian's patches.  It is built with hpcc/Make.mana_mpich (mpicc.mpich -O2, the reference
# BLAS of libblas-dev linked statically: no BLAS alternative can change HPL's arithmetic),
# once, into $MANA_HPCC_CACHE/1.5.0-3 (default /var/tmp/mana-hpcc): built under a temporary
# name and renamed when complete, under a lock (flock on 1.5.0-3.lock) so that two runs wait
# for each other; KEY there records the compiler line, the MPICH and BLAS versions and the
# make file, and a cache whose KEY differs is rebuilt.  A missing libblas-dev is installed
# with apt-get.  The fetch and build took 60 s on the loaded 2-core machine.  A native run
# takes 2 s there when it is idle, 4-13 s beside other jobs (HPCC's ranks poll).
#
# What is compared.  HPCC reads hpccinf.txt (hpcc/hpccinf.txt) from its current directory and
# appends its report to hpccoutf.txt there; it prints nothing on stdout.  Each report is
# compared after hpcc/normalise.awk (see its header): the verdicts (HPL's scaled residual and
# PASSED, PTRANS's CHECK and RESID, RandomAccess's error counts, STREAM's "Solution
# Validates", every "Node(s) with error"), the sizes and the numbers that are bit-identical
# from run to run (HPL's norms, the FFTs' max(|x-x0|)) stay; times, rates, dates, the host
# name and the repeat counts calibrated from timings go.  Measured: eight native runs (and
# every run under mana) give the same normalised report, while StarDGEMM's scaled residual
# differs in every run (its matrices are seeded with time(NULL)), so only its verdict is kept,
# and PTRANS's CPU rows and the latency test's "MPI_Wtime granularity is ok" come and go with
# the clock.  The native run must
# pass every check HPCC makes (Success=1, HPL PASSED, no FAILED, no error count above 0, all
# 17 sections to "End of HPC Challenge tests.").  Under each launch form the exit status and
# the normalised report must equal native's.  The points go through
# tests/restart/run_at_calls.sh --refusals-fail (HPCC's state must be restartable), through
# forms_lib.sh: all runs of one run_at_calls.sh share its directory, so hpccoutf.txt collects
# one report per run, in order (run_at_calls.sh's native run, its counting run, then one per
# point: a killed run and its restart append to the same report); the reports are split at
# HPCC's banner and each must equal native's.  A point's report thus checks that the file
# HPCC had open is neither short of nor doubles what was written around the checkpoint: mana
# reopens the application's files by path at restart, and rank 0 holds up to three append
# descriptors on hpccoutf.txt (two FILEs that HPCC never closes, and the running section's:
# HPL's stays open across the factorization).
# HPCC's call count varies by a few per cent from run to run (calibrated ping-pongs, polling
# loops), so a point near the end may find the run over ("no checkpoint": not a failure).
# About 95% of rank 0's calls are the MPI_Test polls of the two MPI RandomAccess sections, so
# evenly spaced points land there; PTRANS, the FFTs, the latency rings and HPL (which keeps
# hpccoutf.txt open across the factorization) come last, in a tail whose position moves with
# that variation.  --sections reaches them by time instead: a section's checkpoint is asked
# for when its banner appears in hpccoutf.txt (read from the file the killed run left: a
# short section may be over by then, which is said, not failed); the launcher form, whose
# coordinator mana_status reaches, is killed, then restarted, and its one report must equal
# native's.  Unless --restart-here, the restart runs in an empty directory: HPCC opens
# hpccoutf.txt and hpccinf.txt by relative names after the restart, so a rank that is not
# given its working directory back writes the rest of its report there, and HPL, finding no
# input, runs its default problem (so it did before mana restored the working directory:
# lower-half/state_cwd.c).
# MANA_REALAPPS_TIMEOUT (default 300) is the limit of each run.  Default settings: 45-160 s
# measured on the 2-core machine, idle to loaded, after the build.
#
# Exit status: 0 when every check passes, 1 otherwise (one FAIL line per failure, with the
# command that reproduces it; MANA_REALAPPS_KEEP=1 keeps the work directory with every
# hpccoutf.txt), 77 when MPICH is not installed or the source cannot be downloaded (one SKIP
# line says which).
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../setup/apt_source.sh"
top=$(cd "$here/../.." && pwd)
points=3 rank1_points=0 chain_points=2 sections=HPL elsewhere=1
# HPCC's benchmark sections, in the order it runs them
all_sections=(MPIRandomAccess StarRandomAccess SingleRandomAccess MPIRandomAccess_LCG
              StarRandomAccess_LCG SingleRandomAccess_LCG PTRANS StarDGEMM SingleDGEMM StarSTREAM
              SingleSTREAM MPIFFT StarFFT SingleFFT LatencyBandwidth HPL)
while [ $# -gt 0 ]; do
  case "$1" in
    --points) points=${2:-}; shift 2 || shift ;;
    --rank1-points) rank1_points=${2:-}; shift 2 || shift ;;
    --chain-points) chain_points=${2:-}; shift 2 || shift ;;
    --sections) sections=${2-}; shift 2 || shift ;;
    --restart-here) elsewhere=0; shift ;;
    -h|--help) awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0"; exit 2 ;;
    -*) echo "hpcc.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) break ;;
  esac
done
for n in "$points" "$rank1_points" "$chain_points"; do
  case "$n" in ''|*[!0-9]*) echo "hpcc.sh: a point count must be a whole number, not '$n'" >&2; exit 2 ;; esac
done
case "$sections" in
  all) sections=$(IFS=,; echo "${all_sections[*]}") ;;
  none) sections="" ;;
esac
IFS=, read -r -a section_list <<<"$sections"
for s in "${section_list[@]}"; do
  case " ${all_sections[*]} " in
    *" $s "*) ;;
    *) echo "hpcc.sh: --sections: no section '$s' (all, none, or of: ${all_sections[*]})" >&2; exit 2 ;;
  esac
done
bin=${1:-${MANA_BIN:-$top/build/bin}}
mpicc=mpicc.mpich
mpiexec=${MPIEXEC:-mpiexec.mpich}     # never plain mpiexec: it may point at Open MPI
limit=${MANA_REALAPPS_TIMEOUT:-300}
srcver=1.5.0-3 upstream=1.5.0         # bookworm's hpcc
cache=${MANA_HPCC_CACHE:-/var/tmp/mana-hpcc}
inf=$here/hpcc/hpccinf.txt
norm_awk=$here/hpcc/normalise.awk
makefile=$here/hpcc/Make.mana_mpich
ranks=2

if ! command -v "$mpicc" >/dev/null || ! command -v "$mpiexec" >/dev/null ||
   ! dpkg-query -W -f='${Version}' libmpich-dev >/dev/null 2>&1; then
  echo "SKIP: MPICH is not installed ($mpicc, $mpiexec, libmpich-dev: apt-get install mpich libmpich-dev)"
  exit 77
fi
for tool in apt-get make ar tar gzip flock; do
  command -v "$tool" >/dev/null ||
    { echo "SKIP: $tool is missing, needed to fetch and build HPCC (apt-get install build-essential)"; exit 77; }
done
[ -x "$bin/mana_launch" ] && [ -x "$bin/mana_restart" ] ||
  { echo "FAIL: no mana_launch and mana_restart in $bin (build mana first)"; exit 1; }
[ ${#section_list[@]} = 0 ] || [ -x "$bin/mana_status" ] ||
  { echo "FAIL: no mana_status in $bin, which --sections needs (build mana first)"; exit 1; }
bin=$(cd "$bin" && pwd) # the runs below change directory

# ---- the reference BLAS, installed when missing --------------------------------------------
multiarch=$("$mpicc" -print-multiarch 2>/dev/null)
blaslib=/usr/lib/${multiarch:-x86_64-linux-gnu}/blas/libblas.a
if [ ! -r "$blaslib" ]; then
  echo "note: $blaslib is missing: installing libblas-dev"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q --no-install-recommends libblas-dev >/dev/null 2>&1 ||
    { apt-get update -q >/dev/null 2>&1 &&
      apt-get install -y -q --no-install-recommends libblas-dev >/dev/null 2>&1; }
  [ -r "$blaslib" ] ||
    { echo "SKIP: $blaslib is missing and apt-get could not install libblas-dev"; exit 77; }
fi

# ---- the cached binary ---------------------------------------------------------------------
key="hpcc source $srcver, upstream tarball only
cc $("$mpicc" -show 2>&1)
mpich $(dpkg-query -W -f='${Version}' libmpich-dev)
blas $blaslib $(dpkg-query -W -f='${Version}' libblas-dev 2>/dev/null)
make $(sha256sum <"$makefile" | cut -d' ' -f1)"
mkdir -p "$cache" || { echo "FAIL: cannot create the cache directory $cache"; exit 1; }
cache=$(cd "$cache" && pwd)
built=$cache/$srcver
hpcc=$built/hpcc

# fetch_source DEST: hpcc=$srcver's orig tarball into DEST (tests/setup/apt_source.sh).  The
# archive may lack the package's other files (the Debian tarball), which are not needed, so
# the tarball being there counts, not apt-get's status.  Prints why on failure.
fetch_source() {
  local rc=0
  apt_source_fetch "$1" "hpcc=$srcver" "$1/apt.log" || rc=$?
  if [ $rc -eq 1 ]; then
    echo "cannot download bookworm's deb-src index: $(grep -E '^(E|W|Err):' "$1/apt.log" | head -1)"
    return 1
  fi
  [ -s "$1/hpcc_$upstream.orig.tar.gz" ] && return 0
  echo "cannot download the source package hpcc=$srcver: $(grep -E '^(E|Err):' "$1/apt.log" | head -1)"
  return 1
}

# build: the binary into $built, from a complete build under a temporary name; exits 77 when
# the source cannot be downloaded, 1 when it does not build.
build() {
  local tmp=$cache/$srcver.tmp.$$ t0=$SECONDS why src
  rm -rf "$tmp" && mkdir -p "$tmp"
  if ! why=$(fetch_source "$tmp"); then
    rm -rf "$tmp"
    echo "SKIP: $why (no network?)"
    exit 77
  fi
  echo "building HPCC $srcver into $built (once; log: $built/build.log)"
  src=$tmp/hpcc-$upstream
  if ! tar -xzf "$tmp/hpcc_$upstream.orig.tar.gz" -C "$tmp" || [ ! -f "$src/hpl/lib/arch/build/Makefile.hpcc" ]; then
    rm -rf "$tmp"
    echo "FAIL: hpcc_$upstream.orig.tar.gz does not unpack to hpcc-$upstream with HPL's Makefile.hpcc"
    exit 1
  fi
  cp "$makefile" "$src/hpl/Make.mana_mpich"
  local cmd=(make -C "$src" arch=mana_mpich "BLASlib=$blaslib" -j 2)
  if ! "${cmd[@]}" >"$tmp/build.log" 2>&1 || [ ! -x "$src/hpcc" ]; then
    tail -n 15 "$tmp/build.log"
    mv "$tmp/build.log" "$cache/build-failed.log"
    rm -rf "$tmp"
    echo "FAIL: HPCC does not build (log: $cache/build-failed.log; command: ${cmd[*]})"
    exit 1
  fi
  mv "$src/hpcc" "$tmp/hpcc"
  cp "$makefile" "$tmp/"
  printf '%s\n' "$key" >"$tmp/KEY"
  # the source and objects are rebuilt from the tarball whenever needed: keep the cache small
  rm -rf "$src" "$tmp/apt" "$tmp"/hpcc_*
  rm -rf "$built.old"
  [ -e "$built" ] && mv "$built" "$built.old"
  mv "$tmp" "$built"
  rm -rf "$built.old"
  echo "built HPCC $srcver in $((SECONDS - t0)) s"
}

exec {lockfd}>>"$cache/$srcver.lock" || { echo "FAIL: cannot open the lock $cache/$srcver.lock"; exit 1; }
if ! flock -n "$lockfd"; then
  echo "note: another run holds $cache/$srcver.lock (building HPCC): waiting for it"
  flock "$lockfd"
fi
# leftovers of interrupted builds: nobody else builds while we hold the lock
rm -rf "$cache/$srcver".tmp.* "$built.old"
if [ -x "$hpcc" ] && [ -f "$built/KEY" ] && [ "$(cat "$built/KEY")" = "$key" ]; then
  echo "HPCC $srcver: cached in $built"
else
  [ -f "$built/KEY" ] && echo "note: the cached HPCC was built with another compiler, MPICH, BLAS or make file: rebuilding"
  build
fi
exec {lockfd}>&-

# ---- the runs ------------------------------------------------------------------------------
# UCX prints its warnings on stdout.
export UCX_LOG_LEVEL=error
# Shown in front of every reproducing command (forms_lib.sh's too): HPCC needs its input in
# the directory it runs in.
shown_env="cp $inf . && UCX_LOG_LEVEL=error"
normalise="" app=("$hpcc")

tmp=$(mktemp -d "${TMPDIR:-/tmp}/mana-hpcc.XXXXXX")
cleanup() { if [ "${MANA_REALAPPS_KEEP:-0}" = 1 ]; then echo "kept $tmp"; else rm -rf "$tmp"; fi; }
trap cleanup EXIT
trap 'exit 130' INT TERM
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
. "$here/forms_lib.sh"
t_start=$SECONDS
# every directory a run may use (forms_lib.sh makes them if missing) gets the input first
for d in native launcher per-rank rank0 rank1 chain count; do
  mkdir -p "$tmp/$d" && cp "$inf" "$tmp/$d/"
done

# reports DIR: DIR/hpccoutf.txt split at HPCC's banner into DIR/reports/N.raw, each normalised
# into DIR/reports/N; prints the number of reports.
reports() {
  local dir=$1/reports f
  rm -rf "$dir" && mkdir -p "$dir"
  [ -f "$1/hpccoutf.txt" ] &&
    awk -v dir="$dir" '/^This is the DARPA\/DOE HPC Challenge Benchmark / { n++ }
                       n { print > (dir "/" n ".raw") }' "$1/hpccoutf.txt"
  local count=0
  for f in "$dir"/*.raw; do
    [ -e "$f" ] || continue
    awk -f "$norm_awk" "$f" >"${f%.raw}"
    count=$((count + 1))
  done
  echo "$count"
}
# differs REPORT: empty when REPORT equals the native one, else the first differences
differs() {
  cmp -s "$tmp/native.report" "$1" && return
  diff "$tmp/native.report" "$1" | grep '^[<>]' | head -4 | tr '\n' '|' | cut -c1-400
}

# native: the run of reference, which must pass every check of HPCC's own
forms_native || exit 1
n=$(reports "$tmp/native")
r=$tmp/native/reports/1
bad=""
[ "$n" = 1 ] || bad="$n reports in hpccoutf.txt, not 1"
[ -n "$bad" ] || [ "$(awk 'NF { last = $0 } END { print last }' "$r")" = "End of HPC Challenge tests." ] ||
  bad="the report does not end with 'End of HPC Challenge tests.'"
[ -n "$bad" ] || [ "$(grep -c '^End of .* section\.$' "$r")" = 17 ] || bad="not 17 sections"
[ -n "$bad" ] || grep -qx 'Success=1' "$r" || bad="no Success=1"
[ -n "$bad" ] || grep -q '^||Ax-b||.* PASSED$' "$r" || bad="no PASSED HPL residual"
[ -n "$bad" ] || ! grep -q 'FAILED' "$r" || bad="$(grep -m1 FAILED "$r")"
[ -n "$bad" ] || ! grep -Eq '^Found [1-9][0-9]* errors|^Node\(s\) with error [1-9]|^[1-9][0-9]* tests completed and failed' "$r" ||
  bad="$(grep -Em1 '^Found [1-9][0-9]* errors|^Node\(s\) with error [1-9]|^[1-9][0-9]* tests completed and failed' "$r")"
if [ -n "$bad" ]; then
  fail "native: $bad (report: $tmp/native/hpccoutf.txt; MANA_REALAPPS_KEEP=1 keeps it); reproduce: cd \$(mktemp -d) && $(cat "$tmp/native/cmd")"
  forms_verdict hpcc.sh
fi
cp "$r" "$tmp/native.report"
resid=$(sed -n 's/^||Ax-b||[^=]*= *\([0-9.e+-]*\) .*/\1/p' "$r")
echo "native: exit 0, HPL N=$(sed -n 's/^HPL_N=//p' "$r") NB=$(sed -n 's/^HPL_NB=//p' "$r") scaled residual $resid PASSED," \
     "PTRANS $(sed -n 's/^ *\([0-9]*\) tests completed and passed residual checks\./\1/p' "$r") passed," \
     "RandomAccess $(grep -c '^Found 0 errors' "$r") x 0 errors," \
     "MPIFFT max|x-x0| $(sed -n 's/^MPIFFT_maxErr=//p' "$r"), $(wc -l <"$r") lines compared, $(cat "$tmp/native/time") s"

# the launch forms: one report each, equal to native's
for form in launcher per-rank; do
  forms_run "$form"
  dir=$tmp/$form rc=$(cat "$tmp/$form/rc")
  repro="reproduce: cd \$(mktemp -d) && $(cat "$dir/cmd")"
  n=$(reports "$dir")
  if [ "$rc" != 0 ]; then
    fail "$form: exit status $rc (native 0): $(tail -2 "$dir/err" | tr '\n' ' ' | cut -c1-300); $repro"
  elif [ "$n" != 1 ]; then
    fail "$form: $n reports in hpccoutf.txt, not 1; $repro"
  elif d=$(differs "$dir/reports/1") && [ -n "$d" ]; then
    fail "$form: hpccoutf.txt differs from native (< native, > mana): $d; $repro"
  elif ! cmp -s "$tmp/native/out" "$dir/out"; then
    fail "$form: stdout differs from native: $(diff "$tmp/native/out" "$dir/out" | head -4 | tr '\n' ' ' | cut -c1-300); $repro"
  else
    echo "$form form: report identical to native, $(cat "$dir/time") s"
  fi
done

# group NAME [ENV]: after forms_at_calls NAME, each report in $tmp/NAME/hpccoutf.txt against
# native's: run_at_calls.sh's native run, its counting run, then one per point line of its log.
# A point that run_at_calls.sh failed has its FAIL line already; its report is not compared.
group() {
  local name=$1 env=${2:-} dir=$tmp/$1 log=$tmp/$1/log n i=0 k line what d opts same=0
  [ -f "$log" ] || return
  n=$(reports "$dir")
  local labels=("run_at_calls.sh's native run") lines=(native) first
  grep -q '^run_at_calls.sh: rank [0-9]* makes [0-9]* calls' "$log" &&
    { labels+=("its counting run (under mana, no checkpoint)"); lines+=(count); }
  first=$(sed -n 's/.*each after a plain checkpoint at call \([0-9]*\).*/\1/p' "$log" | head -1)
  while read -r line; do
    labels+=("point $line") lines+=("$line")
  done < <(grep -E '^[0-9]+ (restarted|continued|refused|no checkpoint|FAIL)' "$log")
  if [ "$n" != "${#labels[@]}" ] && ! grep -q ' FAIL' "$log"; then
    fail "$name: $n reports in hpccoutf.txt for ${#labels[@]} runs (${labels[*]}); kept with MANA_REALAPPS_KEEP=1 in $dir"
  fi
  for ((i = 0; i < ${#labels[@]} && i < n; i++)); do
    line=${lines[$i]}
    case $line in *" FAIL"*) continue ;; esac
    d=$(differs "$dir/reports/$((i + 1))")
    if [ -z "$d" ]; then same=$((same + 1)); continue; fi
    what=${labels[$i]}
    if [ "$line" = native ]; then
      fail "$name: the report of ${labels[$i]} differs from the first native run's (< first, > second): $d; HPCC is not deterministic here, not a mana failure"
      continue
    elif [ "$line" = count ]; then
      fail "$name: the report of ${labels[$i]} differs from native (< native, > mana): $d; reproduce: cd \$(mktemp -d) && $shown_env${env:+ $env} MANA_TEST_COUNT_CALLS=counts $bin/mana_launch --ckptdir ck $mpiexec -n $ranks $hpcc"
      continue
    fi
    k=${line%% *}
    opts="--calls $k${first:+ --first $first}"
    [ "$name" != rank1 ] || opts+=" --rank 1"
    case $line in
      *"plain checkpoint"*) opts+=" --keep-every 1" ;;
      *"per-rank form"*) opts+=" --restart-forms inner" ;;
    esac
    fail "$name: the report of $what differs from native (< native, > mana): $d; reproduce: cd \$(mktemp -d) && $shown_env${env:+ $env} $top/tests/restart/run_at_calls.sh --bin $bin -n $ranks --refusals-fail $opts $hpcc && awk -f $norm_awk hpccoutf.txt"
  done
  echo "$name: $same of $n reports in hpccoutf.txt identical to native"
}

if [ "$points" -gt 0 ]; then
  forms_at_calls rank0 --points "$points" --keep-every 3
  group rank0
fi
if [ "$rank1_points" -gt 0 ]; then
  forms_at_calls rank1 --rank 1 --points "$rank1_points" --keep-every 3
  group rank1
fi
if [ "$chain_points" -gt 0 ]; then
  forms_chain "$chain_points"
  group chain "MANA_FORKED_WRITERS=1 MANA_INCREMENTAL=1"
fi

# section_kill S I: the launcher form, checkpointed with --kill (mana_status) as soon as
# hpccoutf.txt shows "Begin of S section.", then restarted (the I-th: the forms in turn; from
# an empty directory unless --restart-here); the one report must equal native's.  Where the
# checkpoint fell is read from the file the killed run left: a short section may be over by
# the time the checkpoint starts.
section_kill() {
  local s=$1 i=$2 dir=$tmp/section-$1 form=outer rc1 rc2 st strc landed d t0=$SECONDS n
  [ $((i % 2)) = 1 ] || form=inner
  mkdir -p "$dir" && cp "$inf" "$dir/"
  local ck=$dir/ck from=$dir rel=ck cdto=""
  if [ "$elsewhere" = 1 ]; then from=$dir/elsewhere rel=../ck cdto="mkdir elsewhere && cd elsewhere && "; mkdir -p "$from"; fi
  local launch=("$bin/mana_launch" --ckptdir "$ck" "$mpiexec" -n "$ranks" "$hpcc") restart
  if [ "$form" = outer ]; then
    restart=("$bin/mana_restart" --ckptdir "$rel" "$mpiexec" -n "$ranks")
  else
    restart=("$mpiexec" -n "$ranks" "$bin/mana_restart" --ckptdir "$rel")
  fi
  local repro="reproduce: cd \$(mktemp -d) && cp $inf . && export UCX_LOG_LEVEL=error && { ${launch[*]/#$ck/ck} & } && until grep -qx 'Begin of $s section.' hpccoutf.txt 2>/dev/null; do sleep 0.05; done; $bin/mana_status --ckptdir ck --checkpoint --kill --wait; wait; $cdto${restart[*]}"
  (cd "$dir" && exec timeout -k 10 "$limit" "${launch[@]}" </dev/null >out1 2>err1) &
  local pid=$!
  until grep -qx "Begin of $s section." "$dir/hpccoutf.txt" 2>/dev/null; do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  st=$(timeout -k 10 "$limit" "$bin/mana_status" --ckptdir "$ck" --checkpoint --kill --wait --timeout 120 2>&1)
  strc=$?
  wait "$pid"
  rc1=$?
  cp "$dir/hpccoutf.txt" "$dir/killed.txt" 2>/dev/null
  landed=$(awk '/^(Begin|End) of .* section\.$/ { l = ($1 == "Begin" ? "in " : "after ") $3 }
                END { print l }' "$dir/killed.txt" 2>/dev/null)
  if ! grep -qx "Begin of $s section." "$dir/killed.txt" 2>/dev/null; then
    fail "section $s: the run ended (exit $rc1) before 'Begin of $s section.': $(tail -2 "$dir/err1" | tr '\n' ' ' | cut -c1-300); $repro"
    return
  fi
  if [ "$strc" != 0 ]; then
    if [ "$rc1" = 0 ] && grep -qx 'End of HPC Challenge tests.' "$dir/killed.txt"; then
      echo "section $s: no checkpoint, the run ended first ($(echo "$st" | tail -1 | cut -c1-200))"
    else
      # a refusal or an abort: the coordinator's reason is mana_status's last line
      fail "section $s: the checkpoint $landed failed: $(echo "$st" | tail -2 | tr '\n' ' ' | cut -c1-400) (killed run exit $rc1: $(tail -2 "$dir/err1" | tr '\n' ' ' | cut -c1-200)); $repro"
      return
    fi
  elif [ "$rc1" != 0 ]; then
    fail "section $s: the killed run exited $rc1 after the checkpoint $landed: $(tail -2 "$dir/err1" | tr '\n' ' ' | cut -c1-300); $repro"
    return
  else
    (cd "$from" && timeout -k 10 "$limit" "${restart[@]}" </dev/null >"$dir/out2" 2>"$dir/err2")
    rc2=$?
    if [ "$rc2" != 0 ]; then
      fail "section $s: the restart after the checkpoint $landed exited $rc2: $(tail -2 "$dir/err2" | tr '\n' ' ' | cut -c1-300); $repro"
      return
    fi
  fi
  n=$(reports "$dir")
  if [ "$from" != "$dir" ] && [ -e "$from/hpccoutf.txt" ]; then
    fail "section $s: after the checkpoint $landed the restarted ranks wrote $(grep -c . "$from/hpccoutf.txt") lines to hpccoutf.txt in the restart's directory, not in their own: their working directory is the restart's$(grep -q 'cannot open file hpccinf.txt' "$dir/err2" && echo ", and HPL could not open hpccinf.txt"); $repro"
  elif [ "$n" != 1 ]; then
    fail "section $s: $n reports in hpccoutf.txt after the checkpoint $landed, not 1; $repro"
  elif d=$(differs "$dir/reports/1") && [ -n "$d" ]; then
    fail "section $s: the report after the checkpoint $landed differs from native (< native, > mana): $d; $repro"
  elif ! cmp -s "$tmp/native/out" <(cat "$dir/out1" "$dir/out2" 2>/dev/null); then
    fail "section $s: stdout differs from native: $(cat "$dir/out1" "$dir/out2" | head -2 | tr '\n' ' ' | cut -c1-300); $repro"
  elif [ "$strc" = 0 ]; then
    echo "section $s: checkpoint $landed, killed and restarted ($([ "$form" = outer ] && echo launcher || echo per-rank) form$([ "$elsewhere" = 0 ] || echo ", from another directory")), report identical to native, $((SECONDS - t0)) s"
  fi
}
i=0
for s in "${section_list[@]}"; do
  i=$((i + 1))
  section_kill "$s" "$i"
done
echo "hpcc: $((SECONDS - t_start)) s of runs"
forms_verdict hpcc.sh
