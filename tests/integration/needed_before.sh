#!/usr/bin/env bash
# needed_before.sh PROGRAM FIRST SECOND - PROGRAM's dynamic section names a library matching
# FIRST before one matching SECOND (the loader then runs SECOND's constructor first).
set -uo pipefail
readelf -d "$1" | awk -v first="$2" -v second="$3" '
  /NEEDED/ && index($0, first) && !f { f = NR }
  /NEEDED/ && index($0, second) && !s { s = NR }
  END {
    if (!f || !s || f > s) {
      printf "needed_before.sh: FAIL: %s is not named before %s\n", first, second
      exit 1
    }
    printf "needed_before.sh: %s is named before %s\n", first, second
  }'
