#!/usr/bin/env bash
# Installs the Debian packages mana needs to build, test and demo, only when missing.
# Idempotent; safe to run on every CI start. Pins the MPI alternatives to MPICH because
# some packages we test with (scalapack-mpi-test) pull in Open MPI and flip them.
set -euo pipefail

packages=(build-essential cmake pkg-config python3 gfortran
          mpich libmpich-dev libelf-dev libxxhash-dev libcriterion-dev libibverbs-dev
          netpipe-mpich2 scalapack-mpi-test nwchem-mpich nwchem-data
          libcoarrays-mpich-dev libhdf5-mpich-dev hdf5-tools bagel yorick-mpy-mpich2
          libadios-examples libadios-mpich-dev libadios-bin libtachyon-mpich-0-dev
          mocassin mocassin-benchmarks libblas-dev  # tests/realapps
          perl xz-utils  # MPICH's test suite (tests/mpich): runtests, the orig tarball
          clang-format  # the test style.format
          gdb)  # mana_gdb (tests/integration/gdb_upper.sh)
[ "${MANA_WITH_SLURM:-0}" = 1 ] && packages+=(slurm-wlm munge)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q >/dev/null
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
fi

# Keep mpicc/mpirun pointing at MPICH whatever else got installed.
if [ -e /usr/bin/mpicc.mpich ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO update-alternatives --set mpi /usr/bin/mpicc.mpich >/dev/null 2>&1 || true
  $SUDO update-alternatives --set mpirun /usr/bin/mpirun.mpich >/dev/null 2>&1 || true
  $SUDO update-alternatives --set mpi-x86_64-linux-gnu /usr/include/x86_64-linux-gnu/mpich >/dev/null 2>&1 || true
fi
