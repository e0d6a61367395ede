#!/usr/bin/env bash
# loaded.sh - runs a command (default: the README's test command, tests/run-all.sh) with
# CPU hogs busy beside it, as on a shared machine, and says how it went.
#
#   usage: tests/loaded.sh [--hogs N] [COMMAND [ARGS...]]
#     --hogs N   busy loops to run (default 2: one per core of the reference machine)
#     e.g. tests/loaded.sh                    the test command under load
#          tests/loaded.sh tests/demo.sh      the demo under load
#
# Exit status: the command's. The hogs are stopped however the command ends.
set -u
here=$(cd "$(dirname "$0")" && pwd)
hogs=2
if [ "${1:-}" = --hogs ]; then
  hogs=${2:?--hogs needs a number}
  shift 2
fi
case "${1:-}" in -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;; esac
[ $# -gt 0 ] || set -- "$here/run-all.sh"

pids=()
stop_hogs() { [ ${#pids[@]} -eq 0 ] || kill "${pids[@]}" 2>/dev/null; }
trap stop_hogs EXIT
trap 'exit 130' INT TERM
for _ in $(seq "$hogs"); do
  # a shell busy loop at the default priority: it competes for the cores like a user's job
  bash -c 'while :; do :; done' &
  pids+=($!)
done
echo "loaded.sh: $hogs CPU hog(s) running (pids ${pids[*]}); running: $*"
t0=$(date +%s)
"$@"
rc=$?
echo "loaded.sh: '$*' exited with status $rc after $(( $(date +%s) - t0 )) s beside $hogs CPU hog(s)"
exit $rc
