#!/usr/bin/env bash
# check_format.sh - every C source and header of the tree in the one style of .clang-format.
#   usage: check_format.sh SOURCE_DIR
# Lists the files clang-format would change (and how, for the first few) and exits 1; exits
# 77 (skipped) without clang-format.  Fix with: clang-format -i FILE...
set -u
top=${1:?usage: check_format.sh SOURCE_DIR}
command -v clang-format >/dev/null || { echo "check_format.sh: no clang-format: skipped"; exit 77; }
cd "$top" || exit 1
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files '*.c' '*.h')
else
  mapfile -t files < <(find . -path ./build -prune -o \( -name '*.c' -o -name '*.h' \) -print)
fi
bad=()
for f in "${files[@]}"; do
  [ -f "$f" ] || continue
  clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if [ ${#bad[@]} -gt 0 ]; then
  echo "check_format.sh: ${#bad[@]} of ${#files[@]} files are not in the style of .clang-format:"
  printf '  %s\n' "${bad[@]}"
  for f in "${bad[@]:0:3}"; do
    clang-format "$f" | diff -u "$f" - | head -n 20
  done
  echo "check_format.sh: fix with: clang-format -i ${bad[*]}"
  exit 1
fi
echo "check_format.sh: ${#files[@]} files in the style of .clang-format"
