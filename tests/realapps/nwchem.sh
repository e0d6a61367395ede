#!/usr/bin/env bash
# NWChem (Debian's nwchem-mpich) under mana: a B3LYP/6-31G* energy of benzene at 2 ranks, run
# natively, then under mana_launch, checkpointed with --kill in the middle of its SCF
# iterations (once the output shows ITERS of them), and continued with mana_restart.  The final
# energy must equal the uninterrupted native run's within 1e-9 Hartree (NWChem's last digits
# vary from run to run even natively), and the restarted run must end normally.
# NWChem's Global Arrays run over MPI one-sided communication (ARMCI-MPI): this is RMA
# windows, fence and lock epochs across a restart, in code no one here wrote.
# ARMCI_USE_WIN_ALLOCATE=0: ARMCI-MPI makes its windows with MPI_Win_create over memory it
# allocated itself (MPI_Alloc_mem).
#
#   usage: tests/realapps/nwchem.sh [--iters N] [--forms outer,inner] [MANA_BIN]
#
# Exit status: 0 when every check passes, 1 otherwise, 77 when nwchem-mpich is not installed
# (tests/setup/install-deps.sh installs it).
# MANA_REALAPPS_KEEP=1 keeps the work directory.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
iters=4 forms=outer,inner
while [ $# -gt 0 ]; do
  case "$1" in
    --iters) iters=$2; shift 2 ;;
    --forms) forms=$2; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
    *) break ;;
  esac
done
bin=${1:-${MANA_BIN:-$top/build/bin}}
nwchem=${NWCHEM:-/usr/bin/nwchem.mpich}
mpiexec=${MPIEXEC:-mpiexec.mpich}
[ -x "$nwchem" ] || { echo "SKIP: $nwchem is not installed (apt-get install nwchem-mpich)"; exit 77; }
[ -x "$bin/mana_launch" ] || { echo "FAIL: no mana_launch in $bin"; exit 1; }
bin=$(cd "$bin" && pwd) # the runs below change directory
export ARMCI_USE_WIN_ALLOCATE=0 OMP_NUM_THREADS=1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mana-nwchem.XXXXXX")
cleanup() { if [ "${MANA_REALAPPS_KEEP:-0}" = 1 ]; then echo "kept $tmp"; else rm -rf "$tmp"; fi; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

# Each run in its own directory (NWChem writes its database and scratch files next to the
# input); the same absolute path for the checkpointed run and its restart.
run_dir() { mkdir -p "$tmp/$1" && cp "$here/nwchem/benzene.nw" "$tmp/$1/" && echo "$tmp/$1"; }
energy() { awk '/Total DFT energy =/ { e = $5 } END { if (e != "") print e }' "$1"; }
scf_iters() { local n; n=$(grep -c '^ *d= *[0-9]' "$1" 2>/dev/null); echo "${n:-0}"; }

d=$(run_dir native)
t0=$(date +%s)
(cd "$d" && timeout 1800 "$mpiexec" -n 2 "$nwchem" benzene.nw >out 2>err) ||
  fail "native run failed: $(tail -3 "$d/err")"
native_s=$(( $(date +%s) - t0 ))
e0=$(energy "$d/out")
[ -n "$e0" ] || fail "no energy in the native output"
echo "native: Total DFT energy = $e0 Hartree, $(scf_iters "$d/out") SCF iterations, ${native_s} s"
limit=$(( native_s * 4 + 120 ))

for form in ${forms//,/ }; do
  d=$(run_dir "$form")
  ck=$d/ck
  if [ "$form" = outer ]; then
    (cd "$d" && exec timeout "$limit" "$bin/mana_launch" --ckptdir "$ck" "$mpiexec" -n 2 "$nwchem" \
      benzene.nw >out 2>err1) &
  else
    "$bin/mana_coordinator" --daemon --ckptdir "$ck" --ranks 2 >"$d/coord" 2>&1 ||
      fail "$form: mana_coordinator: $(cat "$d/coord")"
    (cd "$d" && exec timeout "$limit" "$mpiexec" -n 2 "$bin/mana_launch" --ckptdir "$ck" \
      "$nwchem" benzene.nw >out 2>err1) &
  fi
  job=$!
  # The checkpoint comes once the SCF is under way: a condition on the output, not a delay.
  while kill -0 "$job" 2>/dev/null && [ "$(scf_iters "$d/out")" -lt "$iters" ]; do sleep 0.2; done
  kill -0 "$job" 2>/dev/null || fail "$form: NWChem ended before $iters SCF iterations"
  st=$("$bin/mana_status" --ckptdir "$ck" --checkpoint --kill --wait --timeout 600 2>&1) ||
    fail "$form: mana_status --checkpoint --kill: $st"
  wait "$job" || fail "$form: the checkpointed run exited $?: $(tail -3 "$d/err1")"
  echo "$form: checkpointed after $(scf_iters "$d/out") SCF iterations: $st"
  if [ "$form" = outer ]; then
    (cd "$d" && timeout "$limit" "$bin/mana_restart" --ckptdir "$ck" "$mpiexec" -n 2 >>out 2>err2) ||
      fail "$form: the restart failed: $(tail -5 "$d/err2")"
  else
    (cd "$d" && timeout "$limit" "$mpiexec" -n 2 "$bin/mana_restart" --ckptdir "$ck" >>out 2>err2) ||
      fail "$form: the restart failed: $(tail -5 "$d/err2")"
  fi
  e1=$(energy "$d/out")
  [ -n "$e1" ] || fail "$form: no energy after the restart: $(tail -5 "$d/out")"
  awk -v a="$e0" -v b="$e1" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 1e-9) }' ||
    fail "$form: energy $e1 after the restart differs from native $e0 by more than 1e-9"
  echo "$form: restarted: Total DFT energy = $e1 Hartree (native $e0), $(scf_iters "$d/out") SCF iterations in all"
done
echo "PASS: NWChem benzene B3LYP/6-31G* checkpointed mid-SCF, killed and restarted to the native energy"
