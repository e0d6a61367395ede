#!/usr/bin/env bash
# remove_orphan_sysv_shm.sh - removes the System V shared memory segments of
# tests/programs/sysv_shm that a killed run left behind (as any job killed before it removes
# its segments leaves them): nobody attached, the process that made it gone, BYTES bytes,
# and the key 0 (private) or a key whose upper 16 bits are PREFIX (hex, the program's third
# argument).  A segment a running test still needs is never one of them: a private one has
# an attached creator until it is killed, and a keyed one is removed only with its prefix.
#
# usage: remove_orphan_sysv_shm.sh BYTES private|PREFIX
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: remove_orphan_sysv_shm.sh BYTES private|PREFIX" >&2; exit 2; }
bytes=$1 prefix=-1
[ "$2" = private ] || prefix=$((16#$2))
awk -v bytes="$bytes" -v prefix="$prefix" '
  NR > 1 && $4 == bytes && $7 == 0 {
    key = $1 < 0 ? $1 + 4294967296 : $1
    if (prefix < 0 ? key != 0 : int(key / 65536) != prefix) next
    if (system("kill -0 " $5 " 2>/dev/null") == 0) next
    print $2
  }' /proc/sysvipc/shm | while read -r id; do ipcrm -m "$id" 2>/dev/null || true; done
