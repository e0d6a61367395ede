#!/usr/bin/env bash
# The stub must export every MPI entry point and every public object the real libmpich.so.12
# does (MPI_*, PMPI_*, MPIX_*, PMPIX_*, the MPII_ helpers its Fortran binding calls, MPIR_
# sentinels, the QMPI tool interface), or an application would fail to load, or bind to
# nothing, under mana (MPICH's own mpi_t/qmpi_test did not load).  Only MPICH's version
# strings (MPII_Version_*) are not offered: applications do not link to them.
set -euo pipefail
real=$1 stub=$2
list() { nm -D --defined-only "$1" | awk '{print $3}' | grep -E '^(P?MPIX?_|MPII_|MPIR_|QMPI_)' |
         grep -v '^MPII_Version_' | sort -u; }
missing=$(comm -23 <(list "$real") <(list "$stub"))
if [ -n "$missing" ]; then
  echo "the stub lacks $(echo "$missing" | wc -l) symbols of the real library:"
  echo "$missing" | head -50
  exit 1
fi
echo "stub exports all $(list "$real" | wc -l) MPI symbols of $(basename "$(readlink -f "$real")")"
echo "1 passed, 0 failed"
