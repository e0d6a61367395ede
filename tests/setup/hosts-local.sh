#!/usr/bin/env bash
# hosts-local.sh - several "hosts" on this one machine, made of Linux namespaces, for tests of
# jobs that span nodes and of restarts onto other nodes and another network.
#
# usage: tests/setup/hosts-local.sh start|stop|status|procs|rsh|exec HOST CMD...
#
#   start   make the hosts h1..hN (N = MANA_HOSTS_N, default 3) and wait until each is up.
#           Does nothing when they already run; a half-made set is removed first.
#   stop    remove what start made: end the holder processes it recorded, delete the network
#           namespaces it named, remove the state directory.  Refused (exit 1, nothing
#           removed) while other processes still run inside the hosts: they are listed, with
#           their pids, for whoever started them to end.  Does nothing when nothing runs.
#   status  the hosts, their addresses, holders and how many processes run in each; exit 1
#           when they do not run.
#   procs   "PID HOST COMMAND" of every process inside a host, holders excepted.
#   exec HOST CMD...
#           run CMD inside HOST (its network, host name and mount namespaces), with this
#           environment and working directory.
#   rsh     print the path of the remote shell for Hydra:
#             mpiexec.mpich -launcher ssh -launcher-exec "$(hosts-local.sh rsh)" -hosts h1:2,h2:2
#           It takes "[SSH-OPTIONS] HOST COMMAND..." as ssh does and runs "sh -c COMMAND" in
#           HOST, with the caller's environment and working directory.
#           (hosts-local.sh rsh HOST COMMAND... does the same.)
#
# Each host has its own network namespace, named PREFIX-hI (PREFIX = MANA_HOSTS_PREFIX,
# default mana<uid>), with "eth0", a veth whose other end is a port of the bridge br0 of the
# "switch" namespace PREFIX-sw, and the address NET.(10+I)/24 (NET = MANA_HOSTS_NET, default
# 10.213.0, a range nothing on the test machines uses: start refuses one that an interface of
# this machine is in).  A holder process (shown as "mana-host-hI", a sleep) keeps the host's
# own UTS namespace (host name hI) and mount namespace alive; the latter is a slave of this
# machine's mounts, with the host list bind-mounted on /etc/hosts, so every host resolves every
# other host's name.  Everything else is shared, as on a cluster with a shared file system:
# the file tree (checkpoints, programs, /dev/shm), process ids, System V IPC.  Traffic goes only
# to loopback and between these namespaces.
#
# Shared memory between hosts: UCX takes two processes for one machine when their boot ids
# (/proc/sys/kernel/random/boot_id) match, and then uses shared memory between them, across
# these hosts too.  MANA_HOSTS_BOOT_ID=own gives every host a boot id of its own (bind-mounted
# in its mount namespace): UCX then uses shared memory only inside a host and TCP between
# hosts, as on a real cluster.  The default, shared, keeps the machine's; UCX_TLS=tcp,self
# forces TCP between all processes either way.
#
# State (names, pids and start times of what start made; the host list; the rsh script) lives
# in MANA_HOSTS_DIR (default /tmp/mana-hosts-$UID).  Another PREFIX and DIR make another,
# independent set (the cluster tests make their own).  Root is needed (namespaces).
# Exit status: 0, 1 on failure, 2 for a usage error, 3 from start when namespaces cannot be
# made here (a test skips on it).
set -euo pipefail

me=hosts-local.sh
self=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")
dir=${MANA_HOSTS_DIR:-/tmp/mana-hosts-$(id -u)}
die() { echo "$me: $*" >&2; exit 1; }

# The settings of a running set win over the environment, so that exec, rsh and stop find
# what start made.
if [ -s "$dir/config" ]; then
  # shellcheck disable=SC1091
  . "$dir/config"
  boot_ids=${boot_ids:-shared}
else
  n=${MANA_HOSTS_N:-3}
  prefix=${MANA_HOSTS_PREFIX:-mana$(id -u)}
  net=${MANA_HOSTS_NET:-10.213.0}
  boot_ids=${MANA_HOSTS_BOOT_ID:-shared}
fi

host_names() { local i; for ((i = 1; i <= n; i++)); do echo "h$i"; done; }
host_addr() { echo "$net.$((10 + ${1#h}))"; }

# start time of PID (field 22 of /proc/PID/stat), empty when it does not run
start_time() {
  local s f
  s=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
  read -ra f <<<"${s##*) }"
  echo "${f[19]}"
}

# holder_pid HOST: the pid of HOST's holder when it is still the process start recorded
holder_pid() {
  local pid st
  read -r pid st 2>/dev/null <"$dir/$1.holder" || return 1
  [ -n "$pid" ] && [ "$(start_time "$pid")" = "$st" ] || return 1
  echo "$pid"
}

netns_exists() { [ -e "/run/netns/$1" ]; }

running() {
  local h
  [ -s "$dir/config" ] || return 1
  netns_exists "$prefix-sw" || return 1
  for h in $(host_names); do
    holder_pid "$h" >/dev/null && netns_exists "$prefix-$h" || return 1
  done
}

# procs: "PID HOST COMMAND" of the processes inside the hosts' network namespaces, holders
# excepted (the switch counts as a host named sw)
procs() {
  local -A ns_host=() holders=()
  local h pid id d
  [ -d "$dir" ] || return 0
  for h in sw $(host_names); do
    netns_exists "$prefix-$h" || continue
    id=$(stat -L -c %i "/run/netns/$prefix-$h" 2>/dev/null) || continue
    ns_host[$id]=$h
  done
  for h in $(host_names); do
    pid=$(holder_pid "$h") && holders[$pid]=1
  done
  [ ${#ns_host[@]} -gt 0 ] || return 0
  for d in /proc/[0-9]*; do
    pid=${d#/proc/}
    [ -z "${holders[$pid]:-}" ] || continue
    id=$(stat -L -c %i "$d/ns/net" 2>/dev/null) || continue
    [ -n "${ns_host[$id]:-}" ] || continue
    echo "$pid ${ns_host[$id]} $(tr '\0' ' ' <"$d/cmdline" 2>/dev/null | cut -c1-100)"
  done
}

# can_make_namespaces: this process may make network, UTS and mount namespaces
can_make_namespaces() {
  unshare --net --uts --mount true 2>/dev/null
}

check_range() {
  local used
  [[ $net =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "MANA_HOSTS_NET must be three octets, e.g. 10.213.0"
  used=$(ip -o -4 addr show 2>/dev/null | awk -v p="$net." 'index($4, p) == 1 { print $2 " " $4 }')
  [ -z "$used" ] || die "$net.0/24 is in use on this machine ($used); choose another MANA_HOSTS_NET"
}

write_hosts_file() {
  local h
  {
    echo "# Written by tests/setup/hosts-local.sh: the hosts of $prefix"
    echo "127.0.0.1 localhost"
    echo "::1 localhost ip6-localhost ip6-loopback"
    for h in $(host_names); do echo "$(host_addr "$h") $h"; done
  } >"$dir/hosts"
}

write_rsh() {
  cat >"$dir/rsh" <<EOF
#!/bin/sh
# Hydra's remote shell for the hosts of $prefix: "[SSH-OPTIONS] HOST COMMAND..." as ssh.
MANA_HOSTS_DIR='$dir' exec '$self' rsh "\$@"
EOF
  chmod 0755 "$dir/rsh"
}

# make_host HOST: its network namespace, its veth into the switch, its holder
make_host() {
  local h=$1 ns=$prefix-$1 i pid st boot_id=""
  ip netns add "$ns"
  echo "netns $ns" >>"$dir/made"
  ip -n "$ns" link add eth0 type veth peer name "$h" netns "$prefix-sw"
  ip -n "$prefix-sw" link set "$h" master br0 up
  ip -n "$ns" addr add "$(host_addr "$h")/24" dev eth0
  ip -n "$ns" link set eth0 up
  ip -n "$ns" link set lo up
  rm -f "$dir/$h.ready"
  if [ "$boot_ids" = own ]; then
    boot_id=$dir/$h.boot_id
    cat /proc/sys/kernel/random/uuid >"$boot_id"
  fi
  # The holder: a new UTS and mount namespace inside the host's network namespace, named and
  # given /etc/hosts, then a sleep that keeps both alive.  setsid -f: it belongs to no
  # terminal or job of the caller; it reports its pid itself.
  setsid -f nsenter --net="/run/netns/$ns" \
    unshare --uts --mount --propagation slave \
    bash -c 'hostname "$1" && mount --bind "$2" /etc/hosts &&
             { [ -z "$4" ] || mount --bind "$4" /proc/sys/kernel/random/boot_id; } &&
             echo $$ >"$3.tmp" && mv "$3.tmp" "$3" && exec -a "mana-host-$1" sleep infinity' \
    holder "$h" "$dir/hosts" "$dir/$h.ready" "$boot_id" </dev/null >/dev/null 2>"$dir/$h.err"
}

start() {
  local h i pid st t0=${EPOCHREALTIME/./}
  [ "$(id -u)" -eq 0 ] || { echo "$me: needs root (network namespaces)" >&2; exit 3; }
  if running; then
    echo "$me: already running: $(host_names | tr '\n' ' ')(state $dir)"
    return 0
  fi
  if [ -d "$dir" ]; then
    echo "$me: removing a half-made set first"
    stop
    n=${MANA_HOSTS_N:-3} prefix=${MANA_HOSTS_PREFIX:-mana$(id -u)} net=${MANA_HOSTS_NET:-10.213.0}
    boot_ids=${MANA_HOSTS_BOOT_ID:-shared}
  fi
  [[ $n =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 200 ] || die "MANA_HOSTS_N must be 1..200"
  for t in ip nsenter unshare setsid; do
    command -v "$t" >/dev/null || { echo "$me: $t not found" >&2; exit 3; }
  done
  can_make_namespaces || { echo "$me: cannot make network, UTS and mount namespaces here" >&2; exit 3; }
  check_range
  for h in sw $(host_names); do
    ! netns_exists "$prefix-$h" || die "a network namespace $prefix-$h exists that this script did not record; choose another MANA_HOSTS_PREFIX"
  done
  mkdir -p "$dir"
  chmod 0755 "$dir"
  case $boot_ids in shared|own) ;; *) die "MANA_HOSTS_BOOT_ID must be shared or own" ;; esac
  printf 'n=%s\nprefix=%s\nnet=%s\nboot_ids=%s\n' "$n" "$prefix" "$net" "$boot_ids" >"$dir/config"
  : >"$dir/made"
  write_hosts_file
  write_rsh
  ip netns add "$prefix-sw"
  echo "netns $prefix-sw" >>"$dir/made"
  ip -n "$prefix-sw" link add br0 type bridge
  ip -n "$prefix-sw" link set br0 up
  ip -n "$prefix-sw" link set lo up
  for h in $(host_names); do make_host "$h"; done
  # Wait for every holder to be named and to have /etc/hosts (a loaded machine: up to 20 s).
  for h in $(host_names); do
    for ((i = 0; i < 2000; i++)); do
      [ -s "$dir/$h.ready" ] && break
      sleep 0.01
    done
    [ -s "$dir/$h.ready" ] || die "host $h did not come up in 20 s: $(head -c 300 "$dir/$h.err")"
    pid=$(cat "$dir/$h.ready")
    st=$(start_time "$pid")
    [ -n "$st" ] || die "the holder of $h (pid $pid) ended: $(head -c 300 "$dir/$h.err")"
    echo "$pid $st" >"$dir/$h.holder"
  done
  running || die "the hosts are not all up (see $dir)"
  t0=$((${EPOCHREALTIME/./} - t0))
  printf '%s: running: %s(%s.11-%s, state %s) in %d.%02d s\n' "$me" "$(host_names | tr '\n' ' ')" \
    "$net" "$((10 + n))" "$dir" $((t0 / 1000000)) $((t0 / 10000 % 100))
}

stop() {
  local h pid i left kind name
  if [ ! -d "$dir" ]; then
    echo "$me: not running ($dir does not exist)"
    return 0
  fi
  left=$(procs)
  if [ -n "$left" ]; then
    echo "$me: processes still run inside the hosts; end them first (nothing removed):" >&2
    sed 's/^/  /' <<<"$left" >&2
    return 1
  fi
  for h in $(host_names); do
    pid=$(holder_pid "$h") && kill "$pid" 2>/dev/null || true
  done
  for h in $(host_names); do
    for ((i = 0; i < 500; i++)); do
      holder_pid "$h" >/dev/null || break
      sleep 0.01
    done
    ! holder_pid "$h" >/dev/null || die "the holder of $h ($(cat "$dir/$h.holder")) does not end"
  done
  # Only the namespaces start recorded, hosts first, the switch last.
  if [ -f "$dir/made" ]; then
    while read -r kind name; do
      [ "$kind" = netns ] || continue
      if netns_exists "$name"; then
        ip netns del "$name" || die "cannot delete the network namespace $name"
      fi
    done < <(tac "$dir/made")
  fi
  rm -rf "$dir"
  echo "$me: stopped"
}

status() {
  local h pid count
  running || { echo "$me: not running (state $dir)"; return 1; }
  count=$(procs | awk '{ c[$2]++ } END { for (h in c) print h, c[h] }')
  for h in $(host_names); do
    pid=$(holder_pid "$h")
    printf '%s %s netns %s holder %s processes %s\n' "$h" "$(host_addr "$h")" "$prefix-$h" "$pid" \
      "$(awk -v h="$h" '$1 == h { print $2 }' <<<"$count" | grep . || echo 0)"
  done
}

# enter HOST: the nsenter words that put a command inside HOST
enter() {
  local h=$1 pid
  case $h in
    *@*) h=${h#*@} ;;
  esac
  if ! [[ $h =~ ^h[0-9]+$ ]]; then
    local a
    for a in $(host_names); do
      [ "$(host_addr "$a")" = "$h" ] && h=$a
    done
  fi
  [[ $h =~ ^h[0-9]+$ ]] && [ "${h#h}" -ge 1 ] && [ "${h#h}" -le "$n" ] || die "no host '$1' (hosts: $(host_names | tr '\n' ' '))"
  pid=$(holder_pid "$h") || die "host $h is not running (tests/setup/hosts-local.sh start)"
  enter_cmd=(nsenter -t "$pid" -n -u -m -w"$PWD" --)
}

rsh() {
  if [ $# -eq 0 ]; then
    running || die "not running (tests/setup/hosts-local.sh start)"
    echo "$dir/rsh"
    return 0
  fi
  # ssh's options: these take a value, the others do not.
  while [ $# -gt 0 ]; do
    case $1 in
      -[bcDEeFIiJLlmOopQRSWw]) shift 2 ;;
      -[bcDEeFIiJLlmOopQRSWw]?*) shift ;;
      --) shift; break ;;
      -*) shift ;;
      *) break ;;
    esac
  done
  [ $# -ge 2 ] || die "rsh: usage: [SSH-OPTIONS] HOST COMMAND..."
  enter "$1"
  shift
  exec "${enter_cmd[@]}" /bin/sh -c "$*"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  procs) procs ;;
  exec)
    [ $# -ge 3 ] || { echo "usage: $me exec HOST CMD..." >&2; exit 2; }
    enter "$2"
    shift 2
    exec "${enter_cmd[@]}" "$@" ;;
  rsh) shift; rsh "$@" ;;
  *) echo "usage: $me start|stop|status|procs|rsh|exec HOST CMD..." >&2; exit 2 ;;
esac
