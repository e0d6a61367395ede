#!/usr/bin/env bash
# shellcheck disable=SC2016 # check_that's expressions are single-quoted: it evaluates them
# prolog_epilog.sh - mana's Slurm hooks (coordinator/slurm/) run the way slurmd runs them, as
# root with an empty environment but for SLURM_* variables, against real processes, real
# shared memory and real directories; no Slurm daemon is needed.
#
#   usage: prolog_epilog.sh [--hooks DIR] [--bin DIR] [--program PATH]
#     --hooks DIR     the hooks (default: coordinator/slurm of this checkout); they are run
#                     from a copy, through a symbolic link, as an installed prolog.d entry
#     --bin DIR       mana's programs (default build/bin); mana_launch runs the real job
#     --program PATH  a 2-rank MPI program that takes ITERATIVE_HOLD (default
#                     build/tests/programs/iterative); without it and mpiexec.mpich the
#                     real-MPI part is skipped with a note
#
# Jobs run as the unprivileged user mana-test-user (created when missing and kept). A fake
# job J1 is two copies of sleep named mana_lh and mana_coordinator (the latter detached with
# setsid, as mana_coordinator --daemon is) and a helper holding System V segments and a
# mapped /dev/shm file; beside it a control job of the same user, whose id starts with J1's,
# and leftovers whose maker is gone. The epilog of J1 must end J1 and remove its memory and
# its runtime directory, and keep the control job, what may be the control's, the user's own
# files and every checkpoint; when the control job has ended, its epilog removes the
# leftovers too. Then a real MPICH job (under mana_launch when built) is killed with SIGKILL
# and its epilog must leave nothing of it, and one is killed inside MPI_Init, where MPICH
# leaves a file in /dev/shm when the kill falls in the right millisecond.
#
# Everything the test starts or makes is removed by pid, segment id and path at exit.
# Exit status 0 when every check held, 1 otherwise, 77 (skipped) when not root.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$(dirname "$here")")
hooks=$top/coordinator/slurm
bin=$top/build/bin
program=$top/build/tests/programs/iterative
while [ $# -gt 0 ]; do
  case "$1" in
    --hooks) hooks=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --program) program=$2; shift 2 ;;
    -h|--help) sed -n '3,27p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
    *) echo "prolog_epilog.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

me=prolog_epilog.sh
# The jobs run elsewhere: relative paths would not reach them.
hooks=$(realpath -- "$hooks") bin=$(realpath -m -- "$bin") program=$(realpath -m -- "$program")
if [ "$(id -u)" != 0 ]; then
  echo "$me: skipped: needs root (the hooks run as root, jobs run as another user)"
  exit 77
fi
for tool in setpriv setsid useradd ipcrm /usr/bin/python3; do
  command -v "$tool" >/dev/null || { echo "$me: skipped: $tool is missing"; exit 77; }
done

user=mana-test-user
if ! id -u "$user" >/dev/null 2>&1; then
  useradd --system --user-group --no-create-home --home-dir /nonexistent \
    --shell /usr/sbin/nologin "$user" 2>/dev/null || id -u "$user" >/dev/null ||
    { echo "$me: cannot create the user $user" >&2; exit 1; }
fi
uid=$(id -u "$user")
gid=$(id -g "$user")

t0=$EPOCHREALTIME
tmp=$(mktemp -d /tmp/mana-slurm-hooks.XXXXXX)
chmod 0755 "$tmp" # the job's user must reach its programs and files in here

# What the test made, for the cleanup.
started=()     # pids
segments=()    # System V segment ids
shm_files=()   # /dev/shm paths
job_ids=()     # SLURM_JOB_IDs given to the user's processes

# job_pids ID: the user's processes whose environment has SLURM_JOB_ID=ID exactly.
job_pids() {
  local f p
  while IFS= read -r f; do
    p=${f#/proc/}
    p=${p%/environ}
    [ "$(stat -c %u "/proc/$p" 2>/dev/null)" = "$uid" ] && echo "$p"
  done < <(grep -l -z -x -F -e "SLURM_JOB_ID=$1" /proc/[0-9]*/environ 2>/dev/null)
}

cleanup() {
  local p id f j
  for j in "${job_ids[@]}"; do
    for p in $(job_pids "$j"); do started+=("$p"); done
  done
  for p in "${started[@]}"; do
    [ "$(stat -c %u "/proc/$p" 2>/dev/null)" = "$uid" ] && kill -KILL "$p" 2>/dev/null
  done
  for id in "${segments[@]}"; do
    awk -v id="$id" -v u="$uid" '$2 == id && $8 == u { found = 1 } END { exit !found }' \
      /proc/sysvipc/shm && ipcrm -m "$id" 2>/dev/null
  done
  for f in "${shm_files[@]}"; do rm -f -- "$f"; done
  rm -rf -- "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

fails=0
checks=0
ok() { echo "ok: $*"; checks=$((checks + 1)); }
bad() { echo "FAIL: $*"; checks=$((checks + 1)); fails=$((fails + 1)); }
# check DESCRIPTION COMMAND...: one line, ok or FAIL; status 1 on FAIL
check() {
  local what=$1
  shift
  if "$@"; then ok "$what"; else
    bad "$what"
    return 1
  fi
}
# check_that DESCRIPTION 'EXPRESSION': the same for a compound shell expression
check_that() {
  if eval "$2"; then ok "$1"; else bad "$1"; fi
}
# check_hook DESCRIPTION: the last hook exited 0 (its stderr is shown when not)
check_hook() {
  if [ "$rc" = 0 ]; then
    ok "$1 exits 0 in $secs s"
  else
    bad "$1 exits $rc in $secs s; stderr:"
    printf '%s\n' "$err" | sed 's/^/  /'
  fi
}
# wait_for SECONDS DESCRIPTION COMMAND...: polls COMMAND until it succeeds; status 1 and a
# FAIL line after SECONDS
wait_for() {
  local limit=$1 what=$2 end
  shift 2
  end=$(($(date +%s%N) + limit * 1000000000))
  until "$@"; do
    if [ "$(date +%s%N)" -gt "$end" ]; then
      bad "$what (not within ${limit} s)"
      return 1
    fi
    sleep 0.02
  done
}
seconds_since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }'; }

# --- the installed hooks and the site ----------------------------------------------------------
libexec=$tmp/libexec/mana/slurm
mkdir -p "$libexec" "$tmp/prolog.d"
for f in mana-prolog mana-epilog mana-task-prolog mana-slurm-lib.sh; do
  install -m 0755 "$hooks/$f" "$libexec/$f" || { echo "$me: cannot copy $hooks/$f" >&2; exit 1; }
done
chmod 0644 "$libexec/mana-slurm-lib.sh"
# slurm.conf may name a prolog.d of links: the hook must find its library through the link.
for f in mana-prolog mana-epilog mana-task-prolog; do ln -s "$libexec/$f" "$tmp/prolog.d/$f"; done
chmod -R a+rX "$tmp/libexec" "$tmp/prolog.d"

runtime_root=$tmp/run/mana # made by the prolog
ckpt=$tmp/ckpt
log=$tmp/log/mana/slurm-hooks.log
conf=$tmp/slurm.conf
mkdir -p "$ckpt" "$tmp/run" "$tmp/bin" "$tmp/user"
chmod 0755 "$ckpt" "$tmp/run" "$tmp/bin"
chown "$uid:$gid" "$tmp/user"
# Quotes and a comment as a site writes them, and lines a shell would execute.
cat >"$conf" <<EOF
# mana on this cluster
MANA_CKPT_ROOT="$ckpt"   # the shared file system
EVIL=\$(touch $tmp/pwned-by-substitution)
\`touch $tmp/pwned-by-backquote\`
touch $tmp/pwned-by-command
EOF

# Job ids: J2 starts with J1's digits, so only an exact match tells them apart.
j1=$((4000000 + $$ % 1000000))
j2=${j1}0
j3=$((j1 + 1))
j4=$((j1 + 2))
job_ids=("$j1" "$j2" "$j3" "$j4")

# hook NAME JOB [VAR=value...]: runs the hook as slurmd does; sets rc, secs, err.
hook() {
  local name=$1 job=$2 start
  shift 2
  start=$EPOCHREALTIME
  env -i SLURM_JOB_ID="$job" MANA_RUNTIME_ROOT="$runtime_root" MANA_SLURM_CONF="$conf" \
    MANA_SLURM_LOG="$log" "$@" "$tmp/prolog.d/$name" 2>"$tmp/stderr"
  rc=$?
  secs=$(seconds_since "$start")
  err=$(cat "$tmp/stderr")
}
# as_user COMMAND...: COMMAND as the job's user, with no environment but what is given.
as_user=(setpriv --reuid="$uid" --regid="$gid" --init-groups env -i HOME="$tmp/user")
as_user() { "${as_user[@]}" "$@"; }
# spawn OUT COMMAND...: starts COMMAND in the background, output to OUT, and prints its pid
# (setpriv and env exec, so it is the program's). Run as $(spawn ...), the process is not
# this shell's child: it is reaped elsewhere, as a job's processes are, and the shell prints
# no note when the epilog kills it.
spawn() {
  local out=$1
  shift
  "$@" </dev/null >"$out" 2>&1 &
  echo $!
}
# proc_gone PID: no such process, or a zombie
proc_gone() {
  local s
  s=$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null) || return 0
  [[ -z $s || $s == [ZX] ]]
}

owner_mode() { stat -c '%U:%G %a' -- "$1" 2>/dev/null; }
# tree_sum DIR: names, modes, owners and contents of everything under DIR
tree_sum() {
  (cd "$1" && find . -printf '%p %m %u %s\n' | sort && find . -type f -exec cat {} + ) | md5sum
}
logged() { grep -q -F -e "$1" "$log"; }
# alive PID START: PID is still the process that had START as its start time, not a zombie
alive() {
  local s
  s=$(cut -d' ' -f3,22 "/proc/$1/stat" 2>/dev/null) || return 1
  [ "${s#* }" = "$2" ] && [[ ${s%% *} != [ZX] ]]
}
start_of() { cut -d' ' -f22 "/proc/$1/stat"; }
segment_exists() { awk -v id="$1" '$2 == id { found = 1 } END { exit !found }' /proc/sysvipc/shm; }
segment_detached() { awk -v id="$1" '$2 == id { n = $7 } END { exit n != 0 }' /proc/sysvipc/shm; }
gone() { ! "$@"; }
# segment_report ID JOB: what the epilog of JOB saw of segment ID, after a check about it failed
segment_report() {
  local cpid
  echo "  segment $1 now: $(awk -v id="$1" '$2 == id' /proc/sysvipc/shm)"
  cpid=$(awk -v id="$1" '$2 == id { print $5 }' /proc/sysvipc/shm)
  [ -n "$cpid" ] && echo "  its maker $cpid: $(cat "/proc/$cpid/stat" 2>/dev/null || echo gone)"
  grep -F "job $2:" "$log" | sed 's/^/  /'
}

echo "$me: user $user (uid $uid), jobs $j1 $j2 $j3 $j4, in $tmp"

# --- prolog ----------------------------------------------------------------------------------
phase=$EPOCHREALTIME
hook mana-prolog "$j1" SLURM_JOB_USER="$user" SLURM_JOB_RESTART_COUNT=0 SLURM_JOB_WORK_DIR="$tmp/user"
check_hook "prolog (no SLURM_JOB_UID)"
check "runtime root is root's, 0755" [ "$(owner_mode "$runtime_root")" = "root:root 755" ]
check "runtime dir is the user's, 0700" \
  [ "$(owner_mode "$runtime_root/job-$j1")" = "$user:$(id -gn "$user") 700" ]
check "checkpoint dir is the user's, 0700" \
  [ "$(owner_mode "$ckpt/$user")" = "$user:$(id -gn "$user") 700" ]
check "the configuration was read, not run" \
  [ -z "$(find "$tmp" -maxdepth 1 -name 'pwned-*')" ]
check "log: runtime dir made" logged "made $runtime_root/job-$j1 for $user"
check "log: checkpoint dir made" logged "made checkpoint directory $ckpt/$user"
check "log: restart count recorded" logged "job $j1: start: user $user, restart count 0"

# The user's data, which no hook may change: a checkpoint of J1, an older job's, and the
# user's own choice of mode for the directory.
as_user mkdir -p "$ckpt/$user/job-$j1" "$ckpt/$user/job-1234"
as_user sh -c "echo image > '$ckpt/$user/job-$j1/rank0.img'; echo old > '$ckpt/$user/job-1234/rank0.img'"
as_user chmod 0750 "$ckpt/$user"
as_user sh -c "echo pid > '$runtime_root/job-$j1/coordinator'"
ckpt_sum=$(tree_sum "$ckpt")

hook mana-prolog "$j1" SLURM_JOB_USER="$user" SLURM_JOB_UID="$uid" SLURM_JOB_RESTART_COUNT=0
check_hook "prolog run again"
check "... keeps the runtime dir and its contents" [ -s "$runtime_root/job-$j1/coordinator" ]
check_that "... leaves the checkpoint dir as it is (0750, contents)" \
  '[ "$(owner_mode "$ckpt/$user")" = "$user:$(id -gn "$user") 750" ] && [ "$(tree_sum "$ckpt")" = "$ckpt_sum" ]'
check "log: kept" logged "kept $runtime_root/job-$j1"

hook mana-prolog "$j1"
check_that "prolog without a user fails, saying why" \
  '[ "$rc" != 0 ] && [[ $err == *"neither SLURM_JOB_USER nor SLURM_JOB_UID"* ]]'
printf 'MANA_CKPT_ROOT=%s/not-mounted\n' "$tmp" >"$tmp/other.conf"
conf_saved=$conf conf=$tmp/other.conf
hook mana-prolog "$j1" SLURM_JOB_USER="$user"
conf=$conf_saved
check_that "prolog with a missing checkpoint root exits 0 and warns" \
  '[ "$rc" = 0 ] && [[ $err == *"not a directory (not mounted?)"* ]]'

# TaskProlog: as the user, in the task's environment
taskprolog() {
  as_user SLURM_JOB_ID="$j1" SLURM_JOB_USER="$user" MANA_RUNTIME_ROOT="$runtime_root" \
    MANA_SLURM_CONF="$conf" "$@" "$tmp/prolog.d/mana-task-prolog" 2>"$tmp/stderr"
}
out=$(taskprolog)
expect="export MANA_RUNTIME_DIR=$runtime_root/job-$j1
export MANA_CKPTDIR=$ckpt/$user/job-$j1"
check "task prolog exports the runtime and checkpoint dirs" [ "$out" = "$expect" ]
out=$(taskprolog MANA_CKPTDIR=/elsewhere)
check "task prolog keeps a checkpoint dir the job chose" \
  [ "$out" = "export MANA_RUNTIME_DIR=$runtime_root/job-$j1" ]
echo "prolog part: $(seconds_since "$phase") s"

# --- a fake job, a control job and leftovers ---------------------------------------------------
phase=$EPOCHREALTIME
cp /bin/sleep "$tmp/bin/mana_lh"
cp /bin/sleep "$tmp/bin/mana_coordinator"
chmod 0755 "$tmp/bin/mana_lh" "$tmp/bin/mana_coordinator"
# shmhelper OUT ATTACHED DETACHED STAY [FILE...]: makes ATTACHED segments it stays attached
# to, DETACHED ones it is not attached to, and FILEs in /dev/shm it keeps mapped ("%PID%"
# becomes its pid); writes the segment ids to OUT; then waits for a signal (STAY=1), or
# waits ignoring SIGTERM (STAY=deaf), or exits without removing anything (STAY=0), as a
# killed rank would.
cat >"$tmp/bin/shmhelper.py" <<'EOF'
import ctypes, mmap, os, signal, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.shmget.argtypes = [ctypes.c_int, ctypes.c_size_t, ctypes.c_int]
libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
libc.shmat.restype = ctypes.c_void_p
out, attached, detached, stay = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] != "0"
if sys.argv[4] == "deaf":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
ids, keep = [], []
for n in range(attached + detached):
    i = libc.shmget(0, 4096, 0o1000 | 0o600)  # IPC_PRIVATE, IPC_CREAT
    if i < 0:
        sys.exit("shmget: " + os.strerror(ctypes.get_errno()))
    if n < attached and libc.shmat(i, None, 0) in (None, ctypes.c_void_p(-1).value):
        sys.exit("shmat: " + os.strerror(ctypes.get_errno()))
    ids.append(i)
for path in sys.argv[5:]:
    path = path.replace("%PID%", str(os.getpid()))
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    os.ftruncate(fd, 4096)
    keep.append(mmap.mmap(fd, 4096))
with open(out + ".tmp", "w") as f:
    f.write(" ".join(map(str, ids)) + "\n")
os.rename(out + ".tmp", out)
while stay:
    signal.pause()
EOF
chmod 0644 "$tmp/bin/shmhelper.py"
helper=(/usr/bin/python3 "$tmp/bin/shmhelper.py")

# J1: a stopped rank, a coordinator that detached from it, a process holding the job's
# memory that ignores SIGTERM
rank=$(spawn /dev/null "${as_user[@]}" SLURM_JOB_ID="$j1" "$tmp/bin/mana_lh" 300)
started+=("$rank")
as_user SLURM_JOB_ID="$j1" setsid -f /bin/sh -c 'echo $$ >"$1.tmp" && mv "$1.tmp" "$1" && exec "$2" 300' \
  sh "$tmp/user/coord.pid" "$tmp/bin/mana_coordinator"
wait_for 20 "the detached mana_coordinator started" [ -s "$tmp/user/coord.pid" ]
coord=$(cat "$tmp/user/coord.pid" 2>/dev/null)
started+=("$coord")
job_file=/dev/shm/mpich_shar_tmpT$j1
shm_files+=("$job_file" "/dev/shm/mana-win-$rank-0")
holder=$(spawn "$tmp/j1.err" "${as_user[@]}" SLURM_JOB_ID="$j1" "${helper[@]}" "$tmp/user/j1.ids" 1 1 deaf \
  "$job_file")
started+=("$holder")
wait_for 20 "J1's helper made its memory" [ -s "$tmp/user/j1.ids" ]
read -r seg1a seg1b <"$tmp/user/j1.ids"
segments+=("$seg1a" "$seg1b")
# the window file of the rank, under the name mana gives it
as_user touch "/dev/shm/mana-win-$rank-0"
wait_for 20 "the fake rank runs as mana_lh" [ "$(readlink "/proc/$rank/exe")" = "$tmp/bin/mana_lh" ]
wait_for 20 "the fake coordinator runs as mana_coordinator" \
  [ "$(readlink "/proc/$coord/exe")" = "$tmp/bin/mana_coordinator" ]
check "the coordinator left its parent: its own session" \
  [ "$(cut -d' ' -f6 "/proc/$coord/stat")" = "$coord" ]

# J2, the control: a rank and memory it is attached to
crank=$(spawn /dev/null "${as_user[@]}" SLURM_JOB_ID="$j2" "$tmp/bin/mana_lh" 300)
started+=("$crank")
cholder=$(spawn "$tmp/j2.err" "${as_user[@]}" SLURM_JOB_ID="$j2" "${helper[@]}" "$tmp/user/j2.ids" 1 0 1)
started+=("$cholder")
wait_for 20 "J2's helper made its memory" [ -s "$tmp/user/j2.ids" ]
read -r seg2 <"$tmp/user/j2.ids"
segments+=("$seg2")

# Leftovers whose maker is gone: a segment, UCX's and mana's files in /dev/shm.
stale_ucx=/dev/shm/ucx_shm_posix_T$j1
stale_pid=$(spawn "$tmp/stale.err" "${as_user[@]}" SLURM_JOB_ID="$j2" "${helper[@]}" "$tmp/user/stale.ids" \
  0 1 0 "$stale_ucx" "/dev/shm/mana-win-%PID%-0")
shm_files+=("$stale_ucx" "/dev/shm/mana-win-$stale_pid-0")
wait_for 20 "the maker of the leftovers exited" proc_gone "$stale_pid"
read -r seg_stale <"$tmp/user/stale.ids"
segments+=("$seg_stale")
stale_win=/dev/shm/mana-win-$stale_pid-0
# What the hooks must never take: the user's own file, and root's file with a job pid in
# the name.
own_file=/dev/shm/mana-test-own-$j1
root_file=/dev/shm/mana-win-$rank-1
shm_files+=("$own_file" "$root_file")
as_user touch "$own_file"
touch "$root_file"

rank_start=$(start_of "$rank") coord_start=$(start_of "$coord") holder_start=$(start_of "$holder")
crank_start=$(start_of "$crank") cholder_start=$(start_of "$cholder")
kill -STOP "$rank"
echo "fake jobs: J1 rank $rank, coordinator $coord, holder $holder (segments $seg1a $seg1b);" \
  "J2 rank $crank, holder $cholder (segment $seg2); stale segment $seg_stale; $(seconds_since "$phase") s"

# --- the epilog of J1 ---------------------------------------------------------------------------
hook mana-epilog "$j1" SLURM_JOB_USER="$user" SLURM_JOB_UID="$uid" SLURM_JOB_EXIT_CODE=9 \
  SLURM_JOB_RESTART_COUNT=1
check_hook "epilog of J1"
check "J1's rank is gone" gone alive "$rank" "$rank_start"
check "J1's detached coordinator is gone" gone alive "$coord" "$coord_start"
check "J1's other process is gone" gone alive "$holder" "$holder_start"
check "the control job J2 still runs" alive "$crank" "$crank_start"
check "... and its memory holder" alive "$cholder" "$cholder_start"
check "J1's attached segment is removed" gone segment_exists "$seg1a"
check "J1's detached segment is removed" gone segment_exists "$seg1b"
check "J1's MPICH-named file is removed" [ ! -e "$job_file" ]
check "J1's window file is removed" [ ! -e "/dev/shm/mana-win-$rank-0" ]
check "J2's segment is kept" segment_exists "$seg2"
check "the stale segment is kept while J2 runs" segment_exists "$seg_stale"
check "the stale UCX file is kept while J2 runs" [ -e "$stale_ucx" ]
check "the stale window file is kept while J2 runs" [ -e "$stale_win" ]
check "the user's own /dev/shm file is kept" [ -e "$own_file" ]
check "root's file is kept" [ -e "$root_file" ]
check "the checkpoints are untouched" [ "$(tree_sum "$ckpt")" = "$ckpt_sum" ]
check "the runtime dir is removed (restart count 1)" [ ! -e "$runtime_root/job-$j1" ]
check "the runtime root is kept" [ -d "$runtime_root" ]
check "log: SIGTERM to the rank" logged "sent SIGTERM to pid $rank (mana_lh) of $user"
check "log: SIGTERM to the coordinator" logged "sent SIGTERM to pid $coord (mana_coordinator) of $user"
kills=$(grep -F "job $j1: sent SIGKILL" "$log" | sed 's/.*: sent SIGKILL/sent SIGKILL/')
if [[ $kills == "sent SIGKILL to pid $holder (python"*") of $user" ]]; then
  ok "log: SIGKILL to the process that ignored SIGTERM, and to no other"
else
  bad "log: SIGKILL to the process that ignored SIGTERM, and to no other; got: ${kills:-none}"
fi
check "log: segment removed" logged "removed System V segment $seg1a"
check "log: window file removed" logged "removed /dev/shm/mana-win-$rank-0 (mana window memory of job pid $rank"
check "log: MPICH file removed" logged "removed $job_file (used by the job"
check "log: stale segment kept" logged "kept System V segment $seg_stale"
check "log: runtime dir removed" logged "removed $runtime_root/job-$j1"

hook mana-epilog "$j1" SLURM_JOB_USER="$user" SLURM_JOB_UID="$uid"
check_that "epilog run again exits 0 in $secs s, under 3 s" '[ "$rc" = 0 ] && awk "BEGIN { exit !($secs < 3) }"'
check "... and finds nothing of J1" [ "$(grep -c "job $j1: done: 0 process(es) ended, 0 segment(s) and 0 file(s) removed" "$log")" = 1 ]
check "... and J2 still runs" alive "$crank" "$crank_start"

# The control job ends; its epilog runs with nothing else of the user left on the node.
kill -KILL "$crank" "$cholder"
wait_for 20 "the control job ended" proc_gone "$crank" && wait_for 20 "... all of it" proc_gone "$cholder"
# The state the check below names: the segment unattached.  The kernel detaches it as the
# holder's memory goes, before the holder shows as a zombie, so this should pass at once; it is
# waited for because one CI run found the segment kept by this epilog, without a record of
# why (not reproduced in 90 runs under load since; segment_report prints it next time).
wait_for 20 "J2's segment is detached" segment_detached "$seg2"
hook mana-epilog "$j2" SLURM_JOB_USER="$user"
check_hook "epilog of J2"
check "J2's segment, now unattached and its maker gone, is removed" gone segment_exists "$seg2" ||
  segment_report "$seg2" "$j2"
check "the stale segment is removed" gone segment_exists "$seg_stale"
check "the stale UCX file is removed" [ ! -e "$stale_ucx" ]
check "the stale window file is removed" [ ! -e "$stale_win" ]
check "the user's own /dev/shm file is still kept" [ -e "$own_file" ]
check "root's file is still kept" [ -e "$root_file" ]
check "the checkpoints are still untouched" [ "$(tree_sum "$ckpt")" = "$ckpt_sum" ]
echo "fake job part: $(seconds_since "$phase") s"

# --- a real MPICH job, killed ----------------------------------------------------------------
# user_shm_files: the user's files in /dev/shm but the test's own control file
user_shm_files() { find /dev/shm -maxdepth 1 -type f -uid "$uid" ! -name "mana-test-own-*" -printf '%f\n'; }
# segments_of PID...: System V segments those processes made
segments_of() { awk -v pids=" $* " 'NR > 1 && index(pids, " " $5 " ") { print $2 }' /proc/sysvipc/shm; }

if ! command -v mpiexec.mpich >/dev/null || [ ! -x "$program" ]; then
  echo "note: real MPI part skipped: mpiexec.mpich or $program missing"
else
  phase=$EPOCHREALTIME
  cp "$program" "$tmp/bin/mpiprog"
  chmod 0755 "$tmp/bin/mpiprog"
  hook mana-prolog "$j3" SLURM_JOB_USER="$user"
  check_hook "prolog of the MPI job"
  # the task's environment is what the task prolog exports
  task_env=$(as_user SLURM_JOB_ID="$j3" SLURM_JOB_USER="$user" MANA_RUNTIME_ROOT="$runtime_root" \
    MANA_SLURM_CONF="$conf" "$tmp/prolog.d/mana-task-prolog" 2>/dev/null | sed -n 's/^export //p')
  launcher=(mpiexec.mpich -n 2)
  if [ -x "$bin/mana_launch" ]; then
    launcher=("$bin/mana_launch" mpiexec.mpich -n 2)
  fi
  # shellcheck disable=SC2086 # task_env is NAME=value lines without blanks
  mpi_launcher=$(cd "$tmp/user" && spawn "$tmp/mpi.out" "${as_user[@]}" PATH=/usr/bin:/bin \
    SLURM_JOB_ID="$j3" $task_env ITERATIVE_HOLD="$tmp/never:3" "${launcher[@]}" \
    "$tmp/bin/mpiprog" 100000)
  started+=("$mpi_launcher")
  # A real coordinator that outlives its job: started with --daemon for ranks that never
  # came (a job killed before its ranks connected); it waits for them for minutes.
  waiting=
  if [ -x "$bin/mana_coordinator" ]; then
    waiting_dir=$ckpt/$user/job-$j3-waiting
    waiting=$(as_user SLURM_JOB_ID="$j3" "$bin/mana_coordinator" --daemon --host 127.0.0.1 \
      --port 0 --ckptdir "$waiting_dir" | awk '{ print $2 }')
    started+=("$waiting")
    check_that "a real mana_coordinator --daemon runs" '[ -n "$waiting" ] && [ -d "/proc/$waiting" ]'
  fi
  held() { grep -s -q "holding at step 3" "$tmp/mpi.out" || proc_gone "$mpi_launcher"; }
  if wait_for 60 "the MPI job reached its hold" held && grep -q "holding at step 3" "$tmp/mpi.out"; then
    mapfile -t pids < <(job_pids "$j3")
    mapfile -t segs < <(segments_of "${pids[@]}")
    files=$(user_shm_files | tr '\n' ' ')
    ckdir=$ckpt/$user/job-$j3
    # .mana/coordinator is the coordinator's address, which it removes itself when it exits
    ck_list() { (cd "$ckdir" 2>/dev/null && find . ! -path ./.mana/coordinator | sort | tr '\n' ' '); }
    ck_before=$(ck_list)
    echo "real job: ${launcher[*]} $program: processes ${pids[*]}: $(for p in "${pids[@]}"; do
      printf '%s ' "$(basename "$(readlink "/proc/$p/exe")")"; done)"
    echo "real job: System V segments it made: ${segs[*]:-none} (marked for removal: they go with" \
      "their last process); its /dev/shm files: ${files:-none}; checkpoint dir: ${ck_before:-missing}"
    # Slurm ends the step with SIGKILL to every process it tracks; the coordinator detached
    # from the launcher and escaped that tracking.
    for p in "${pids[@]}"; do
      [ "$(basename "$(readlink "/proc/$p/exe")")" = mana_coordinator ] || kill -KILL "$p"
    done
    hook mana-epilog "$j3" SLURM_JOB_USER="$user" SLURM_JOB_UID="$uid" SLURM_JOB_EXIT_CODE=137
    check_hook "epilog of the killed MPI job"
    left=$(job_pids "$j3" | tr '\n' ' ')
    check "no process of the MPI job is left${left:+: $left}" [ -z "$left" ]
    left=$(segments_of "${pids[@]}" | tr '\n' ' ')
    check "no segment of the MPI job is left${left:+: $left}" [ -z "$left" ]
    left=$(user_shm_files | tr '\n' ' ')
    check "no /dev/shm file of the user is left${left:+: $left}" [ -z "$left" ]
    ck_after=$(ck_list)
    if [ -x "$bin/mana_launch" ]; then
      check "the job's checkpoint dir keeps its files" [ "${ck_before:-missing}" = "$ck_after" ]
    fi
    check "the runtime dir of the MPI job is removed" [ ! -e "$runtime_root/job-$j3" ]
    if [ -n "$waiting" ]; then
      check "the waiting coordinator's checkpoint dir is kept" [ -s "$waiting_dir/.mana/secret" ]
      check "log: the waiting coordinator was signalled" logged "to pid $waiting (mana_coordinator)"
    fi
    echo "real job: what the epilog did:"
    grep -F "job $j3:" "$log" | grep -F mana-epilog | grep -v -F "not a KEY=value" | sed 's/^[^ ]* /  /'
  else
    bad "the MPI job did not reach its hold; its output:"
    sed 's/^/  mpi: /' "$tmp/mpi.out" | tail -5
  fi

  # Killed inside MPI_Init: MPICH's node-shared file exists for a few milliseconds before
  # every rank has mapped it and it is unlinked; a SIGKILL then leaves it in /dev/shm. The
  # job is killed when the file is seen, or at the latest once MPI_Init is over (the first
  # progress line), as Slurm would at any moment.
  init_launcher=$(spawn "$tmp/init.out" "${as_user[@]}" PATH=/usr/bin:/bin SLURM_JOB_ID="$j4" \
    ITERATIVE_PROGRESS=1 mpiexec.mpich -n 2 "$tmp/bin/mpiprog" 100000)
  started+=("$init_launcher")
  caught=
  end=$(($(date +%s) + 30))
  until [ -n "$caught" ] || grep -q "step 1 of" "$tmp/init.out" || proc_gone "$init_launcher" ||
    [ "$(date +%s)" -gt "$end" ]; do
    for f in /dev/shm/mpich_shar_tmp*; do
      [ -e "$f" ] && [ "$(stat -c %u "$f" 2>/dev/null)" = "$uid" ] && { caught=$f; break; }
    done
  done
  # A process forked after a look at /proc would escape one kill: kill until none is left.
  # shellcheck disable=SC2046 # pids
  killed_all() { kill -KILL $(job_pids "$j4") 2>/dev/null; [ -z "$(job_pids "$j4")" ]; }
  wait_for 10 "the job killed in MPI_Init is gone" killed_all
  leaked=$(user_shm_files | tr '\n' ' ')
  hook mana-epilog "$j4" SLURM_JOB_USER="$user"
  left=$(user_shm_files | tr '\n' ' ')
  check_hook "epilog after a kill in MPI_Init"
  check "... leaves no /dev/shm file of the user${left:+: $left}" [ -z "$left" ]
  left=$(job_pids "$j4" | tr '\n' ' ')
  check "... and no process of the job${left:+: $left}" [ -z "$left" ]
  if [ -n "$leaked" ]; then
    echo "kill in MPI_Init: left ${leaked}- removed by the epilog:"
    grep -F "job $j4: removed" "$log" | sed 's/^[^ ]* /  /'
  else
    echo "kill in MPI_Init: ${caught:+killed while $caught existed, but }nothing was left this time"
  fi
  echo "real MPI part: $(seconds_since "$phase") s"
fi

if [ "$fails" = 0 ]; then
  echo "$me: PASS: $checks checks held in $(seconds_since "$t0") s"
else
  echo "$me: FAIL: $fails of $checks checks failed ($(seconds_since "$t0") s)"
fi
[ "$fails" = 0 ]
