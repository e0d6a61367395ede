#!/bin/sh
# Checkpoint image speed against the storage's own speed, in one run:
#
#   benchmarks/run_image_bench.sh [DIR] [image_bench options]
#
# DIR (default /tmp) is where the image and the dd files go; it needs about 2.5 x the region
# size free. Options go to image_bench: -s MiB (region size, default 1024), -r rounds
# (default 5), -w warm-up rounds (default 1), -z zero% and -u untouched% (default 10 each).
# The figures and how to read them: docs/image-format.md, "Performance".
#
# The binary: $IMAGE_BENCH_BIN if set; else build/benchmarks/image_bench (or $BUILD_DIR's)
# if it is newer than its sources; else it is compiled here from the sources with cc into
# ${TMPDIR:-/tmp}/mana-bench-$UID/. Exit status: image_bench's (0 targets met, 1 missed,
# 2 error).
set -eu

src=$(cd "$(dirname "$0")/.." && pwd)
dir=/tmp
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
  dir=$1
  shift
fi

newest_source() {
  ls -t "$src"/benchmarks/image_bench.c "$src"/restart/image*.c "$src"/restart/image*.h | head -1
}

pick_binary() {
  if [ -n "${IMAGE_BENCH_BIN:-}" ]; then
    echo "$IMAGE_BENCH_BIN"
    return
  fi
  built=${BUILD_DIR:-$src/build}/benchmarks/image_bench
  if [ -x "$built" ] && [ "$built" -nt "$(newest_source)" ]; then
    echo "$built"
    return
  fi
  out=${TMPDIR:-/tmp}/mana-bench-$(id -u)
  mkdir -p "$out"
  if [ ! -x "$out/image_bench" ] || [ "$(newest_source)" -nt "$out/image_bench" ]; then
    cc -std=gnu17 -O2 -Wall -Wextra -I"$src/restart" -o "$out/image_bench" \
      "$src/benchmarks/image_bench.c" "$src"/restart/image*.c -lxxhash >&2
  fi
  echo "$out/image_bench"
}

bin=$(pick_binary)
echo "date $(date -Is)  host $(uname -n)  kernel $(uname -r)"
echo "cpu  $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')  ($(nproc) online)"
echo "dir  $dir: $(df -PT "$dir" | awk 'NR==2 {print $2 " on " $1 ", " $6 " used"}')"
echo "bin  $bin"
exec "$bin" "$@" "$dir"
