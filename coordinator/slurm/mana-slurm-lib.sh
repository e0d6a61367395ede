# shellcheck shell=bash disable=SC2034 # its variables are used by the hooks that source it
# mana-slurm-lib.sh - what mana's Slurm hooks (mana-prolog, mana-epilog, mana-task-prolog)
# share: the site configuration, the log, the job's user and the job's processes.
#
# Sourced by the hooks from their own directory, never run. Defining functions and
# variables is all it does when sourced; each hook decides what to call.
#
# Settings, first found wins (the environment is for tests; slurmd gives a Prolog and an
# Epilog only its own SLURM_* variables, so in production the file decides):
#   MANA_RUNTIME_ROOT  environment, /etc/mana/slurm.conf, else /run/mana
#   MANA_SLURM_LOG     environment, /etc/mana/slurm.conf, else /var/log/mana/slurm-hooks.log
#   MANA_CKPT_ROOT     /etc/mana/slurm.conf only (unset: no per-user checkpoint directory)
# MANA_SLURM_CONF names another configuration file.

# Hooks run from slurmd with no PATH at all, and an inherited PATH could name anything.
MANA_SLURM_SAFE_PATH=/usr/sbin:/usr/bin:/sbin:/bin

# Names MPICH 4.0.2 and UCX give their POSIX shared memory in /dev/shm. They carry no pid, so
# mana-epilog tells a leftover from another job's by who maps it and by whether the user runs
# anything else on the node. Both unlink the file once every local rank has mapped it; a job
# killed with SIGKILL inside MPI_Init leaves mpich_shar_tmp* (and, seen once, ucx_shm_posix_*).
MANA_SHM_FOREIGN_PATTERNS=('mpich_shar_tmp*' 'ucx_shm_posix_*')

mana_hook=mana-hook
mana_job_id=
mana_log_file=
mana_log_quiet=0
mana_runtime_root=
mana_ckpt_root=
declare -A mana_conf=()

# --- logging ---------------------------------------------------------------------------------

# mana_log MESSAGE: one line in the hooks' log. A log that cannot be written must not fail
# the hook (that would drain the node for a logging problem), so the line then goes to
# stderr, which slurmd keeps in its own log.
mana_log() {
  local line
  printf -v line '%(%Y-%m-%dT%H:%M:%S%z)T %s[%d] job %s: %s' -1 "$mana_hook" "$$" \
    "${mana_job_id:-?}" "$1"
  if [ "$mana_log_quiet" = 1 ] || [ -z "$mana_log_file" ] ||
    ! { printf '%s\n' "$line" >>"$mana_log_file"; } 2>/dev/null; then
    printf '%s\n' "$line" >&2
    return 1
  fi
}

# mana_warn MESSAGE: a problem the administrator should see: the log and stderr.
mana_warn() {
  mana_log "$1" && printf '%s: job %s: %s\n' "$mana_hook" "${mana_job_id:-?}" "$1" >&2
  return 0
}

# mana_fail MESSAGE: the hook cannot do its job; Slurm is told with a non-zero status.
mana_fail() {
  mana_warn "failed: $1"
  exit 1
}

# --- configuration ---------------------------------------------------------------------------

# mana_conf_read FILE: KEY=value lines into mana_conf. The file is never executed: no
# expansion, no command substitution; one pair of surrounding quotes is removed, and an
# unquoted value ends at " #". An unreadable or missing file is an empty configuration.
# Complaints wait in mana_conf_problems: the file may name the log they belong in.
mana_conf_problems=()
mana_conf_read() {
  local file=$1 line key value n=0
  mana_conf=()
  mana_conf_problems=()
  [ -e "$file" ] || return 0
  if [ ! -r "$file" ]; then
    mana_conf_problems+=("cannot read the configuration $file; using defaults")
    return 0
  fi
  while IFS= read -r line || [ -n "$line" ]; do
    n=$((n + 1))
    line=${line%$'\r'}
    [[ $line =~ ^[[:space:]]*(#.*)?$ ]] && continue
    if [[ ! $line =~ ^[[:space:]]*(export[[:space:]]+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$ ]]; then
      mana_conf_problems+=("$file:$n: not a KEY=value line, ignored")
      continue
    fi
    key=${BASH_REMATCH[2]}
    value=${BASH_REMATCH[3]}
    if [[ $value =~ ^\"([^\"]*)\"[[:space:]]*(#.*)?$ || $value =~ ^\'([^\']*)\'[[:space:]]*(#.*)?$ ]]; then
      value=${BASH_REMATCH[1]}
    else
      value=${value%%[[:space:]]#*}
      value=${value%"${value##*[![:space:]]}"}
    fi
    mana_conf[$key]=$value
  done <"$file"
}

# mana_path_ok VALUE: an absolute path without "." or ".." components, so that a setting can
# not make a root hook work outside the directory it names.
mana_path_ok() {
  [[ $1 == /* && $1 != / && ! $1 =~ (^|/)\.\.?(/|$) && $1 != *$'\n'* ]]
}

# mana_config_load: the three settings, checked. A bad runtime root or log path is a
# configuration error of the site (the hook cannot work); a bad checkpoint root only disables
# the checkpoint directory.
mana_config_load() {
  mana_conf_read "${MANA_SLURM_CONF:-/etc/mana/slurm.conf}"
  mana_runtime_root=${MANA_RUNTIME_ROOT:-${mana_conf[MANA_RUNTIME_ROOT]:-/run/mana}}
  mana_log_file=${MANA_SLURM_LOG:-${mana_conf[MANA_SLURM_LOG]:-/var/log/mana/slurm-hooks.log}}
  mana_ckpt_root=${mana_conf[MANA_CKPT_ROOT]:-}
  mana_ckpt_root=${mana_ckpt_root%/}
  mana_runtime_root=${mana_runtime_root%/}
  if ! mana_path_ok "$mana_log_file"; then
    local bad=$mana_log_file
    mana_log_file=
    mana_fail "MANA_SLURM_LOG=$bad is not an absolute path"
  fi
  [ "$mana_log_quiet" = 1 ] || mana_log_dir_ready
  local problem
  for problem in "${mana_conf_problems[@]}"; do
    mana_warn "$problem"
  done
  mana_path_ok "$mana_runtime_root" ||
    mana_fail "MANA_RUNTIME_ROOT=$mana_runtime_root is not an absolute path"
  if [ -n "$mana_ckpt_root" ] && ! mana_path_ok "$mana_ckpt_root"; then
    mana_warn "MANA_CKPT_ROOT=$mana_ckpt_root is not an absolute path; ignored"
    mana_ckpt_root=
  fi
}

# mana_log_dir_ready: the log's directory, readable like the rest of /var/log.
mana_log_dir_ready() {
  local dir=${mana_log_file%/*}
  if [ -z "$dir" ] || [ -d "$dir" ]; then
    return 0
  fi
  (umask 022 && mkdir -p -- "$dir") 2>/dev/null ||
    printf '%s: cannot create the log directory %s\n' "$mana_hook" "$dir" >&2
}

# mana_hook_start NAME: what every root hook does first: a safe PATH, private modes for
# anything created without an explicit one, the configuration and the log, the job id.
mana_hook_start() {
  mana_hook=$1
  PATH=$MANA_SLURM_SAFE_PATH
  export PATH
  umask 077
  mana_job_id=${SLURM_JOB_ID:-}
  # The id becomes part of paths and of an exact match against environments.
  if [[ ! $mana_job_id =~ ^[0-9]+$ ]]; then
    mana_job_id=
    mana_config_load
    mana_fail "SLURM_JOB_ID '${SLURM_JOB_ID:-}' is missing or not a number (not run by slurmd?)"
  fi
  mana_config_load
}

# --- the job's user --------------------------------------------------------------------------

mana_user=
mana_uid=
mana_gid=

# mana_user_resolve: mana_user, mana_uid and mana_gid from SLURM_JOB_USER and SLURM_JOB_UID
# (either may be missing; SLURM_JOB_UID wins when they disagree, it is what the job ran as).
# Fails (status 1, reason logged) when neither names an account.
mana_user_resolve() {
  local entry name uid gid rest
  mana_user=${SLURM_JOB_USER:-}
  mana_uid=${SLURM_JOB_UID:-}
  if [[ -n $mana_uid && ! $mana_uid =~ ^[0-9]+$ ]]; then
    mana_warn "SLURM_JOB_UID '$mana_uid' is not a number"
    return 1
  fi
  if [ -n "$mana_uid" ]; then
    entry=$(getent passwd "$mana_uid")
  elif [ -n "$mana_user" ]; then
    entry=$(getent passwd "$mana_user")
  else
    mana_warn "neither SLURM_JOB_USER nor SLURM_JOB_UID is set"
    return 1
  fi
  if [ -z "$entry" ]; then
    mana_warn "no account for user '${mana_user:-?}' uid ${mana_uid:-?}"
    return 1
  fi
  IFS=: read -r name _ uid gid rest <<<"$entry"
  if [ -n "$mana_user" ] && [ "$mana_user" != "$name" ]; then
    mana_warn "SLURM_JOB_USER=$mana_user but uid $uid is $name; using $name"
  fi
  mana_user=$name
  mana_uid=$uid
  mana_gid=$gid
}

# --- the job's processes ---------------------------------------------------------------------

# pid -> start time (clock ticks after boot), so that a pid the kernel hands to a new process
# after the job's one exited is never signalled.
declare -A mana_job_start=()
# pid -> the program's name (for the log)
declare -A mana_job_exe=()

# mana_proc_stat PID: sets mana_stat_state and mana_stat_start from /proc/PID/stat; status 1
# when the process is gone. The command name may hold spaces and parentheses, so the fields
# are counted after its last ')'.
mana_stat_state=
mana_stat_start=
mana_proc_stat() {
  local line rest
  local -a f
  read -r line 2>/dev/null <"/proc/$1/stat" || return 1
  rest=${line##*) }
  read -r -a f <<<"$rest"
  mana_stat_state=${f[0]}
  mana_stat_start=${f[19]}
}

# mana_proc_uids PID: prints the real, effective, saved and filesystem uid.
mana_proc_uids() {
  local key a b c d
  while read -r key a b c d; do
    if [ "$key" = Uid: ]; then
      printf '%s %s %s %s\n' "$a" "$b" "$c" "$d"
      return 0
    fi
  done 2>/dev/null <"/proc/$1/status"
  return 1
}

# mana_job_procs_scan: adds to mana_job_start/mana_job_exe every living process that runs
# entirely as the job's user (all four uids: a setuid program started by the job is not the
# user's to kill) and has SLURM_JOB_ID=<the job> in its environment. The exact, NUL-delimited
# match keeps job 12 from matching job 123. The hook itself (root) never qualifies.
mana_job_procs_scan() {
  local file pid exe
  [ "$mana_uid" != 0 ] || return 0
  while IFS= read -r file; do
    pid=${file#/proc/}
    pid=${pid%/environ}
    [ "$pid" != "$$" ] || continue
    [ "$(mana_proc_uids "$pid")" = "$mana_uid $mana_uid $mana_uid $mana_uid" ] || continue
    mana_proc_stat "$pid" || continue
    [[ $mana_stat_state == [ZX] ]] && continue
    [ -n "${mana_job_start[$pid]:-}" ] && continue
    exe=$(readlink "/proc/$pid/exe" 2>/dev/null) || exe='?'
    exe=${exe% (deleted)}
    mana_job_start[$pid]=$mana_stat_start
    mana_job_exe[$pid]=${exe##*/}
  done < <(grep -l -z -x -F -e "SLURM_JOB_ID=$mana_job_id" /proc/[0-9]*/environ 2>/dev/null)
}

# mana_job_proc_alive PID: the job's process PID still exists as itself and is not a zombie.
mana_job_proc_alive() {
  mana_proc_stat "$1" || return 1
  [ "$mana_stat_start" = "${mana_job_start[$1]}" ] || return 1
  [[ $mana_stat_state != [ZX] ]]
}

# mana_proc_gone PID: no process PID, or only its exit status is left (a zombie, which holds
# no memory, whose parent has not collected it)
mana_proc_gone() {
  ! mana_proc_stat "$1" || [[ $mana_stat_state == [ZX] ]]
}

# mana_user_other_procs: prints the pids of the user's processes that are not the job's
# (by real uid), whatever job they belong to or none.
mana_user_other_procs() {
  local file pid
  while IFS= read -r file; do
    pid=${file#/proc/}
    pid=${pid%/status}
    mana_proc_stat "$pid" || continue
    [[ $mana_stat_state == [ZX] ]] && continue
    # a job pid counts only when the kernel has given it to a new process since
    [ "${mana_job_start[$pid]:-}" = "$mana_stat_start" ] && continue
    printf '%s\n' "$pid"
  done < <(grep -l -E "^Uid:[[:space:]]+${mana_uid}[[:space:]]" /proc/[0-9]*/status 2>/dev/null)
}
