#!/usr/bin/env bash
# slurm-local.sh - a private Slurm "cluster" on this one machine, for the srun tests.
#
# usage: tests/setup/slurm-local.sh start|stop|status|env
#
#   start   install slurm-wlm and munge with apt-get if missing, write a configuration into
#           $MANA_SLURM_DIR (default /tmp/mana-slurm-$UID), start munged, slurmctld and slurmd
#           with it and wait until the node is idle.  Does nothing if it already runs.
#   stop    scontrol shutdown, stop the munged started here, remove the directory
#           (MANA_SLURM_KEEP=1 keeps the logs).
#   status  sinfo of the private cluster, or "not running" with exit status 1.
#   env     print "export SLURM_CONF=...", for eval "$(tests/setup/slurm-local.sh env)".
#
# Clients (srun, sinfo, scontrol) find this cluster only through SLURM_CONF; the system's
# /etc/slurm is never touched.  tests/restart/run_chain.sh --launcher srun sets SLURM_CONF
# itself when it is not set and this cluster runs.
#
# The cluster: one node named after this host with CPUs=8 (SlurmdParameters=config_overrides
# lets it claim more CPUs than the machine has), MpiDefault=pmi2 (MPICH's PMI-2 client),
# proctrack/linuxproc and task/none (no cgroups needed), select/cons_tres with CR_CPU,
# JobRequeue=1, no accounting, ports MANA_SLURM_PORT (default 16817) and +1, mana's Prolog,
# TaskProlog and Epilog from coordinator/slurm/ (logging to /var/log/mana/slurm-hooks.log), and
# KillOnBadExit=1: a rank that exits with an error ends the whole step, as Hydra does (with
# Slurm's default the other ranks wait in PMI forever, e.g. when one rank's image is
# damaged at restart and the others are already in MPI_Init).
set -euo pipefail

me=slurm-local.sh
# shellcheck source=tests/setup/slurm-conf.sh
. "$(dirname "${BASH_SOURCE[0]}")/slurm-conf.sh"
dir=${MANA_SLURM_DIR:-/tmp/mana-slurm-$(id -u)}
port=${MANA_SLURM_PORT:-16817}
conf=$dir/slurm.conf
host=$(hostname -s)
die() { echo "$me: $*" >&2; exit 1; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# pid_alive FILE: the process named in FILE runs
pid_alive() { local p; p=$(cat "$1" 2>/dev/null) && [ -n "$p" ] && kill -0 "$p" 2>/dev/null; }

running() { pid_alive "$dir/slurmctld.pid" && pid_alive "$dir/slurmd-$host.pid"; }

install_packages() {
  local missing=() p
  for p in slurm-wlm munge; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "$me: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  as_root apt-get update -q >/dev/null
  as_root apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null ||
    die "apt-get install ${missing[*]} failed"
  # The packages start no services here (no systemd); nothing to stop.
}

write_config() {
  slurm_conf_prepare "$dir"
  {
    echo "# Written by tests/setup/slurm-local.sh: a private one-machine cluster for mana's tests."
    slurm_conf_common "$dir" manatest "$host" "$port"
    echo "NodeName=$host CPUs=8 RealMemory=8000 State=UNKNOWN"
    echo "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES"
  } >"$conf"
}

start() {
  if running && SLURM_CONF=$conf timeout 5 sinfo -h >/dev/null 2>&1; then
    echo "$me: already running ($conf)"
    echo "export SLURM_CONF=$conf"
    return 0
  fi
  install_packages
  for t in munged slurmctld slurmd sinfo srun scontrol; do
    command -v "$t" >/dev/null || die "$t not found after installing slurm-wlm and munge"
  done
  write_config
  if ! pid_alive "$dir/munge/munged.pid"; then
    munged --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket" \
      --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" \
      --seed-file="$dir/munge/munged.seed" ||
      die "munged did not start: $(tail -2 "$dir/munge/munged.log" 2>/dev/null)"
  fi
  rm -rf "$dir/state"/* 2>/dev/null || true
  slurmctld -f "$conf" || die "slurmctld did not start: $(tail -3 "$dir/slurmctld.log" 2>/dev/null)"
  slurmd -f "$conf" || die "slurmd did not start: $(tail -3 "$dir/slurmd-$host.log" 2>/dev/null)"
  local i state=""
  for ((i = 0; i < 300; i++)); do
    state=$(SLURM_CONF=$conf sinfo -h -o %T 2>/dev/null | head -1 || true)
    case "$state" in idle|mixed|allocated) break ;; esac
    sleep 0.1
  done
  case "$state" in
    idle|mixed|allocated) ;;
    *) die "the node is '${state:-unknown}' after 30 s, not idle; see $dir/slurmctld.log and $dir/slurmd-$host.log" ;;
  esac
  echo "$me: running: node $host $state (config $conf)"
  echo "export SLURM_CONF=$conf"
}

stop() {
  if [ ! -d "$dir" ]; then
    echo "$me: not running ($dir does not exist)"
    return 0
  fi
  if pid_alive "$dir/slurmctld.pid"; then
    SLURM_CONF=$conf timeout 10 scontrol shutdown >/dev/null 2>&1 || true
  fi
  local i f
  for ((i = 0; i < 100; i++)); do
    pid_alive "$dir/slurmctld.pid" || pid_alive "$dir/slurmd-$host.pid" || break
    sleep 0.1
  done
  # Whatever did not go by itself: only the processes this script started (their pid files).
  for f in "$dir/slurmctld.pid" "$dir/slurmd-$host.pid" "$dir/munge/munged.pid"; do
    if pid_alive "$f"; then
      kill "$(cat "$f" 2>/dev/null)" 2>/dev/null || true
    fi
  done
  for ((i = 0; i < 50; i++)); do
    pid_alive "$dir/munge/munged.pid" || break
    sleep 0.1
  done
  if [ "${MANA_SLURM_KEEP:-0}" = 1 ]; then
    echo "$me: stopped; logs kept in $dir"
  else
    rm -rf "$dir"
    echo "$me: stopped"
  fi
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status)
    running || { echo "$me: not running"; exit 1; }
    SLURM_CONF=$conf sinfo ;;
  env) echo "export SLURM_CONF=$conf" ;;
  *) echo "usage: $me start|stop|status|env" >&2; exit 2 ;;
esac
