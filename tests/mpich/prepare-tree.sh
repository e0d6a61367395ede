#!/usr/bin/env bash
# prepare-tree.sh - MPICH's own test suite (test/mpi of the Debian source package of the
# installed MPICH), fetched, configured and built once into a cache outside the checkout.
#
# usage: prepare-tree.sh [--cache DIR] [--dirs LIST] [--programs LIST] [--jobs N]
#                        [--snapshot DEST]
#
#   --cache DIR      cache root (default $MANA_MPICH_SUITE_CACHE, else /var/tmp/mana-mpich-suite);
#                    the tree lives in DIR/VERSION (VERSION: the installed MPICH, e.g. 4.0.2)
#   --dirs LIST      test directories to build completely, comma separated (e.g. coll,pt2pt);
#                    a directory is built once and stamped (DIR/VERSION/built/NAME)
#   --programs LIST  single programs to build, comma separated paths relative to test/mpi
#                    (e.g. coll/bcasttest,threads/pt2pt/threads): what a subset needs
#   --jobs N         make -j (default 2)
#   --snapshot DEST  then copy the tree to DEST as hard links (DEST must not exist, and be on
#                    the cache's file system): a place to run the tests in that later builds
#                    into the cache do not change (make and the linker replace files, they do
#                    not rewrite them)
#
# Prints the path of the configured test/mpi tree (or DEST) as the last line of stdout.
#
# The source comes from `apt-get source --download-only mpich=SRCVERSION` through a private
# apt configuration (its own sources.list with one deb-src line, lists and cache in a
# temporary directory): the machine's own apt sources are never read or changed.  Only
# test/mpi is unpacked from the orig tarball.  The tree is configured against the installed
# MPICH (mpicc.mpich, mpiexec.mpich, and mpif77.mpich, mpifort.mpich and mpicxx.mpich for the
# f77, f90, f08 and cxx directories: Fortran programs reach mana through Debian's
# libmpichfort, C++ ones through libmpichcxx).  DIR/VERSION/KEY records the MPICH versions, the
# compiler lines and the configure line; a tree whose KEY differs is rebuilt.  A new tree is
# built under a temporary name and renamed when complete, so an interrupted build leaves
# nothing that looks finished; every step that writes the cache holds DIR/VERSION.lock
# (flock), so two runs at once wait for each other instead of building over each other.
#
# Exit status: 0 ready, 1 failure (one FAIL line says why), 2 usage error, 3 the source
# could not be downloaded (no network or no deb.debian.org: callers may skip).
set -euo pipefail

me=prepare-tree.sh
. "$(cd "$(dirname "$0")/../setup" && pwd)/apt_source.sh"
usage() {
  awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0" >&2
  exit 2
}
die_usage() { echo "$me: $*" >&2; exit 2; }
fail() { echo "$me: FAIL: $*" >&2; exit 1; }
note() { echo "$me: $*" >&2; }

cache=${MANA_MPICH_SUITE_CACHE:-/var/tmp/mana-mpich-suite}
dirs="" programs="" jobs=2 snapshot=""
while [ $# -gt 0 ]; do
  opt=$1
  case "$opt" in
    --*=*) set -- "${opt%%=*}" "${opt#*=}" "${@:2}"; continue ;;
    --cache|--dirs|--programs|--jobs|--snapshot) [ $# -ge 2 ] || die_usage "$opt needs a value" ;;
    -h|--help) usage ;;
    *) die_usage "unknown argument $opt (see --help)" ;;
  esac
  case "$opt" in
    --cache) cache=$2 ;;
    --dirs) dirs=$2 ;;
    --programs) programs=$2 ;;
    --jobs) jobs=$2 ;;
    --snapshot) snapshot=$2 ;;
  esac
  shift 2
done
case "$jobs" in ''|*[!0-9]*) die_usage "--jobs needs a whole number" ;; esac

for tool in mpicc.mpich mpif77.mpich mpifort.mpich mpicxx.mpich mpiexec.mpich mpichversion dpkg-query apt-get tar xz make flock perl; do
  command -v "$tool" >/dev/null || fail "$tool is missing (tests/setup/install-deps.sh installs what the suite needs)"
done

# The installed MPICH: upstream version (the cache directory's name) and the Debian source
# version to fetch (a binNMU such as 4.0.2-3+b1 is built from source 4.0.2-3).
version=$(mpichversion | awk -F'\t' '/^MPICH Version:/ { gsub(/[ \t]/, "", $2); print $2 }')
[ -n "$version" ] || fail "cannot read the MPICH version from mpichversion"
srcver=$(dpkg-query -W -f='${source:Version}' libmpich-dev 2>/dev/null) ||
  fail "libmpich-dev is not installed (dpkg-query)"
case "$srcver" in
  "$version"-*|"$version") ;;
  *) fail "libmpich-dev's source version $srcver is not the installed MPICH $version" ;;
esac
binver=$(dpkg-query -W -f='${Version}' libmpich-dev)

configure_env=(MPICC=mpicc.mpich MPIF77=mpif77.mpich MPIFC=mpifort.mpich MPICXX=mpicxx.mpich
               MPIEXEC=mpiexec.mpich)
configure_args=(--enable-fortran=all --enable-cxx --enable-threads=multiple --enable-romio
                --enable-rma --disable-spawn --disable-ft-tests --disable-perftest)
key="mpich $version source $srcver binary $binver
cc $(mpicc.mpich -show 2>&1)
fc $(mpifort.mpich -show 2>&1)
cxx $(mpicxx.mpich -show 2>&1)
configure ${configure_env[*]} ${configure_args[*]}
util libmtest_f08.la"

mkdir -p "$cache" || fail "cannot create the cache directory $cache"
cache=$(cd "$cache" && pwd)
tree=$cache/$version
lockfile=$cache/$version.lock
exec {lockfd}>>"$lockfile" || fail "cannot open the lock $lockfile"
if ! flock -n "$lockfd"; then
  note "another run holds $lockfile (building the suite): waiting for it"
  flock "$lockfd"
fi

# fetch_source DEST: the orig tarball of mpich=$srcver into DEST (tests/setup/apt_source.sh).
fetch_source() {
  local rc=0
  apt_source_fetch "$1" "mpich=$srcver" "$1/apt.log" || rc=$?
  [ $rc -eq 0 ] && return 0
  tail -n 5 "$1/apt.log" >&2
  if [ $rc -eq 1 ]; then
    echo "$me: cannot download the deb-src index of bookworm (see above)" >&2
  else
    echo "$me: cannot download the source package mpich=$srcver (see above)" >&2
  fi
  return 3
}

# build_tree: a complete new tree under a temporary name, renamed into place at the end.
build_tree() {
  local tmp=$cache/$version.tmp.$$ t0=$SECONDS
  rm -rf "$tmp"
  mkdir -p "$tmp"
  note "fetching the source of mpich $srcver (private apt configuration in $tmp/apt)"
  local rc=0
  fetch_source "$tmp" || rc=$?
  if [ $rc -ne 0 ]; then rm -rf "$tmp"; exit "$rc"; fi
  local orig
  orig=$(ls "$tmp"/mpich_"$version".orig.tar.* 2>/dev/null | head -n 1)
  [ -n "$orig" ] || { rm -rf "$tmp"; fail "no mpich_$version.orig.tar.* among the downloaded files (apt-get fetched another version?)"; }
  note "unpacking test/mpi from $(basename "$orig")"
  tar -xf "$orig" -C "$tmp" "mpich-$version/test/mpi" ||
    { rm -rf "$tmp"; fail "cannot unpack mpich-$version/test/mpi from $orig"; }
  mv "$tmp/mpich-$version/test/mpi" "$tmp/mpi"
  rm -rf "$tmp/mpich-$version" "$tmp"/mpich_* "$tmp/apt"
  note "configuring against the installed MPICH (log: $tree/configure.log)"
  if ! (cd "$tmp/mpi" && env "${configure_env[@]}" ./configure "${configure_args[@]}") \
       >"$tmp/configure.log" 2>&1; then
    tail -n 20 "$tmp/configure.log" >&2
    mv "$tmp/configure.log" "$cache/configure-failed.log"
    rm -rf "$tmp"
    fail "configure of the MPICH test suite failed (log: $cache/configure-failed.log)"
  fi
  note "building util and dtpools"
  local part
  for part in util dtpools util-f08; do
    # The suite's configure enables f08 only inside an MPICH build (FROM_MPICH=yes), which
    # also swaps its compilers; outside one it leaves the f08 helper library out of util.
    # The f08 programs need only that library, built here by naming its object.
    local args=(-C "$tmp/mpi/$part" -j "$jobs")
    [ "$part" = util-f08 ] && args=(-C "$tmp/mpi/util" libmtest_f08.la am_libmtest_f08_la_OBJECTS=mtest_f08.lo)
    if ! make "${args[@]}" >"$tmp/build-$part.log" 2>&1; then
      tail -n 20 "$tmp/build-$part.log" >&2
      mv "$tmp/build-$part.log" "$cache/build-$part-failed.log"
      rm -rf "$tmp"
      fail "make in $part failed (log: $cache/build-$part-failed.log)"
    fi
  done
  mkdir -p "$tmp/built"
  printf '%s\n' "$key" >"$tmp/KEY"
  rm -rf "$tree.old"
  [ -e "$tree" ] && mv "$tree" "$tree.old"
  mv "$tmp" "$tree"
  rm -rf "$tree.old"
  note "tree ready in $tree ($((SECONDS - t0)) s)"
}

# Leftovers of interrupted builds: nobody else builds while we hold the lock.
rm -rf "$cache/$version".tmp.* "$tree.old"
if [ ! -f "$tree/KEY" ] || [ "$(cat "$tree/KEY")" != "$key" ]; then
  [ -f "$tree/KEY" ] && note "the cached tree was configured for another MPICH or configure line: rebuilding"
  build_tree
fi

# make_in DIR LOG [TARGETS...]: make -k, so that one program that does not build leaves the
# others built (runtests reports it as a failure to build).
make_in() {
  local dir=$1 log=$2
  shift 2
  if ! make -k -C "$tree/mpi/$dir" -j "$jobs" "$@" >"$log" 2>&1; then
    note "some programs in $dir did not build (runtests reports them; log: $log)"
  fi
}

if [ -n "$dirs" ]; then
  IFS=, read -r -a dir_list <<<"$dirs"
  for d in "${dir_list[@]}"; do
    [ -n "$d" ] || continue
    [ -f "$tree/mpi/$d/Makefile" ] || fail "no test directory $d in $tree/mpi"
    stamp=$tree/built/${d//\//_}
    [ -e "$stamp" ] && continue
    t0=$SECONDS
    note "building $d"
    make_in "$d" "$tree/build-${d//\//_}.log"
    touch "$stamp"
    note "built $d ($((SECONDS - t0)) s)"
  done
fi

if [ -n "$programs" ]; then
  # group the programs by directory: one make per directory
  declare -A by_dir=()
  IFS=, read -r -a prog_list <<<"$programs"
  for p in "${prog_list[@]}"; do
    [ -n "$p" ] || continue
    case "$p" in */*) ;; *) die_usage "--programs wants DIR/PROGRAM, not '$p'" ;; esac
    [ -x "$tree/mpi/$p" ] && continue
    by_dir[${p%/*}]+=" ${p##*/}"
  done
  for d in "${!by_dir[@]}"; do
    [ -f "$tree/mpi/$d/Makefile" ] || fail "no test directory $d in $tree/mpi"
    read -r -a targets <<<"${by_dir[$d]}"
    note "building ${#targets[@]} programs in $d"
    make_in "$d" "$tree/build-programs-${d//\//_}.log" "${targets[@]}"
  done
fi

if [ -n "$snapshot" ]; then
  [ ! -e "$snapshot" ] || fail "--snapshot: $snapshot exists already"
  cp -al "$tree/mpi" "$snapshot" || fail "cannot copy $tree/mpi to $snapshot as hard links"
  echo "$snapshot"
else
  echo "$tree/mpi"
fi
