#!/usr/bin/env bash
# Formats the C++ sources with clang-format and the repository's .clang-format.
#   tools/format.sh --check   list the files clang-format would change (exit 1 if any); the lint.clang_format test
#   tools/format.sh --fix     reformat them in place
# Optional file arguments narrow it to those files. The config is written for clang-format 14 (Debian bookworm's
# clang-format package, installed by .ci/install-deps); CLANG_FORMAT overrides the program.
set -euo pipefail
cd "$(dirname "$0")/.."
mode="${1:-}"
case "$mode" in
  --check | --fix) shift ;;
  *) echo "usage: tools/format.sh --check|--fix [FILE...]" >&2; exit 2 ;;
esac
tool="${CLANG_FORMAT:-}"
if [ -z "$tool" ]; then
  for t in clang-format-14 clang-format; do
    if command -v "$t" >/dev/null; then tool="$t"; break; fi
  done
fi
if [ -z "$tool" ]; then
  echo "tools/format.sh: clang-format not found (.ci/install-deps installs it)" >&2
  exit 1
fi
files=("$@")
if ((${#files[@]} == 0)); then
  # Every C++ source in the repository but the test data (inputs, kept as they were found).
  pattern='\.(cpp|hpp|h|cu|cuh)$'
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    mapfile -t files < <(git ls-files | grep -E "$pattern" | grep -v '^tests/data/')
  else
    mapfile -t files < <(find include lib sim tests calibrate bench examples -type f 2>/dev/null | grep -E "$pattern" |
                           grep -v '^tests/data/' | sort)
  fi
fi
if [ "$mode" = --fix ]; then
  printf '%s\0' "${files[@]}" | xargs -0 -n 16 "$tool" -i --style=file
  exit 0
fi
changed=()
for f in "${files[@]}"; do
  if ! "$tool" --style=file "$f" | cmp -s - "$f"; then changed+=("$f"); fi
done
if ((${#changed[@]})); then
  printf 'tools/format.sh: %s is not formatted\n' "${changed[@]}" >&2
  echo "tools/format.sh: ${#changed[@]} of ${#files[@]} files differ from clang-format's output ($("$tool" --version)); run tools/format.sh --fix" >&2
  exit 1
fi
echo "tools/format.sh: ${#files[@]} files formatted as .clang-format says"
