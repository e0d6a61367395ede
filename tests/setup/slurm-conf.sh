# shellcheck shell=bash
# slurm-conf.sh - the one description of a private test Slurm cluster, sourced by
# tests/setup/slurm-local.sh (one node on this machine) and tests/cluster/run_cluster.sh (one
# slurmd per namespace host).  What was needed and why: ../shared/environment.md, "Slurm on
# one machine".  Callers add their NodeName and PartitionName lines.

# slurm_conf_prepare DIR: the state and munge directories, and a munge key if there is none
slurm_conf_prepare() {
  mkdir -p "$1/state" "$1/munge"
  chmod 0711 "$1/munge"
  if [ ! -s "$1/munge/munge.key" ]; then
    dd if=/dev/urandom of="$1/munge/munge.key" bs=1024 count=1 status=none
  fi
  chmod 0400 "$1/munge/munge.key"
  : >"$1/plugstack.conf"
}

# slurm_conf_common DIR NAME CONTROLLER PORT: the cluster-wide lines, on standard output.
# Ports PORT (slurmctld) and PORT+1 (slurmd); every file under DIR (%n: the node); munge's
# socket DIR/munge/munge.socket; proctrack/linuxproc and task/none (no cgroups needed);
# SlurmdParameters=config_overrides (a node may claim more CPUs than the machine has);
# KillOnBadExit=1 (a rank that fails ends the step, as Hydra does); mana's Prolog, TaskProlog
# and Epilog from this checkout, as a site installs them (docs/slurm.md).
slurm_conf_common() {
  local dir=$1 name=$2 ctld=$3 port=$4 hooks
  hooks=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../coordinator/slurm" && pwd)
  printf '%s\n' \
    "ClusterName=$name" \
    "SlurmctldHost=$ctld" \
    "SlurmUser=root" \
    "SlurmdUser=root" \
    "SlurmctldPort=$port" \
    "SlurmdPort=$((port + 1))" \
    "AuthType=auth/munge" \
    "CredType=cred/munge" \
    "AuthInfo=socket=$dir/munge/munge.socket,cred_expire=10" \
    "StateSaveLocation=$dir/state" \
    "SlurmdSpoolDir=$dir/spool-%n" \
    "SlurmctldPidFile=$dir/slurmctld.pid" \
    "SlurmdPidFile=$dir/slurmd-%n.pid" \
    "SlurmctldLogFile=$dir/slurmctld.log" \
    "SlurmdLogFile=$dir/slurmd-%n.log" \
    "PlugStackConfig=$dir/plugstack.conf" \
    "ProctrackType=proctrack/linuxproc" \
    "TaskPlugin=task/none" \
    "SelectType=select/cons_tres" \
    "SelectTypeParameters=CR_CPU" \
    "SlurmdParameters=config_overrides" \
    "MpiDefault=pmi2" \
    "JobRequeue=1" \
    "KillOnBadExit=1" \
    "ReturnToService=2" \
    "AccountingStorageType=accounting_storage/none" \
    "JobCompType=jobcomp/none" \
    "JobAcctGatherType=jobacct_gather/none" \
    "SchedulerType=sched/builtin" \
    "Prolog=$hooks/mana-prolog" \
    "Epilog=$hooks/mana-epilog" \
    "TaskProlog=$hooks/mana-task-prolog" \
    "PrologFlags=Alloc"
}
