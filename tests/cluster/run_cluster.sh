#!/usr/bin/env bash
# run_cluster.sh - a 4-rank job checkpointed on some "hosts" and restarted on others, over
# another network, compared with a native run.  The hosts are network, UTS and mount
# namespaces made by tests/setup/hosts-local.sh (a private set per run: h1, h2, h3 on a
# bridge, one file system); Hydra reaches them with -launcher ssh and the set's rsh.
#
# usage: run_cluster.sh --bin DIR --program PATH --scenario NAME [--timeout S] [--keep]
#
# Scenarios (tests/programs/iterative, 4 ranks, held at steps 40 and 80 by ITERATIVE_HOLD so
# that every segment is checkpointed or inspected at a known step, whatever the load):
#
#   placement  launched from h1 on h1:2,h2:2, checkpointed and killed at step 40; restarted
#              from h3 on h2:1,h3:3: every rank on another host, rank 0 on h2 while the
#              launcher and the coordinator are on h3; runs to the end.  UCX uses shared
#              memory between the hosts (one kernel).  MPIR_CVAR_ALLREDUCE_DEVICE_COLLECTIVE=0
#              in every run: MPICH's node-aware allreduce adds in another order on an uneven
#              placement (1+3), which changes the last bits of the output natively too.
#   shm-tcp    launched on h1 alone (shared memory, UCX's default transports), checkpointed at
#              step 40; restarted from h2 on h2:2,h3:2 with UCX_TLS=tcp,self (TCP between
#              the hosts), checkpointed again at step 80; restarted on h3 alone with the default
#              transports to the end.  The TCP segment never reaches MPI_Finalize: MPICH 4.0.2
#              with UCX 1.13.1 over TCP hangs there at 3 or more ranks, natively too.
#   tcp-shm    launched from h1 on h1:2,h2:2 with UCX_TLS=tcp,self, checkpointed at step 40;
#              restarted on h3 alone with the default transports to the end.
#   slurm      a private Slurm cluster over the hosts (munged and slurmctld on h1, one slurmd
#              per host, ports MANA_CLUSTER_SLURM_PORT (default 16917) and +1): launched from h1
#              with srun -N 2 -n 4 --ntasks-per-node=2 -w h1,h2, checkpointed at step 40;
#              restarted from h3 with srun on h2,h3 to the end.  Skipped when Slurm (slurm-wlm,
#              munge) is not installed.
#
# Every segment is checked while it holds: its ranks run on the hosts asked for (mana_status
# --json's host and pid, and the pid's UTS namespace), the coordinator listens where expected,
# and ranks on different hosts talk over TCP exactly in the TCP segments (ss in each host).  The
# stdout of the segments, concatenated, must equal the native run's; each killed segment and the
# last one must exit 0.  At the end no process is left in the hosts, the namespaces are gone
# and no /dev/shm file the ranks had mapped is left.
# Exit status: 0 pass, 1 fail (one FAIL line says why; the work directory is kept), 2 usage,
# 77 when namespaces cannot be made here (not root, no unshare).
set -euo pipefail

me=run_cluster.sh
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=tests/setup/slurm-conf.sh
. "$root/tests/setup/slurm-conf.sh"
hosts_sh=$root/tests/setup/hosts-local.sh
bin="" program="" scenario="" limit=300 keep=0
while [ $# -gt 0 ]; do
  case $1 in
    --bin) bin=$(cd "$2" && pwd); shift 2 ;;
    --program) program=$2; shift 2 ;;
    --scenario) scenario=$2; shift 2 ;;
    --timeout) limit=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    *) echo "$me: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[ -x "$bin/mana_launch" ] || { echo "$me: --bin must hold mana_launch" >&2; exit 2; }
[ -x "$program" ] || { echo "$me: --program must be tests/programs/iterative" >&2; exit 2; }
case $scenario in
  placement|shm-tcp|tcp-shm|slurm) ;;
  *) echo "$me: --scenario must be placement, shm-tcp, tcp-shm or slurm" >&2; exit 2 ;;
esac
program=$(cd "$(dirname "$program")" && pwd)/$(basename "$program")

say() { printf '%s: %s\n' "$me" "$*"; }
skip() { say "SKIP: $*"; exit 77; }
t_start=$SECONDS
[ "$(id -u)" -eq 0 ] || skip "needs root (network namespaces)"
command -v mpiexec.mpich >/dev/null || skip "mpiexec.mpich not found"
if [ "$scenario" = slurm ]; then
  for t in munged slurmctld slurmd srun scontrol sinfo; do
    command -v $t >/dev/null ||
      skip "$t not found: install slurm-wlm and munge (tests/setup/slurm-local.sh start does)"
  done
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/mana-cluster.XXXXXX")
chmod 0755 "$work"
export MANA_HOSTS_DIR=$work/hosts MANA_HOSTS_PREFIX=manac$$ MANA_HOSTS_N=3
unset MANA_HOSTS_NET MANA_HOSTS_BOOT_ID
ck=$work/ck
failed=0
seg_pids=()
slurm_dir=""

fail() {
  say "FAIL: $*"
  failed=1
  exit 1
}

# The test's own processes: the segments it started and everything inside its hosts (the
# hosts are private to this run, so whatever runs there is the test's).
end_processes() {
  local p i left
  for p in "${seg_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for ((i = 0; i < 100; i++)); do
    left=$("$hosts_sh" procs 2>/dev/null | awk '{ print $1 }')
    [ -n "$left" ] || return 0
    if [ $i -lt 50 ]; then
      kill $left 2>/dev/null || true
    else
      kill -KILL $left 2>/dev/null || true
    fi
    sleep 0.1
  done
}

cleanup() {
  local rc=$?
  [ -z "$slurm_dir" ] || slurm_stop >/dev/null 2>&1 || true
  end_processes
  "$hosts_sh" stop >/dev/null 2>&1 || "$hosts_sh" stop >&2 || true
  if [ "$keep" = 1 ] || [ "$failed" = 1 ] || { [ $rc -ne 0 ] && [ $rc -ne 77 ]; }; then
    say "kept $work"
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT
trap 'fail "interrupted"' INT TERM

rc=0
"$hosts_sh" start >"$work/hosts-start.log" 2>&1 || rc=$?
if [ $rc -ne 0 ]; then
  [ $rc -eq 3 ] && skip "$(tail -1 "$work/hosts-start.log")"
  fail "the hosts did not start: $(tail -2 "$work/hosts-start.log")"
fi
rsh=$("$hosts_sh" rsh)
say "$scenario: hosts up ($(sed -n 's/.*running: //p' "$work/hosts-start.log"))"

iters=120 nloc=16384 hold1=40 hold2=80
hold_env=ITERATIVE_HOLD=$work/release1:$hold1,$work/release2:$hold2
common_env=(ITERATIVE_PROGRESS=20 "$hold_env")
[ "$scenario" = placement ] && common_env+=(MPIR_CVAR_ALLREDUCE_DEVICE_COLLECTIVE=0)
tcp_env=("UCX_TLS=tcp,self")

# on HOST CMD...: run CMD inside HOST
on() { "$hosts_sh" exec "$@"; }

# slurm_start: a private Slurm cluster over the hosts; clients find it through SLURM_CONF and
# must run inside a host (h1 is only a name there)
slurm_start() {
  local port=${MANA_CLUSTER_SLURM_PORT:-16917} h state="" deadline=$((SECONDS + limit))
  slurm_dir=$work/slurm
  slurm_conf_prepare "$slurm_dir"
  {
    echo "# Written by tests/cluster/run_cluster.sh: Slurm over the hosts of $MANA_HOSTS_PREFIX."
    slurm_conf_common "$slurm_dir" manahosts h1 "$port"
    echo "NodeName=h[1-3] CPUs=4 RealMemory=4000 State=UNKNOWN"
    echo "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES"
  } >"$slurm_dir/slurm.conf"
  export SLURM_CONF=$slurm_dir/slurm.conf
  hooks_log=/var/log/mana/slurm-hooks.log
  hooks_from=$(( $(wc -l <"$hooks_log" 2>/dev/null || echo 0) + 1 ))
  # munged's socket is a file: every host reaches it
  on h1 munged --key-file="$slurm_dir/munge/munge.key" --socket="$slurm_dir/munge/munge.socket" \
    --pid-file="$slurm_dir/munge/munged.pid" --log-file="$slurm_dir/munge/munged.log" \
    --seed-file="$slurm_dir/munge/munged.seed" || fail "munged did not start"
  on h1 slurmctld -f "$SLURM_CONF" || fail "slurmctld did not start: $(tail -2 "$slurm_dir/slurmctld.log")"
  for h in h1 h2 h3; do
    on $h slurmd -f "$SLURM_CONF" || fail "slurmd on $h did not start: $(tail -2 "$slurm_dir/slurmd-$h.log")"
  done
  while [ "$state" != "idle 3" ]; do
    [ $SECONDS -lt $deadline ] || fail "the Slurm nodes are '$state' after ${limit}s, not 3 idle (see $slurm_dir)"
    sleep 0.2
    state=$(on h3 sinfo -h -o '%T %D' 2>/dev/null | tr '\n' ' ' | sed 's/ $//' || true)
  done
  say "Slurm up: h1, h2, h3 idle (ports $port, $((port + 1)))"
}

# slurm_stop: scontrol shutdown, then munged; each ends within 30 s
slurm_stop() {
  local deadline=$((SECONDS + 30)) p
  on h1 scontrol shutdown >/dev/null 2>&1 || true
  while "$hosts_sh" procs | grep -q ' slurm'; do
    [ $SECONDS -lt $deadline ] || fail "Slurm's daemons did not end in 30 s after scontrol shutdown"
    sleep 0.2
  done
  p=$(cat "$slurm_dir/munge/munged.pid" 2>/dev/null) && kill "$p" 2>/dev/null || true
  while "$hosts_sh" procs | grep -q ' munged'; do
    [ $SECONDS -lt $deadline ] || fail "munged did not end"
    sleep 0.2
  done
  slurm_dir=""
}

[ "$scenario" = slurm ] && slurm_start

# The native reference, on h1 (Slurm: srun on h1 and h2): 4 ranks, never held (both release
# files exist for it).
touch "$work/native-release1" "$work/native-release2"
t0=$SECONDS
native_env=(ITERATIVE_HOLD="$work/native-release1:$hold1,$work/native-release2:$hold2")
[ "$scenario" = placement ] && native_env+=(MPIR_CVAR_ALLREDUCE_DEVICE_COLLECTIVE=0)
native_launcher=(mpiexec.mpich -n 4)
[ "$scenario" = slurm ] && native_launcher=(srun -N 2 -n 4 --ntasks-per-node=2 -w "h1,h2")
on h1 env "${native_env[@]}" timeout "$limit" "${native_launcher[@]}" "$program" $iters $nloc \
  >"$work/native.out" 2>"$work/native.err" ||
  fail "the native run failed or took over ${limit}s: $(tail -3 "$work/native.err")"
say "native run: $((SECONDS - t0)) s, $(wc -l <"$work/native.out") lines"

hydra=(mpiexec.mpich -launcher ssh -launcher-exec "$rsh")

# seg_start NAME HOST ENV... -- CMD...: start a segment inside HOST in the background
seg_start() {
  local name=$1 host=$2 envs=()
  shift 2
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  echo "$host: ${envs[*]} $*" >"$work/$name.cmd"
  on "$host" env "${envs[@]}" "$@" >"$work/$name.out" 2>"$work/$name.err" &
  seg_pid=$!
  seg_pids+=("$seg_pid")
  seg_t0=$SECONDS
}

# seg_wait_hold NAME STEP: until rank 0 holds at STEP
seg_wait_hold() {
  local name=$1 step=$2 deadline=$((SECONDS + limit))
  while ! grep -q "holding at step $step " "$work/$name.err" 2>/dev/null; do
    kill -0 "$seg_pid" 2>/dev/null ||
      fail "$name ended before step $step: $(tail -4 "$work/$name.err" | tr '\n' ' ')"
    [ $SECONDS -lt $deadline ] ||
      fail "$name did not reach step $step in ${limit}s ($(grep 'step' "$work/$name.err" | tail -1))"
    sleep 0.2
  done
}

# seg_wait_exit NAME: until the segment's launcher exits; it must exit 0
seg_wait_exit() {
  local name=$1 deadline=$((SECONDS + limit)) rc=0
  while kill -0 "$seg_pid" 2>/dev/null; do
    [ $SECONDS -lt $deadline ] ||
      fail "$name did not end in ${limit}s (procs: $("$hosts_sh" procs | awk '{ print $2 ":" $3 }' | sort | uniq -c | tr -s ' \n' ' '); log: $(tail -3 "$work/$name.err" | tr '\n' ' '))"
    sleep 0.2
  done
  wait "$seg_pid" || rc=$?
  [ $rc -eq 0 ] || fail "$name exited $rc: $(tail -4 "$work/$name.err" | tr '\n' ' ')"
  say "$name: ended, exit 0 ($((SECONDS - seg_t0)) s)"
}

# host_of_pid PID: the host whose UTS namespace PID is in
host_of_pid() {
  local uts h holder
  uts=$(readlink "/proc/$1/ns/uts" 2>/dev/null) || { echo gone; return; }
  for h in h1 h2 h3; do
    read -r holder _ <"$MANA_HOSTS_DIR/$h.holder"
    [ "$(readlink "/proc/$holder/ns/uts")" = "$uts" ] && { echo "$h"; return; }
  done
  echo none
}

# seg_check NAME ASK_HOST COORD HOSTS TCP: while the segment holds, asked from ASK_HOST: the
# coordinator listens on COORD (a host name or 127.0.0.1), rank r runs on the r-th word of
# HOSTS (by mana_status and by the pid's UTS namespace), and ranks on different hosts have TCP
# connections between them when TCP is "tcp", none when it is "shm".
seg_check() {
  local name=$1 ask=$2 coord=$3 want=$4 tcp=$5 json addr got="" pids=() r p h ports links
  json=$(on "$ask" "$bin/mana_status" --ckptdir "$ck" --json) ||
    fail "$name: mana_status --json from $ask failed"
  echo "$json" >"$work/$name.status.json"
  addr=$(sed -n 's/^  "address": "\(.*\)",$/\1/p' <<<"$json")
  [ "${addr%:*}" = "$coord" ] || fail "$name: the coordinator listens on $addr, expected $coord"
  while read -r r h p; do
    got+="$h "
    pids+=("$p")
    [ "$(host_of_pid "$p")" = "$h" ] ||
      fail "$name: rank $r (pid $p) says host $h but runs in $(host_of_pid "$p")"
  done < <(awk -F'[:,"]+' '/"rank":/ { r = $3 } /"host":/ { h = $3 } /"pid":/ && r != "" { print r, h, $3; r = "" }' \
             <<<"$(sed 's/ //g' <<<"$json")")
  [ "${got% }" = "$want" ] || fail "$name: ranks run on '${got% }', expected '$want'"
  # /dev/shm files the ranks map, to check at the end that none is left
  for p in "${pids[@]}"; do
    awk '$6 ~ /^\/dev\/shm\// { print $6 }' "/proc/$p/maps" 2>/dev/null >>"$work/shm-seen" || true
    echo "/dev/shm/mana-win-$p-" >>"$work/shm-prefixes"
  done
  # TCP sockets of ranks, and only of ranks, to other ranks (not to the coordinator); those to
  # ranks of other hosts are counted apart
  ports=" ${addr##*:} "
  links=0 cross=0
  for h in $(tr ' ' '\n' <<<"$want" | sort -u); do
    read -r n c < <(on "$h" ss -tnpH state established 2>/dev/null | awk -v pids=" ${pids[*]} " -v cport="$ports" '
      { split($3, l, ":"); split($4, q, ":")
        if (index(cport, " " q[2] " ") || index(cport, " " l[2] " ")) next
        # every holder of the socket a rank (Hydra proxies pass their own to the ranks)
        rest = $0; mine = 0
        while (match(rest, /pid=[0-9]+/)) {
          if (!index(pids, " " substr(rest, RSTART + 4, RLENGTH - 4) " ")) next
          mine = 1; rest = substr(rest, RSTART + RLENGTH)
        }
        n += mine; if (mine && l[1] != q[1]) c++ }
      END { print n + 0, c + 0 }')
    links=$((links + n)) cross=$((cross + c))
  done
  case $tcp in
    tcp) [ "$cross" -gt 0 ] || fail "$name: no TCP connection between ranks of different hosts (UCX_TLS=tcp,self)" ;;
    shm) [ "$links" -eq 0 ] || fail "$name: $links TCP socket(s) between ranks, expected shared memory only" ;;
  esac
  say "$name: ranks on ${got% } (coordinator $addr), $links TCP socket(s) between ranks, $cross to other hosts"
}

# log_check NAME HOSTS: rank r of the newest coordinator's job connected from the r-th host
# of HOSTS, by the coordinator's log (for a segment that runs to its end without a hold)
log_check() {
  local name=$1 want=$2 got
  got=$(awk '/mana_coordinator: listening on/ { delete h; n = 0 }
             /mana_coordinator: rank [0-9]+ connected from/ {
               match($0, /rank [0-9]+/); r = substr($0, RSTART + 5, RLENGTH - 5)
               match($0, /\(host [^,]+/); h[r] = substr($0, RSTART + 6, RLENGTH - 6); n++ }
             END { for (r = 0; r < n; r++) printf "%s%s", (r ? " " : ""), h[r] }' "$ck/.mana/coordinator.log")
  [ "$got" = "$want" ] || fail "$name: the coordinator's log has the ranks on '$got', expected '$want'"
  say "$name: ranks on $got (coordinator's log)"
}

# seg_checkpoint_kill NAME ASK_HOST: checkpoint and end the job; the segment must exit 0
seg_checkpoint_kill() {
  local name=$1 ask=$2 out
  out=$(on "$ask" timeout "$limit" "$bin/mana_status" --ckptdir "$ck" --kill --wait 2>&1) ||
    fail "$name: the checkpoint from $ask failed: $out"
  say "$name: $out"
  seg_wait_exit "$name"
}

case $scenario in
  placement)
    seg_start launch h1 "${common_env[@]}" -- \
      "$bin/mana_launch" --ckptdir "$ck" "${hydra[@]}" -hosts h1:2,h2:2 -n 4 "$program" $iters $nloc
    seg_wait_hold launch $hold1
    seg_check launch h1 h1 "h1 h1 h2 h2" shm
    seg_checkpoint_kill launch h1
    touch "$work/release1"
    seg_start restart h3 "${common_env[@]}" -- \
      "$bin/mana_restart" --ckptdir "$ck" "${hydra[@]}" -hosts h2:1,h3:3 -n 4
    seg_wait_hold restart $hold2
    seg_check restart h2 h3 "h2 h3 h3 h3" shm
    touch "$work/release2"
    seg_wait_exit restart
    segments="launch restart"
    ;;
  shm-tcp)
    seg_start launch h1 "${common_env[@]}" -- \
      "$bin/mana_launch" --ckptdir "$ck" mpiexec.mpich -n 4 "$program" $iters $nloc
    seg_wait_hold launch $hold1
    seg_check launch h1 127.0.0.1 "h1 h1 h1 h1" shm
    seg_checkpoint_kill launch h1
    touch "$work/release1"
    seg_start restart-tcp h2 "${common_env[@]}" "${tcp_env[@]}" -- \
      "$bin/mana_restart" --ckptdir "$ck" "${hydra[@]}" -hosts h2:2,h3:2 -n 4
    seg_wait_hold restart-tcp $hold2
    seg_check restart-tcp h3 h2 "h2 h2 h3 h3" tcp
    seg_checkpoint_kill restart-tcp h2
    touch "$work/release2"
    seg_start restart-shm h3 "${common_env[@]}" -- \
      "$bin/mana_restart" --ckptdir "$ck" mpiexec.mpich -n 4
    seg_wait_exit restart-shm
    log_check restart-shm "h3 h3 h3 h3"
    segments="launch restart-tcp restart-shm"
    ;;
  tcp-shm)
    seg_start launch-tcp h1 "${common_env[@]}" "${tcp_env[@]}" -- \
      "$bin/mana_launch" --ckptdir "$ck" "${hydra[@]}" -hosts h1:2,h2:2 -n 4 "$program" $iters $nloc
    seg_wait_hold launch-tcp $hold1
    seg_check launch-tcp h2 h1 "h1 h1 h2 h2" tcp
    seg_checkpoint_kill launch-tcp h1
    touch "$work/release1"
    seg_start restart-shm h3 "${common_env[@]}" -- \
      "$bin/mana_restart" --ckptdir "$ck" mpiexec.mpich -n 4
    seg_wait_hold restart-shm $hold2
    seg_check restart-shm h3 127.0.0.1 "h3 h3 h3 h3" shm
    touch "$work/release2"
    seg_wait_exit restart-shm
    segments="launch-tcp restart-shm"
    ;;
  slurm)
    srun_args=(-N 2 -n 4 --ntasks-per-node=2)
    seg_start launch h1 "${common_env[@]}" -- \
      "$bin/mana_launch" --ckptdir "$ck" srun "${srun_args[@]}" -w h1,h2 "$program" $iters $nloc
    seg_wait_hold launch $hold1
    seg_check launch h3 h1 "h1 h1 h2 h2" shm
    seg_checkpoint_kill launch h2
    touch "$work/release1"
    seg_start restart h3 "${common_env[@]}" -- \
      "$bin/mana_restart" --ckptdir "$ck" srun "${srun_args[@]}" -w h2,h3
    seg_wait_hold restart $hold2
    seg_check restart h2 h3 "h2 h2 h3 h3" shm
    touch "$work/release2"
    seg_wait_exit restart
    segments="launch restart"
    ;;
esac

# The output of the segments, one after the other, is the native run's.
for s in $segments; do cat "$work/$s.out"; done >"$work/all.out"
cmp -s "$work/native.out" "$work/all.out" ||
  fail "the output differs from the native run: $(diff "$work/native.out" "$work/all.out" | head -6 | tr '\n' ' ')"
gens=$(ls -d "$ck"/gen-* 2>/dev/null | wc -l)
say "output identical to the native run ($(wc -l <"$work/native.out") lines, $gens generation(s))"

# Nothing of the job is left: no process in the hosts (the coordinator ends with the job),
# then the hosts go, then no /dev/shm file the ranks had mapped.
if [ -n "$slurm_dir" ]; then
  # mana's epilog ran on every node of every job (the native one, the launch, the restart:
  # two nodes each) and removed each job's runtime directory.  slurmd runs it after srun has
  # returned, so the last job's may still be running: waited for, up to 60 s.
  deadline=$((SECONDS + 60))
  while :; do
    epilogs=$(tail -n +"$hooks_from" "$hooks_log" 2>/dev/null | grep -c "mana-epilog\[[0-9]*\] job [0-9]*: done" || true)
    [ "$epilogs" -lt 6 ] && [ $SECONDS -lt $deadline ] || break
    sleep 0.2
  done
  [ "$epilogs" -ge 6 ] || fail "mana's epilog ran $epilogs time(s) for 3 jobs on 2 nodes each (after 60 s)"
  for j in $(tail -n +"$hooks_from" "$hooks_log" | sed -n 's/.*mana-epilog\[[0-9]*\] job \([0-9]*\): done.*/\1/p' | sort -u); do
    [ ! -e "/run/mana/job-$j" ] || fail "the epilog left /run/mana/job-$j"
  done
  say "mana's epilog ran $epilogs times and left no runtime directory"
  slurm_stop
  say "Slurm stopped"
fi
deadline=$((SECONDS + 60))
while [ -n "$("$hosts_sh" procs)" ]; do
  [ $SECONDS -lt $deadline ] || fail "processes left 60 s after the job ended: $("$hosts_sh" procs | tr '\n' ';')"
  sleep 0.2
done
"$hosts_sh" stop >"$work/hosts-stop.log" 2>&1 || fail "hosts-local.sh stop: $(cat "$work/hosts-stop.log")"
left=$(ip netns list 2>/dev/null | grep "^$MANA_HOSTS_PREFIX-" || true)
[ -z "$left" ] || fail "network namespaces left: $left"
left=""
for f in $(sort -u "$work/shm-seen" 2>/dev/null); do [ ! -e "$f" ] || left+=" $f"; done
while read -r prefix; do
  for f in "$prefix"*; do [ ! -e "$f" ] || left+=" $f"; done
done < <(sort -u "$work/shm-prefixes" 2>/dev/null)
[ -z "$left" ] || fail "/dev/shm files of the job left:$left"
say "no process, namespace or /dev/shm file left; $((SECONDS - t_start)) s"
say "PASS"
