#!/usr/bin/env bash
# A checkpoint requested while one rank is inside its first collective on MPI_COMM_WORLD and
# another has made no collective call yet must wait for the late rank to join (it is a member
# of MPI_COMM_WORLD from MPI_Init on), then be committed, and the restart must finish with
# the native output.  Without that, the late rank looked done, the checkpoint began with the
# other rank inside the barrier and failed at the park timeout.
#   usage: run_late_world.sh MANA_BIN PROGRAM MESSAGES    (PROGRAM: ckpt_late_world)
set -u
bin=$1 prog=$2 messages=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

timeout 120 mpiexec.mpich -n 2 "$prog" "$messages" >"$work/native" 2>/dev/null ||
  fail "native run failed"
CKPT_LATE_WORLD_READY=$work/ready timeout 120 "$bin/mana_launch" --ckptdir "$work/ckpt" \
  mpiexec.mpich -n 2 "$prog" "$messages" >"$work/out1" 2>"$work/err1" &
job=$!
for _ in $(seq 600); do [ -e "$work/ready" ] && break; sleep 0.05; done
[ -e "$work/ready" ] || fail "rank 1 never reached its barrier"
out=$("$bin/mana_status" --ckptdir "$work/ckpt" --checkpoint --kill --wait 2>&1) ||
  fail "the checkpoint failed: $out"
echo "$out"
wait "$job" || fail "the checkpointed segment failed: $(tail -3 "$work/err1")"
grep -q "parked ranks released\|raises" "$work/ckpt/.mana/coordinator.log" || true
timeout 120 "$bin/mana_restart" --ckptdir "$work/ckpt" mpiexec.mpich -n 2 >"$work/out2" \
  2>"$work/err2" || fail "the restart failed: $(tail -3 "$work/err2")"
cat "$work/out1" "$work/out2" | cmp -s - "$work/native" ||
  fail "output differs: $(cat "$work/out1" "$work/out2" | diff - "$work/native" | head -5)"
echo "1 passed, 0 failed"
