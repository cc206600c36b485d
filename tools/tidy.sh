#!/usr/bin/env bash
# Runs clang-tidy with the repository's .clang-tidy over the library's and the simulator's sources
# (lib/, sim/src/), or over the files given; exits 1 on any warning. The lint.clang_tidy test.
#   tools/tidy.sh [-p BUILD_DIR] [-j JOBS] [FILE...]
# BUILD_DIR (default: build) must hold compile_commands.json (the ci preset writes it). The config is
# written for clang-tidy 14 (Debian bookworm's clang-tidy package, installed by .ci/install-deps);
# CLANG_TIDY overrides the program.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build
jobs="$(nproc 2>/dev/null || echo 2)"
while getopts "p:j:" opt; do
  case "$opt" in
    p) build="$OPTARG" ;;
    j) jobs="$OPTARG" ;;
    *) echo "usage: tools/tidy.sh [-p BUILD_DIR] [-j JOBS] [FILE...]" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
tool="${CLANG_TIDY:-}"
if [ -z "$tool" ]; then
  for t in clang-tidy-14 clang-tidy; do
    if command -v "$t" >/dev/null; then tool="$t"; break; fi
  done
fi
if [ -z "$tool" ]; then
  echo "tools/tidy.sh: clang-tidy not found (.ci/install-deps installs it)" >&2
  exit 1
fi
if [ ! -f "$build/compile_commands.json" ]; then
  echo "tools/tidy.sh: no $build/compile_commands.json (configure with the ci preset, or -DCMAKE_EXPORT_COMPILE_COMMANDS=ON)" >&2
  exit 1
fi
files=("$@")
if ((${#files[@]} == 0)); then
  mapfile -t files < <(find lib sim/src -name '*.cpp' | sort)
fi
# A file per clang-tidy process, as many at once as there are cores; --quiet leaves only the findings.
if printf '%s\0' "${files[@]}" | xargs -0 -n 1 -P "$jobs" "$tool" -p "$build" --quiet \
     2> >(grep -v -E '^[0-9]+ warnings? (and [0-9]+ errors? )?generated\.$' >&2); then
  echo "tools/tidy.sh: ${#files[@]} files, no findings"
else
  echo "tools/tidy.sh: findings above (.clang-tidy lists the checks; NOLINT(check) with a reason where one is right)" >&2
  exit 1
fi
