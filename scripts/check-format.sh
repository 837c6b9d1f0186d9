#!/usr/bin/env bash
# Checks (never rewrites) that every tracked C++/CUDA source is formatted by .clang-format.
# Exit 0: all formatted; 1: lists the files that differ and how to fix them; 2: no clang-format.
# Usage: scripts/check-format.sh            # check
#        scripts/check-format.sh --fix      # rewrite the files that differ (one pass, then commit)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
fmt=${CLANG_FORMAT:-clang-format}
if ! command -v "$fmt" > /dev/null; then
  echo "check-format: $fmt not found (scripts/install-deps.sh --test installs clang-format)" >&2
  exit 2
fi
mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.h' '*.cc' '*.cu' '*.cuh')
differ=()
for f in "${files[@]}"; do
  "$fmt" --dry-run -Werror "$f" > /dev/null 2>&1 || differ+=("$f")
done
if [ ${#differ[@]} -eq 0 ]; then
  echo "check-format: ${#files[@]} files formatted" >&2
  exit 0
fi
if [ "${1:-}" = "--fix" ]; then
  "$fmt" -i "${differ[@]}"
  echo "check-format: reformatted ${#differ[@]} files" >&2
  exit 0
fi
printf 'check-format: not formatted: %s\n' "${differ[@]}" >&2
echo "check-format: ${#differ[@]} of ${#files[@]} files differ; run scripts/check-format.sh --fix" >&2
exit 1
