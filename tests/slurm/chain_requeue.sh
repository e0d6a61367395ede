#!/usr/bin/env bash
# chain_requeue.sh - a Slurm batch job that outlives its time limit, carried through several
# allocations by mana_chain: each allocation ends with Slurm's own warning signal
# (sbatch --time=1 --signal=B:USR1@50), mana checkpoints the job, the job requeues itself and
# the next allocation restarts from the newest checkpoint.  The program's output must equal a
# native run's, at least MIN allocations must have run, every one after the first must have
# restarted from a newer generation than the one before, and nothing of the job may be left
# running once it is over.
#
# The program (tests/programs/iterative) holds after iteration HOLD until a file exists,
# still calling MPI: the test creates the file once the MIN-th allocation runs, so the number
# of allocations never depends on how fast this machine is today.
#
# usage: chain_requeue.sh --bin DIR --program PATH [--min N] [--timeout S]
# Needs the private Slurm cluster of tests/setup/slurm-local.sh (started here when it does not
# run, and stopped again afterwards).  Exit 77 when Slurm cannot be set up.
set -euo pipefail

me=chain_requeue.sh
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
bin="" program="" min=3 timeout=900
while [ $# -gt 0 ]; do
  case $1 in
    --bin) bin=$2; shift 2 ;;
    --program) program=$2; shift 2 ;;
    --min) min=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    *) echo "$me: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[ -x "$bin/mana_launch" ] || { echo "$me: --bin must hold mana_launch" >&2; exit 2; }
[ -x "$program" ] || { echo "$me: --program must be tests/programs/iterative" >&2; exit 2; }
chain=$root/coordinator/slurm/mana_chain

say() { printf '%s: %s\n' "$me" "$*"; }
fail() { say "FAIL: $*"; exit 1; }

# shellcheck source=tests/slurm/slurm_lib.sh
. "$here/slurm_lib.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/mana-chain-requeue.XXXXXX")
trap slurm_cleanup EXIT
slurm_up

iters=6000 hold=3000
# Native reference: the same program, never held (the release file exists from the start).
touch "$work/released-native"
ITERATIVE_HOLD="$work/released-native:$hold" mpiexec.mpich -n 2 "$program" $iters \
  >"$work/native.out" 2>"$work/native.err" || fail "the native run failed: $(tail -3 "$work/native.err")"

cat >"$work/job.sh" <<EOF
#!/bin/bash
#SBATCH --job-name=mana-chain --ntasks=2 --time=1 --signal=B:USR1@50 --requeue
#SBATCH --open-mode=append --output=$work/job.out --error=$work/job.err
export PATH=$bin:\$PATH
export ITERATIVE_HOLD=$work/released:$hold
exec $chain --ckptdir $work/ck mpiexec.mpich -n 2 -- $program $iters
EOF
# As an ordinary user when this runs as root, so that the epilog does for the job what it
# does for a user's (it leaves root's processes alone).
as_user=()
if [ "$(id -u)" -eq 0 ]; then
  user=mana-test-user
  id "$user" >/dev/null 2>&1 ||
    useradd --system --user-group --no-create-home --shell /usr/sbin/nologin "$user" ||
    fail "cannot create the user $user"
  chown -R "$user:$(id -gn "$user")" "$work"
  as_user=(--uid="$user" --gid="$(id -gn "$user")")
fi
job=$(sbatch --parsable "${as_user[@]}" "$work/job.sh") || fail "sbatch failed"
say "job $job: limit 1 minute, USR1 50 s before it, $iters iterations held at $hold until allocation $min"

# Wait for the job to end, letting each requeued run start at once (Slurm delays a requeued
# job's start on purpose; a site waits, the test need not).
deadline=$((SECONDS + timeout)) released=0 state="" restarts=0
while [ $SECONDS -lt $deadline ]; do
  info=$(scontrol -o show job "$job" 2>/dev/null || true)
  state=$(sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p' <<<"$info")
  restarts=$(sed -n 's/.*Restarts=\([0-9]*\).*/\1/p' <<<"$info")
  reason=$(sed -n 's/.*Reason=\([^ ]*\).*/\1/p' <<<"$info")
  case $state in
    COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|BOOT_FAIL|DEADLINE) break ;;
  esac
  if [ "$state" = PENDING ] && [ "$reason" = BeginTime ]; then
    scontrol update JobId="$job" StartTime=now 2>/dev/null || true
  fi
  if [ $released = 0 ] && [ "$state" = RUNNING ] && [ "${restarts:-0}" -ge $((min - 1)) ]; then
    touch "$work/released"
    released=1
    say "allocation $((restarts + 1)) runs: the program may finish now"
  fi
  sleep 0.5
done
[ -n "$state" ] || fail "job $job vanished from scontrol"
case $state in
  COMPLETED) ;;
  PENDING|RUNNING|REQUEUED|CONFIGURING|COMPLETING)
    fail "job $job still $state after ${timeout}s (stderr: $(tail -3 "$work/job.err"))" ;;
  *) fail "job $job ended $state (stderr: $(tail -5 "$work/job.err"))" ;;
esac

allocations=$(grep -c "^mana_chain: allocation " "$work/job.err" || true)
say "job $job COMPLETED after $allocations allocation(s), $restarts requeue(s)"
[ "$allocations" -ge "$min" ] || fail "only $allocations allocation(s), expected at least $min"
[ "$restarts" -eq $((allocations - 1)) ] ||
  fail "$allocations allocations but Slurm counted $restarts restarts"
[ "$(grep -c "checkpoint committed" "$work/job.err")" -ge $((allocations - 1)) ] ||
  fail "an allocation ended without a committed checkpoint: $(grep mana_chain "$work/job.err")"
# Every restart must use a newer generation than the one before it.
prev=0
while read -r gen; do
  n=$((10#${gen##*gen-}))
  [ "$n" -gt "$prev" ] || fail "a restart used generation $n after $prev"
  prev=$n
done < <(sed -n 's/^mana_chain: allocation .*restarting from \(.*\)$/\1/p' "$work/job.err")
cmp -s "$work/native.out" "$work/job.out" ||
  fail "the output differs from the native run: $(diff "$work/native.out" "$work/job.out" | head -5)"
say "output identical to the native run ($(wc -l <"$work/native.out") lines)"
sed -n 's/^mana_chain: checkpoint committed \([0-9]*\) ms after the signal$/\1/p' "$work/job.err" |
  awk '{ s = s (NR > 1 ? ", " : "") $1 " ms" } END { print "'"$me"': signal to committed checkpoint: " s }'

# Nothing of the job may still run: no process carries its id any more.
left=""
for e in /proc/[0-9]*/environ; do
  if { tr '\0' '\n' <"$e"; } 2>/dev/null | grep -qx "SLURM_JOB_ID=$job"; then
    p=${e#/proc/}; p=${p%/environ}
    left+=" $p($(cat "/proc/$p/comm" 2>/dev/null))"
  fi
done
[ -z "$left" ] || fail "processes of job $job are still running:$left"

# mana's Epilog (slurm-local.sh configures the hooks) ran after every allocation, and the last
# one removed the job's runtime directory.  The Prolog ran at least once: slurmd (22.05) does
# not run it again for a requeued job that starts at once on the same node.
hooks_log=/var/log/mana/slurm-hooks.log
if grep -q "^Epilog=.*mana-epilog" "$SLURM_CONF"; then
  prologs=$(grep -c "mana-prolog\[[0-9]*\] job $job: start" "$hooks_log" || true)
  epilogs=$(grep -c "mana-epilog\[[0-9]*\] job $job: done" "$hooks_log" || true)
  if [ "$prologs" -lt 1 ] || [ "$epilogs" -lt "$allocations" ]; then
    fail "$allocations allocations but $prologs prolog(s) and $epilogs epilog(s) in $hooks_log"
  fi
  [ ! -e "/run/mana/job-$job" ] || fail "the epilog left /run/mana/job-$job"
  say "prolog and epilog ran $prologs and $epilogs times; $(grep "mana-epilog\[[0-9]*\] job $job: done" "$hooks_log" | tail -1 | sed 's/.*: done: //')"
else
  say "the cluster has no mana epilog configured (started before it was?): hooks not checked"
fi
say "PASS"
