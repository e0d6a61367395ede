# bench_lib.sh - what the benchmark scripts share (sourced). The sourcing script sets `me`
# and `src` (the repository) first.
#   find_mana_bin      sets MANA_BIN (if unset) to <repo>/build/bin or <repo>/build-tests/bin
#                      (or $BUILD_DIR/bin), or exits 3 naming the variable to set
#   json_field NAME    a top-level field of mana_status --json read on stdin

find_mana_bin() {
  local b
  if [ -z "${MANA_BIN:-}" ]; then
    for b in "${BUILD_DIR:-$src/build}/bin" "$src/build-tests/bin"; do
      [ -x "$b/mana_launch" ] && MANA_BIN=$b && break
    done
  fi
  if [ -z "${MANA_BIN:-}" ] || [ ! -x "$MANA_BIN/mana_launch" ]; then
    echo "$me: FAIL: no mana build found (set MANA_BIN)" >&2
    exit 3
  fi
  export MANA_BIN
}

json_field() { sed -n "s/^  \"$1\": \"\{0,1\}\([^\",]*\)\"\{0,1\},\{0,1\}$/\1/p" | head -1; }
