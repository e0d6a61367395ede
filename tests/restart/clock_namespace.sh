#!/bin/bash
# clock_namespace.sh ahead|behind RUN_AT_CALLS_ARGS...
# clock_namespace.sh chain RUN_CHAIN_ARGS...
#
# Runs run_at_calls.sh (ahead, behind) or run_chain.sh (chain) with every restart in a new
# time namespace, whose CLOCK_MONOTONIC and CLOCK_BOOTTIME differ from the checkpointed run's
# as they do on another node: "ahead" as on a node up a day longer, "behind" as on one booted
# after this one (half this machine's uptime back: the restart finds the clocks before where
# the checkpoint saw them); "chain" alternates the two from one restart to the next, so that
# a restart moves clocks that an earlier restart had moved already.  Exit 77 (skipped) where
# time namespaces cannot be made (no CAP_SYS_ADMIN, or a kernel without them).
#
# clock_namespace.sh next STATE COMMAND... runs COMMAND in the namespace of the next restart
# of a chain (STATE counts them).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
direction=${1:-}
shift || true

offset_of() { # offset_of ahead|behind: prints the clocks' offset in seconds
  if [ "$1" = ahead ]; then
    echo 86400
  else
    echo "-$(( $(cut -d. -f1 /proc/uptime) / 2 ))"
  fi
}

if [ "$direction" = next ]; then
  state=$1
  shift
  n=$(cat "$state" 2>/dev/null || echo 0)
  echo $((n + 1)) >"$state"
  [ $((n % 2)) = 0 ] && o=$(offset_of ahead) || o=$(offset_of behind)
  exec unshare --time --fork --monotonic "$o" --boottime "$o" "$@"
fi

if ! out=$(unshare --time --fork true 2>&1); then
  echo "clock_namespace.sh: SKIP: cannot make a time namespace here: $out"
  exit 77
fi
uptime_s=$(cut -d. -f1 /proc/uptime)
if [ "$direction" != ahead ] && [ "$uptime_s" -lt 40 ]; then
  echo "clock_namespace.sh: SKIP: up for $uptime_s s only, too little to set the clocks back"
  exit 77
fi
case "$direction" in
  ahead|behind)
    offset=$(offset_of "$direction")
    echo "clock_namespace.sh: restarts with CLOCK_MONOTONIC and CLOCK_BOOTTIME moved by $offset s"
    exec "$here/run_at_calls.sh" \
      --restart-prefix "unshare --time --fork --monotonic $offset --boottime $offset" "$@" ;;
  chain)
    state=$(mktemp "${TMPDIR:-/tmp}/mana-clock-ns.XXXXXX") || exit 1
    trap 'rm -f "$state"' EXIT
    echo "clock_namespace.sh: restarts alternately a day ahead and half the uptime behind"
    "$here/run_chain.sh" --restart-prefix "$here/clock_namespace.sh next $state" "$@" ;;
  *)
    echo "usage: clock_namespace.sh ahead|behind|chain ARGS..." >&2
    exit 2 ;;
esac
