#!/usr/bin/env bash
# The C++/CUDA of the product and its tests against the root .clang-format (issue 38): clang-format
# --dry-run --Werror over the tracked sources of tuner/, kernel_templates/, examples/, configs/,
# bench/ and tests/ (not tests/fixtures/, whose templates are test data as written). A kernel
# source's bytes are part of every record's identity (context.source_hash, which `tune export torch`
# and `tune check --write` compare): formatting a kernel changes no machine code
# (tools/cubin_identity.py) but asks for its records to be re-tuned.
#   tools/check_format.sh [--list] [--fix]
# Exit 0 when every file is formatted, 1 when one is not (each named, or only their count and
# names with --list), 2 when clang-format is missing. --fix formats them in place (clang-format -i).
set -uo pipefail
cd "$(dirname "$0")/.."
clang_format=${CLANG_FORMAT:-clang-format}
command -v "$clang_format" >/dev/null ||
  { echo "check_format: $clang_format not found; install clang-format (apt-get install clang-format)"; exit 2; }
mode=check
for a in "$@"; do
  case "$a" in
    --list) mode=list ;;
    --fix) mode=fix ;;
    *) echo "check_format: unknown option $a (use --list or --fix)"; exit 2 ;;
  esac
done
mapfile -t files < <(git ls-files -- 'tuner/*' 'kernel_templates/*' 'examples/*' 'configs/*' 'bench/*' 'tests/*' | grep -v '^tests/fixtures/' |
  grep -E '\.(cpp|hpp|h|cc|cu|cuh|inc)$')
if [ "$mode" = fix ]; then
  "$clang_format" -i "${files[@]}"
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  "$clang_format" --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if [ ${#bad[@]} -gt 0 ]; then
  if [ "$mode" = list ]; then printf '%s\n' "${bad[@]}"; else
    for f in "${bad[@]}"; do "$clang_format" --dry-run "$f" 2>&1 | head -4; done
  fi
  echo "check_format: ${#bad[@]} of ${#files[@]} files differ from .clang-format; run tools/check_format.sh --fix"
  exit 1
fi
echo "check_format: ${#files[@]} files formatted"
