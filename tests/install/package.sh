#!/usr/bin/env bash
# package.sh - what a site does with mana: build the Debian package with CPack, install it
# with apt-get (which pulls in its dependencies), "module load mana" in a shell that has
# nothing of the checkout, run an MPI program under the installed mana_launch, checkpoint it,
# kill it, restart it with the installed mana_restart, compare with a native run, and remove
# the package again, leaving nothing behind.
#
# usage: package.sh [--source DIR] [--keep]      (as root; exit 77 otherwise)
# It builds its own tree (prefix /opt/mana/VERSION, no tests) in a temporary directory: a few
# minutes.  A mana package already installed is refused rather than replaced.
set -euo pipefail

me=package.sh
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
keep=0
while [ $# -gt 0 ]; do
  case $1 in
    --source) src=$(cd "$2" && pwd); shift 2 ;;
    --keep) keep=1; shift ;;
    *) echo "$me: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
say() { printf '%s: %s\n' "$me" "$*"; }
fail() { say "FAIL: $*"; exit 1; }
[ "$(id -u)" -eq 0 ] || { say "SKIP: installing a package needs root"; exit 77; }
if dpkg-query -W -f='${Status}' mana 2>/dev/null | grep -q "install ok installed"; then
  fail "a mana package is installed already; remove it first (apt-get remove mana)"
fi

version=$(sed -n 's/^project(mana VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
[ -n "$version" ] || fail "cannot read the version from $src/CMakeLists.txt"
prefix=/opt/mana/$version
work=$(mktemp -d "${TMPDIR:-/tmp}/mana-package.XXXXXX")
installed=0
cleanup() {
  if [ $installed = 1 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get remove -y -q mana >/dev/null 2>&1 || true
  fi
  if [ $keep = 1 ]; then say "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
export DEBIAN_FRONTEND=noninteractive

# ---- build and package ------------------------------------------------------------------------
say "building mana $version for $prefix"
cmake -S "$src" -B "$work/build" -DCMAKE_INSTALL_PREFIX="$prefix" \
  -DMANA_SYSTEM_MODULEFILES_DIR=/usr/share/modules/modulefiles -DMANA_TESTS=OFF \
  >"$work/cmake.log" 2>&1 || fail "cmake: $(tail -5 "$work/cmake.log")"
cmake --build "$work/build" -j 2 >"$work/build.log" 2>&1 || fail "build: $(tail -10 "$work/build.log")"
(cd "$work/build" && cpack -G DEB) >"$work/cpack.log" 2>&1 || fail "cpack: $(tail -10 "$work/cpack.log")"
deb=$(find "$work/build" -maxdepth 1 -name "mana_${version}_*.deb" | head -1)
[ -n "$deb" ] || fail "no package in $work/build: $(tail -5 "$work/cpack.log")"
say "built $(basename "$deb") ($(du -k "$deb" | cut -f1) KiB)"

contents=$(dpkg-deb -c "$deb")
for f in "$prefix/bin/mana_launch" "$prefix/bin/mana_lh" "$prefix/bin/mana_restart" \
         "$prefix/bin/mana_status" "$prefix/bin/mana_coordinator" "$prefix/bin/mana_chain" \
         "$prefix/bin/mana_gdb" "$prefix/share/mana/mana_gdb.py" \
         "$prefix/lib/mana/libmpich.so.12" "$prefix/lib/mana/mana_vdso.so" \
         "$prefix/libexec/mana/slurm/mana-epilog" \
         "$prefix/share/man/man1/mana_launch.1" "$prefix/share/modulefiles/mana/$version" \
         "/usr/share/modules/modulefiles/mana/$version"; do
  grep -q " \.$f\( \|$\)" <<<"$contents" || fail "the package lacks $f"
done
depends=$(dpkg-deb -f "$deb" Depends)
grep -q "libmpich12" <<<"$depends" || fail "Depends does not name libmpich12: $depends"
say "contents and dependencies: $depends"

# ---- install, as a site would -------------------------------------------------------------------
apt-get install -y -q "$deb" >"$work/apt.log" 2>&1 || fail "apt-get install: $(tail -5 "$work/apt.log")"
installed=1
if [ ! -f /usr/share/modules/init/bash ]; then
  apt-get install -y -q --no-install-recommends environment-modules >>"$work/apt.log" 2>&1 ||
    fail "cannot install environment-modules: $(tail -5 "$work/apt.log")"
fi
say "installed; environment-modules $(dpkg-query -W -f='${Version}' environment-modules)"

# A program built the way users build theirs, outside the checkout's build.
mkdir -p "$work/run"
mpicc -O2 -I"$src/tests/programs" -o "$work/run/iterative" "$src/tests/programs/iterative.c" -lm \
  >"$work/mpicc.log" 2>&1 || fail "mpicc: $(tail -5 "$work/mpicc.log")"
cd "$work/run"
mpiexec.mpich -n 2 ./iterative 20000 >native.out 2>native.err || fail "native run"

# Everything below runs in a shell that knows nothing but the module system.
cat >job.sh <<'EOF'
set -eu
source /usr/share/modules/init/bash
module load mana
echo "mana_launch: $(command -v mana_launch)"
echo "MANA_ROOT: $MANA_ROOT"
man -w mana_launch
ITERATIVE_HOLD=$PWD/release:10000 mana_launch --ckptdir ck mpiexec.mpich -n 2 ./iterative 20000 \
  >run1.out 2>run1.err &
launcher=$!
# refused until both ranks are connected: ask again, for at most a minute
tries=0
until mana_status --ckptdir ck --kill --wait 2>>status.err; do
  tries=$((tries + 1))
  [ $tries -lt 300 ] || exit 1
  sleep 0.2
done
wait $launcher
touch release
mana_restart --ckptdir ck mpiexec.mpich -n 2 >run2.out 2>run2.err
EOF
env -i HOME=/root PATH=/usr/bin:/bin LANG=C.UTF-8 bash job.sh >job.out 2>job.err ||
  fail "the job under the installed mana failed: $(tail -5 job.err) $(tail -3 run1.err run2.err 2>/dev/null)"
grep -q "^mana_launch: $prefix/bin/mana_launch$" job.out || fail "module load mana: $(cat job.out)"
grep -q "$prefix/share/man/man1/mana_launch.1" job.out || fail "man pages not found: $(cat job.out)"
cat run1.out run2.out | cmp -s - native.out ||
  fail "checkpointed and restarted output differs from native: $(cat run1.out run2.out | diff - native.out | head -5)"
say "module load mana; launch, checkpoint, kill, restart: output identical to the native run"

# ---- remove ---------------------------------------------------------------------------------------
apt-get remove -y -q mana >>"$work/apt.log" 2>&1 || fail "apt-get remove: $(tail -5 "$work/apt.log")"
installed=0
[ ! -e "$prefix" ] || fail "$prefix is left after removing the package: $(find "$prefix" | head -5)"
[ ! -e "/usr/share/modules/modulefiles/mana" ] || fail "the modulefile is left after removing the package"
say "removed: nothing of it left"
say "PASS"
