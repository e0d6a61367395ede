#!/usr/bin/env bash
# ADIOS 1 (Debian's libadios-mpich-dev 1.13.1) under mana: the example programs Debian ships in
# libadios-examples, built at test time against the MPICH flavour of the library, each run at
# 2 ranks natively, under both mana_launch forms, and checkpointed, killed and restarted at
# chosen MPI calls (tests/restart/run_at_calls.sh --refusals-fail).  ADIOS is C code nobody
# here wrote, and most of its MPI is file I/O:
#   - the "MPI" write method (every example's XML, or adios_select_method) has rank 0
#     MPI_File_delete and create the file, then cascades the opens (each rank MPI_File_open on
#     MPI_COMM_SELF after an MPI_Recv from the one before, then an MPI_Isend to the next),
#     gathers the block sizes with MPI_Gather and hands back offsets with MPI_Scatter
#     (MPI_IN_PLACE), has each rank MPI_File_seek and MPI_File_write its block, and gathers the
#     index to rank 0 (MPI_Gather, MPI_Gatherv), which writes the footer; the file is opened
#     with MPI_Info hints (ROMIO's data sieving off); `nm` of libadios.a also shows
#     MPI_Comm_dup, MPI_Allreduce, MPI_Bcast, MPI_Scatterv and MPI_Irecv/MPI_Waitall;
#   - the BP read method: rank 0 reads the footer (MPI_File_get_size, MPI_File_seek,
#     MPI_File_read) and MPI_Bcasts the index, then each rank reads its selection;
#   - the examples themselves split MPI_COMM_WORLD (MPI_Comm_split: one file per colour in
#     adios_global_2files, 4_adios_nfiles and adios_global_aggregate_by_color), pass a token
#     with MPI_Send/MPI_Recv to print in rank order, and MPI_Barrier; time_aggregation keeps
#     steps in memory and flushes them together; Fortran examples go through libadiosf.
#
#   usage: tests/realapps/adios.sh [--points N] [--all] [MANA_BIN [PROGRAM...]]
#     --points N   checkpoint/kill/restart points per program, evenly spaced over rank 0's MPI
#                  calls, the restart alternately in the launcher and the per-rank form
#                  (default 2; 0: native and the two launch forms only)
#     --all        also the programs marked "slow" in the table below
#     MANA_BIN     the directory with mana_launch and mana_restart (default: $MANA_BIN, else
#                  build/bin)
#     PROGRAM      only these programs of the table (e.g. C/arrays/arrays_read); a reader
#                  brings its writer along
#
# Checks, for each program: the native run exits 0 (else the table is wrong, or the machine);
# under each launch form the exit status, every rank's stdout (each rank to its own file, so
# that the ranks' lines cannot interleave) and every file the program wrote equal the native
# run's, and its stderr shows no crash; at each restart point (run_at_calls.sh --calls K, one
# point per call so that the files of each point can be checked) the joined stdout of the killed
# and the restarted run equals native, and so does every file the program wrote, which must be
# newer than run_at_calls.sh's own native run (else mana's runs did not write it).  A .bp file
# is compared through `bpls.mpich -la -d -D -m --hidden_attrs` (every variable, attribute,
# value and block): two native runs of the same program differ only in the hidden attributes
# /__adios__/create_time_epoch and update_time_epoch (the seconds since 1970 at which the file
# was written), which are masked; any other file is compared byte for byte.  A reader reads the
# files its writer wrote natively, so that a difference is the reader's.
# MANA_REALAPPS_TIMEOUT (default 300) is the limit of each run.  The default run (49 programs,
# 2 points each) takes about 2 minutes of CPU; 158 and 213 s measured beside other test runs.
#
# Exit status: 0 when every check passes, 1 otherwise (one FAIL line per failure, ending in the
# command that reproduces it), 77 when libadios-examples, libadios-mpich-dev or MPICH is not
# installed.  MANA_REALAPPS_KEEP=1 keeps the temporary directory with every run's files.
set -u

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)

points=2 all=0 opts=()
while [ $# -gt 0 ]; do
  case "$1" in
    --points) points=${2:-}; opts+=(--points "${2:-}"); shift 2 || shift ;;
    --all) all=1; opts+=(--all); shift ;;
    -h|--help) awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0"; exit 2 ;;
    -*) echo "adios.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) break ;;
  esac
done
case "$points" in ''|*[!0-9]*) echo "adios.sh: --points must be a whole number, not '$points'" >&2; exit 2 ;; esac
bin=${1:-${MANA_BIN:-$top/build/bin}}
[ $# -gt 0 ] && shift
mpiexec=${MPIEXEC:-mpiexec.mpich}     # never plain mpiexec: it may point at Open MPI
examples=${ADIOS_EXAMPLES:-/usr/share/doc/libadios-examples/examples}
pc=adios-mpich                        # plain "adios" (and adios_config) is Open MPI's flavour
at_calls=$top/tests/restart/run_at_calls.sh
limit=${MANA_REALAPPS_TIMEOUT:-300}
ranks=2
# UCX prints its warnings on stdout.
export UCX_LOG_LEVEL=${UCX_LOG_LEVEL:-error}

# PROGRAM [<WRITER] [+slow] [ARGS...]: a program under $examples (its source is PROGRAM.c or
# PROGRAM.F90), the writer whose native files it reads, and its arguments.  The schema
# examples take the process grid (2 x 1).  Every example that runs at 2 ranks is here; the
# others are in the list below, with the reason.
tests=(
  C/arrays/arrays_write
  "C/arrays/arrays_read <C/arrays/arrays_write"
  C/attributes/attributes_write
  "C/attributes/attributes_read <C/attributes/attributes_write"
  C/global-array/adios_global
  "C/global-array/adios_read_global <C/global-array/adios_global"
  "C/global-array/adios_read_gpp <C/global-array/adios_global"
  "C/global-array/adios_read_writeblock <C/global-array/adios_global"
  "C/global-array/adios_read_chunk <C/global-array/adios_global"
  C/global-array/adios_global_2files
  C/global-array/no_xml_write_byid
  "C/global-array/read_no_xml_write_byid <C/global-array/no_xml_write_byid"
  C/global-array/adios_global_aggregate_by_color
  C/global-array-time/adios_globaltime
  "C/global-array-time/adios_read_globaltime <C/global-array-time/adios_globaltime"
  # waits 10 s for a step that never comes (a stream reader's timeout) in every run
  "C/global-array-time/adios_read_globaltime_streaming <C/global-array-time/adios_globaltime +slow"
  C/global-array-time/adios_globaltime_no_xml
  C/joined-array/joined-array
  C/manual/1_nonadios_example
  C/manual/2_adios_write
  "C/manual/3_adios_read <C/manual/2_adios_write"
  C/manual/4_adios_nfiles
  C/scalars/scalars_write
  "C/scalars/scalars_read <C/scalars/scalars_write"
  C/stat/stat_write
  "C/schema/uniform2d 2 1" "C/schema/rectilinear2d 2 1" "C/schema/structured2d 2 1"
  "C/schema/tri2d 2 1" "C/schema/triangle2d 2 1" "C/schema/uniform2d_noxml 2 1"
  "C/schema/rectilinear2d_noxml 2 1" "C/schema/structured2d_noxml 2 1"
  "C/schema/tri2d_noxml 2 1"
  C/time_aggregation/time_aggregation
  C/time_aggregation/time_aggregation_no_xml
  C/transforms/adios_global
  Fortran/arrays/arrays_write
  "Fortran/arrays/arrays_read <Fortran/arrays/arrays_write"
  Fortran/global-array/adios_global
  Fortran/global-array/adios_global_no_xml
  Fortran/global-array/no_xml_write_byid
  Fortran/global-array-time/adios_globaltime
  Fortran/scalars/scalars_write
  "Fortran/scalars/scalars_read <Fortran/scalars/scalars_write"
  "Fortran/schema/uniform2d_noxml 2 1" "Fortran/schema/rectilinear2d_noxml 2 1"
  "Fortran/schema/structured2d_noxml 2 1" "Fortran/schema/tri2d_noxml 2 1"
  "Fortran/schema/tri2d_noxml_seperate 2 1"
)
# Left out, and why:
#   C/global-array/adios_global_no_xml, adios_read_global_no_xml: 3 blocks of 10^7 doubles per
#     rank, a 480 MB file at 2 ranks, and the reader prints every value (not done in 120 s)
#   C/stat/stat_read: crashes natively (SIGSEGV) on stat_write's file, at 1 and at 2 ranks
#   C/transforms/adios_read_subv, adios_read_wb_subpg: need 4 ranks (reader, and writer for
#     3 blocks); adios_read_points: an assertion in adios_transforms_reqgroup.c fails natively
#     at 2 and at 4 ranks
#   the reader of C/global-array-time/adios_globaltime_no_xml: adios_read_globaltime expects
#     the XML version's layout and crashes natively on the no_xml file
#   C/scalars/scalars_write_step: the same source and flags as scalars_write
#   C/read_all/read_all, C/query/*: sequential programs (libadios_nompi, no MPI); read_all_v1
#     does not compile against the 1.13 read API; query_* need FastBit or ALACRITY, which
#     Debian's build has not
#   C/flexpath_arrays/*, C/icee_arrays/*, staging/*, coupling/*: FLEXPATH, ICEE or DataSpaces
#     staging, a writer and a reader running at the same time (coupling also needs includes
#     generated by gpp.py that are not shipped)
#   skel/*: XML inputs for ADIOS's skel generator, not programs

if [ ! -d "$examples/C" ] || ! pkg-config --exists "$pc" 2>/dev/null ||
   ! command -v mpicc.mpich >/dev/null || ! command -v mpif90.mpich >/dev/null ||
   ! command -v bpls.mpich >/dev/null || ! command -v "$mpiexec" >/dev/null; then
  echo "SKIP: $examples, pkg-config $pc, mpicc.mpich, mpif90.mpich, bpls.mpich or $mpiexec is missing (apt-get install libadios-examples libadios-mpich-dev libadios-bin mpich)"
  exit 77
fi
[ -x "$bin/mana_launch" ] && [ -x "$bin/mana_restart" ] ||
  { echo "FAIL: no mana_launch and mana_restart in $bin (build mana first)"; exit 1; }
bin=$(cd "$bin" && pwd) # the runs change directory

# ---- the table, and the programs asked for ------------------------------------------------
declare -A reads args slow known
order=()
for t in "${tests[@]}"; do
  read -r -a w <<<"$t"
  name=${w[0]} reads[$name]="" args[$name]="" slow[$name]=0 known[$name]=1
  for x in "${w[@]:1}"; do
    case $x in
      '<'*) reads[$name]=${x#<} ;;
      +slow) slow[$name]=1 ;;
      *) args[$name]+="${args[$name]:+ }$x" ;;
    esac
  done
  order+=("$name")
done
declare -A wanted
if [ $# -gt 0 ]; then
  for want in "$@"; do
    [ -n "${known[$want]:-}" ] || { echo "adios.sh: unknown program $want (not in the table of $0)" >&2; exit 2; }
    wanted[$want]=1
    [ -z "${reads[$want]}" ] || wanted[${reads[$want]}]=1
  done
  all=1 # a program asked for by name runs even when slow
else
  for name in "${order[@]}"; do wanted[$name]=1; done
fi
selected=()
for name in "${order[@]}"; do
  [ -n "${wanted[$name]:-}" ] || continue
  [ "${slow[$name]}" = 0 ] || [ "$all" = 1 ] || continue
  selected+=("$name")
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/mana-adios.XXXXXX")
cleanup() { if [ "${MANA_REALAPPS_KEEP:-0}" = 1 ]; then echo "kept $tmp"; else rm -rf "$tmp"; fi; }
trap cleanup EXIT
trap 'exit 130' INT TERM
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
# the command that runs one program's checks again, its directories kept
again() { echo "MANA_REALAPPS_KEEP=1 $0 ${opts[*]:+${opts[*]} }$bin $1"; }

# ---- build ------------------------------------------------------------------------------
# The examples are built the way their Makefile.am builds them, with the flags the MPICH
# flavour's pkg-config file gives.  That file names libraries Debian's runtime packages ship
# without the development symbolic link (glib, lz4, blosc: linked by their soname instead), and
# NetCDF-4 from Debian's parallel NetCDF, which is built for Open MPI and cannot share a
# process with MPICH: the NC4 transport's nc_* symbols are set to 0, as no example selects it.
# The read library's flags lack the -lm it needs.
ex=$tmp/examples
cp -r "$examples/." "$ex/"
find "$ex" -name '*.gz' -exec gunzip -f {} +
libdir=$(pkg-config --variable=libdir "$pc")
flavour=$libdir/adios/mpich           # Debian puts the MPICH build's libadios*.a here
mkdir -p "$ex/inc" && ln -s /usr/include "$ex/inc/public" # some include "public/adios.h"
fortran_mods=$(dirname "$(ls "$libdir"/fortran/gfortran-mod-*/adios_write_mod.mod 2>/dev/null | head -1)")
linkable() { # FLAGS...: the flags, each -lNAME that the linker cannot find turned into a fix
  local dirs=("$flavour" "$libdir" "/lib/$(basename "$libdir")") f d so out=()
  for f in "$@"; do case $f in -L*) dirs+=("${f#-L}") ;; esac; done
  for f in "$@"; do
    case $f in
      -lnetcdf) ;; # see above
      -l*)
        so=""
        for d in "${dirs[@]}"; do [ -e "$d/lib${f#-l}.so" ] || [ -e "$d/lib${f#-l}.a" ] && so=$f && break; done
        for d in "${dirs[@]}"; do
          [ -z "$so" ] || break
          so=$(cd "$d" 2>/dev/null && ls "lib${f#-l}.so."* 2>/dev/null | sort -V | head -1)
          [ -z "$so" ] || so=-l:$so
        done
        out+=("${so:-$f}") ;;
      *) out+=("$f") ;;
    esac
  done
  echo "${out[*]}"
}
no_nc4=$(nm "$flavour/libadios.a" 2>/dev/null | awk '$1 == "U" && $2 ~ /^nc_/ { print "-Wl,--defsym," $2 "=0" }' | sort -u | tr '\n' ' ')
cflags="$(pkg-config --variable=ADIOS_INC "$pc") -I$ex/inc"
# shellcheck disable=SC2046
{
  write_c="-L$flavour $(linkable $(pkg-config --variable=ADIOS_CLIB "$pc")) $no_nc4"
  read_c="-L$flavour $(linkable $(pkg-config --variable=ADIOSREAD_CLIB "$pc")) -lm"
  write_f="-L$flavour $(linkable $(pkg-config --variable=ADIOS_FLIB "$pc")) $no_nc4"
  read_f="-L$flavour $(linkable $(pkg-config --variable=ADIOSREAD_FLIB "$pc")) -lm"
}
# build PROGRAM: compiles it in its directory (Fortran's includes are found there); the
# command in $tmp/build/KEY.cmd, the compiler's output in KEY.log
build() {
  local name=$1 key=${1//\//_} dir=$ex/${1%/*} prog=${1##*/} src libs cc
  mkdir -p "$tmp/build"
  # the Makefile.am links a reader with libadiosread(f), everything else with libadios(f)
  local reader=0
  grep -q "^${prog//-/_}_LDADD = .*libadiosread" "$dir/Makefile.am" 2>/dev/null && reader=1
  if [ -e "$dir/$prog.c" ]; then
    src=$prog.c cc=mpicc.mpich libs=$write_c
    [ "$reader" = 0 ] || libs=$read_c
  else
    src=$prog.F90 cc="mpif90.mpich -I$fortran_mods" libs=$write_f
    [ "$reader" = 0 ] || libs=$read_f
  fi
  echo "cd $dir && $cc $cflags -o $prog $src $libs" >"$tmp/build/$key.cmd"
  # shellcheck disable=SC2086
  (cd "$dir" && $cc $cflags -o "$prog" "$src" $libs) >"$tmp/build/$key.log" 2>&1
}
t_start=$SECONDS
declare -A built
pids=() names=()
for name in "${selected[@]}"; do # two at a time: the machine has two cores
  build "$name" & pids+=($!) names+=("$name")
  if [ ${#pids[@]} -ge 2 ]; then
    wait "${pids[0]}" && built[${names[0]}]=1
    pids=("${pids[@]:1}") names=("${names[@]:1}")
  fi
done
for i in "${!pids[@]}"; do wait "${pids[$i]}" && built[${names[$i]}]=1; done
echo "ADIOS examples: ${#selected[@]} programs built from $examples in $((SECONDS - t_start)) s; mana: $bin"

# ---- one run ----------------------------------------------------------------------------
crash_re='Segmentation fault|Caught signal|core dumped|BAD TERMINATION|Assertion|mana_lh: |mana: '

# prepare NAME DIR: DIR becomes the program's current directory: the XML files of its example
# directory (adios_init reads its configuration from there) and the files its writer wrote
# natively.
prepare() {
  local name=$1 dir=$2 f w
  rm -rf "$dir" && mkdir -p "$dir"
  for f in "$ex/${name%/*}"/*.xml; do [ ! -e "$f" ] || cp "$f" "$dir/"; done
  w=${reads[$name]}
  if [ -n "$w" ]; then
    while read -r f; do
      mkdir -p "$dir/$(dirname "$f")" && cp "$tmp/runs/${w//\//_}.native/$f" "$dir/$f"
    done <"$tmp/runs/${w//\//_}.native.log/outputs"
  fi
}

# dump FILE: what is compared of a file a program wrote (see the header).  bpls runs in the
# file's directory: a mesh may name another file (tri2d_noxml_seperate's trimesh.bp), which
# bpls opens from its current directory, and crashes when it is not there.  It prints a NUL
# after "Processing default:".
dump() {
  case $1 in
    *.bp|*.bp.*)
      (cd "$(dirname "$1")" && bpls.mpich -la -d -D -m --hidden_attrs "$(basename "$1")" 2>&1 ||
         echo "bpls.mpich exited $?") | tr -d '\0' |
        sed -E 's/^( *integer +\/__adios__\/(create|update)_time_epoch +attr += )[0-9]+$/\1EPOCH/' ;;
    *) od -A d -t x1 "$1" ;;
  esac
}

# outputs DIR NEWER: the files under DIR newer than NEWER (those the program wrote), sorted,
# and each one's dump in DIR.dumps/
outputs() {
  local dir=$1 newer=$2 f
  (cd "$dir" && find . -type f -newer "$newer" | sed 's|^\./||' | sort) >"$dir.log/outputs"
  rm -rf "$dir.dumps" && mkdir -p "$dir.dumps"
  while read -r f; do dump "$dir/$f" >"$dir.dumps/${f//\//_}"; done <"$dir.log/outputs"
}

# run FORM NAME: the program in $tmp/runs/KEY.FORM/ (its current directory, only its own files),
# the rest in KEY.FORM.log/: cmd, rc, stdout (the launcher's, then each rank's after a
# "rank R:" line, as run_at_calls.sh --rank-output joins them), err*, outputs, and the dumps in
# KEY.FORM.dumps/.  The launcher form also counts the MPI calls (MANA_TEST_COUNT_CALLS, which
# only counts) for the restart points, instead of a run of its own.
run() {
  local form=$1 name=$2 key=${2//\//_} dir log r
  dir=$tmp/runs/$key.$form log=$tmp/runs/$key.$form.log
  prepare "$name" "$dir"
  rm -rf "$log" && mkdir -p "$log"
  local prog=$ex/$name files=(-outfile-pattern "$log/out.%r" -errfile-pattern "$log/err.%r") cmd env=()
  # shellcheck disable=SC2206
  local argv=(${args[$name]})
  case $form in
    native)   cmd=("$mpiexec" -n "$ranks" "${files[@]}" "$prog" "${argv[@]}") ;;
    launcher) cmd=("$bin/mana_launch" --ckptdir "$log/ck" "$mpiexec" -n "$ranks" "${files[@]}" "$prog" "${argv[@]}")
              env=(MANA_TEST_COUNT_CALLS="$log/counts") ;;
    per-rank) cmd=("$mpiexec" -n "$ranks" "${files[@]}" "$bin/mana_launch" --ckptdir "$log/ck" "$prog" "${argv[@]}") ;;
  esac
  echo "cd $dir && UCX_LOG_LEVEL=$UCX_LOG_LEVEL timeout $limit ${cmd[*]}" >"$log/cmd"
  touch "$log/start"
  local t0=$SECONDS
  # the launcher's stdout is named err.*: mpiexec reports a rank's crash there
  (cd "$dir" && env "${env[@]}" timeout -k 10 "$limit" "${cmd[@]}" </dev/null >"$log/err.launcher.out" 2>"$log/err.launcher")
  echo $? >"$log/rc"
  echo $((SECONDS - t0)) >"$log/time"
  {
    cat "$log/err.launcher.out"
    for ((r = 0; r < ranks; r++)); do
      echo "rank $r:"
      [ ! -e "$log/out.$r" ] || cat "$log/out.$r" # made at a rank's first output
    done
  } >"$log/stdout"
  outputs "$dir" "$log/start"
}

list_of() { if [ -s "$1" ]; then tr '\n' ' ' <"$1" | sed 's/ $//'; else echo nothing; fi; }
# same_outputs NATIVE DIR: 0 when DIR's outputs and dumps equal NATIVE's; else prints why
same_outputs() {
  local nat=$1 dir=$2 f
  if ! cmp -s "$nat.log/outputs" "$dir.log/outputs"; then
    echo "wrote $(list_of "$dir.log/outputs") instead of $(list_of "$nat.log/outputs")"
    return 1
  fi
  while read -r f; do
    cmp -s "$nat.dumps/${f//\//_}" "$dir.dumps/${f//\//_}" && continue
    echo "$f differs from native (< native, > mana): $(diff "$nat.dumps/${f//\//_}" "$dir.dumps/${f//\//_}" | grep '^[<>]' | head -4 | tr '\n' '|' | cut -c1-300)"
    return 1
  done <"$nat.log/outputs"
}

# check FORM NAME: one FAIL line per difference from the native run; 1 if there was any
check() {
  local form=$1 name=$2 key=${2//\//_} nat dir rc nrc d crash why bad=0 repro
  nat=$tmp/runs/$key.native dir=$tmp/runs/$key.$form
  rc=$(cat "$dir.log/rc") nrc=$(cat "$nat.log/rc")
  repro="run: $(cat "$dir.log/cmd"); reproduce: $(again "$name")"
  crash=$(cat "$dir.log"/err* 2>/dev/null | grep -E "$crash_re" | head -2 | tr '\n' '|')
  if [ "$form" = native ]; then
    [ "$rc" = 0 ] && [ -z "$crash" ] && return 0
    fail "$name native: exit status $rc${crash:+, ${crash%|}}: the program fails without mana; $repro"
    return 1
  fi
  [ "$rc" = "$nrc" ] || { fail "$name $form: exit status $rc, native $nrc: $(tail -2 "$dir.log/err.launcher" | tr '\n' ' '); $repro"; bad=1; }
  [ -z "$crash" ] || { fail "$name $form: error output: ${crash%|}; $repro"; bad=1; }
  d=$(diff "$nat.log/stdout" "$dir.log/stdout" | grep '^[<>]' | head -4 | tr '\n' '|' | cut -c1-300)
  [ -z "$d" ] || { fail "$name $form: stdout differs from native (< native, > mana): ${d%|}; $repro"; bad=1; }
  why=$(same_outputs "$nat" "$dir") || { fail "$name $form: $why; $repro"; bad=1; }
  return $bad
}

# restarts NAME: a checkpoint, kill and restart at each of $points calls of rank 0, spread over
# the calls the launcher form counted, one run_at_calls.sh per call, the restart forms in turn;
# after each, the files the program wrote must be the restarted run's and equal native's.  A
# request that came after a rank had ended (ranks that write their own files on
# MPI_COMM_SELF finish apart; on a loaded machine one may be in MPI_Finalize while rank 0 is
# at call K) is no checkpoint, which run_at_calls.sh reports as such; at least one point of
# each program must restart.  Sets note to the calls restarted at; 1 on a failure.
restarts() {
  local name=$1 key=${1//\//_} n i k form dir log work why line list="" untaken="" bad=0
  n=$(awk '$1 == "rank" && $2 == 0 && $3 == "calls" { print $4; exit }' "$tmp/runs/$key.launcher.log/counts" 2>/dev/null)
  if [ -z "$n" ] || [ "$n" -lt 2 ]; then
    fail "$name: rank 0 reported no call count under mana ($(head -c 200 "$tmp/runs/$key.launcher.log/counts" 2>/dev/null)); reproduce: $(again "$name")"
    return 1
  fi
  # shellcheck disable=SC2206
  local argv=(${args[$name]})
  for ((i = 1; i <= points; i++)); do
    k=$((1 + (n - 1) * i / (points + 1)))
    form=outer; [ $((i % 2)) = 1 ] || form=inner
    dir=$tmp/runs/$key.p$i log=$dir.log
    prepare "$name" "$dir"
    rm -rf "$log" && mkdir -p "$log"
    local cmd=("$at_calls" --bin "$bin" -n "$ranks" --rank-output --refusals-fail --keep
               --min-restarts 0 --calls "$k" --restart-forms "$form" "$ex/$name" "${argv[@]}")
    (cd "$dir" && timeout -k 10 $((limit * 10)) "${cmd[@]}" </dev/null >"$log/at_calls" 2>&1)
    local rc=$?
    work=$(sed -n 's/^run_at_calls.sh: work directory kept: //p' "$log/at_calls" | tail -1)
    line=$(sed -n "s/^\($k [a-z].*\)/\1/p" "$log/at_calls" | head -1)
    repro="run: cd $dir && ${cmd[*]}; reproduce: $(again "$name")"
    if [ "$rc" != 0 ] || ! grep -q 'PASS: every point identical to native' "$log/at_calls"; then
      fail "$name: restart at call $k of $n: run_at_calls.sh exited $rc: $(sed -n 's/^run_at_calls.sh: FAIL: //p' "$log/at_calls" | tail -1 | cut -c1-500); $repro"
      bad=1
      continue
    fi
    # the files: each one newer than run_at_calls.sh's native run, and equal to native's
    local f stale=""
    touch -r "$work/native.out" "$log/start"
    outputs "$dir" "$log/start"
    while read -r f; do
      grep -qxF "$f" "$log/outputs" || stale+="$f "
    done <"$tmp/runs/$key.native.log/outputs"
    if [ -n "$stale" ]; then
      fail "$name: restart at call $k of $n ($line): ${stale% } not written again under mana (only by the native run); $repro"
      bad=1
    elif ! why=$(same_outputs "$tmp/runs/$key.native" "$dir"); then
      fail "$name: restart at call $k of $n ($line): $why; $repro"
      bad=1
    else
      case $line in
        "$k no checkpoint"*) untaken+="${untaken:+,}$k" ;;
        *) list+="${list:+,}$k" ;;
      esac
      [ "${MANA_REALAPPS_KEEP:-0}" = 1 ] || rm -rf "$work" "$dir"
    fi
  done
  note="restarted at calls ${list:-none} of $n${untaken:+; no checkpoint at $untaken (a rank had ended)}"
  if [ "$bad" = 0 ] && [ "$points" -gt 0 ] && [ -z "$list" ]; then
    fail "$name: no point was restarted ($note); reproduce: $(again "$name")"
    bad=1
  fi
  return $bad
}

# ---- every program ----------------------------------------------------------------------
passed=0
for name in "${selected[@]}"; do
  if [ -z "${built[$name]:-}" ]; then
    fail "$name: does not build: $(grep -m2 -E 'error|undefined' "$tmp/build/${name//\//_}.log" | tr '\n' ' ' | cut -c1-300); reproduce: $(cat "$tmp/build/${name//\//_}.cmd")"
    echo "BAD  $name"
    continue
  fi
  w=${reads[$name]}
  if [ -n "$w" ] && [ "$(cat "$tmp/runs/${w//\//_}.native.log/rc" 2>/dev/null)" != 0 ]; then
    fail "$name: its writer $w did not run natively; reproduce: $(again "$name")"
    echo "BAD  $name"
    continue
  fi
  ok=1 note=""
  run native "$name"
  if check native "$name"; then
    for form in launcher per-rank; do
      run "$form" "$name"
      check "$form" "$name" || ok=0
    done
    if [ "$points" -gt 0 ] && [ "$ok" = 1 ]; then
      restarts "$name" || ok=0
    fi
  else
    ok=0
  fi
  if [ "$ok" = 1 ]; then
    passed=$((passed + 1))
    echo "ok   $name (native $(cat "$tmp/runs/${name//\//_}.native.log/time") s, $(wc -l <"$tmp/runs/${name//\//_}.native.log/outputs") file(s) written${note:+; $note})"
  else
    echo "BAD  $name"
  fi
done
echo "adios: $passed of ${#selected[@]} programs pass, $failures failure(s), $((SECONDS - t_start)) s"
[ "$failures" = 0 ]
