#!/usr/bin/env bash
# compute-sanitizer with --racecheck-num-workers $RACECHECK_WORKERS (default 0: the tool's
# automatic choice) added to racecheck's runs, every other run passed through as it is; for
# TUNE_SANITIZER (issue 37: does racecheck's CPU analysis bound the gate at large shapes?).
# tools/device_session.sh racecheck-workers:<results file>:<N>... runs tune check under it.
real=${COMPUTE_SANITIZER:-$(PATH=/usr/local/cuda/bin:$PATH command -v compute-sanitizer)}
if [ "${1:-}" = --tool ] && [ "${2:-}" = racecheck ]; then
  exec "$real" --racecheck-num-workers "${RACECHECK_WORKERS:-0}" "$@"
fi
exec "$real" "$@"
