#!/bin/bash
# clock_namespace.sh ahead|behind RUN_AT_CALLS_ARGS...
#
# Runs run_at_calls.sh with every restart in a new time namespace, whose CLOCK_MONOTONIC and
# CLOCK_BOOTTIME differ from the checkpointed run's as they do on another node: "ahead" as on
# a node up a day longer, "behind" as on one booted after this one (half this machine's
# uptime back: the restart finds the clocks before where the checkpoint saw them).  Exit 77
# (skipped) where time namespaces cannot be made (no CAP_SYS_ADMIN, or a kernel without them).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
direction=${1:-}
shift || true
if ! out=$(unshare --time --fork true 2>&1); then
  echo "clock_namespace.sh: SKIP: cannot make a time namespace here: $out"
  exit 77
fi
uptime_s=$(cut -d. -f1 /proc/uptime)
case "$direction" in
  ahead) offset=86400 ;;
  behind)
    if [ "$uptime_s" -lt 40 ]; then
      echo "clock_namespace.sh: SKIP: up for $uptime_s s only, too little to set the clocks back"
      exit 77
    fi
    offset=-$((uptime_s / 2)) ;;
  *) echo "usage: clock_namespace.sh ahead|behind RUN_AT_CALLS_ARGS..." >&2; exit 2 ;;
esac
echo "clock_namespace.sh: restarts with CLOCK_MONOTONIC and CLOCK_BOOTTIME moved by $offset s"
exec "$here/run_at_calls.sh" \
  --restart-prefix "unshare --time --fork --monotonic $offset --boottime $offset" "$@"
