#!/usr/bin/env bash
# CTest (label unit): how slurm_test.sh behaves where Slurm is not installed, on any machine: with
# nothing on PATH it skips (exit 77) in one line that says how to run it, and with
# TUNE_REQUIRE_SLURM=1 (.ci/run) the same is a failure (exit 1).
# usage: skip_test.sh SOURCE_DIR SCRATCH_DIR
set -uo pipefail
src=$1 scratch=$2
rm -rf "$scratch" && mkdir -p "$scratch/empty_path"
status=0
check() {  # name want_rc want_text output rc
  local lines
  lines=$(printf '%s\n' "$4" | grep -c .)
  if [ "$5" != "$2" ] || [ "$lines" != 1 ] || [[ $4 != *"$3"* ]]; then
    echo "FAIL $1: exit $5 (want $2), $lines lines (want 1), want '$3' in: $4"
    status=1
  else
    echo "ok $1: $4"
  fi
}
out=$(env -u TUNE_REQUIRE_SLURM PATH="$scratch/empty_path" "$BASH" "$src/tests/slurm/slurm_test.sh" tune "$src" "$scratch/run" 2>&1)
check "not installed: skipped" 77 "SKIPPED: Slurm is not installed" "$out" $?
[[ $out == *"TUNE_REQUIRE_SLURM=1"* && $out == *"apt-get install slurmctld slurmd slurm-client munge"* ]] ||
  { echo "FAIL the skip line does not say how to run the test: $out"; status=1; }
out=$(TUNE_REQUIRE_SLURM=1 PATH="$scratch/empty_path" "$BASH" "$src/tests/slurm/slurm_test.sh" tune "$src" "$scratch/run" 2>&1)
check "not installed, TUNE_REQUIRE_SLURM=1: failed" 1 "FAILED: Slurm is not installed" "$out" $?
exit $status
