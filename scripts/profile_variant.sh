#!/usr/bin/env bash
# Profiles one kernel of a tune run with Nsight Compute, on the GPU machine (device tool, .device/ carried):
#   scripts/profile_variant.sh NAME KERNEL_REGEX TUNE_ARGS...
# KERNEL_REGEX matches the mangled kernel name (the `resources` keys of a results JSON). The
# fourth launch of that kernel is profiled (the first ones are parity checks), caches flushed,
# with the full section set and per-SASS-instruction stall samples. Writes $OUT/NAME.txt
# (details, then the run log) and $OUT/NAME-sass.csv (source page). Pass a small --config (a space restricted to
# the variant and the baseline) so the run is short.
set -uo pipefail
name=$1 regex=$2
shift 2
out=${OUT:-/tmp/tune-out}
mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/.device/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
rep=/tmp/$name
timeout 240 "$ncu" --kernel-name-base mangled -k "regex:$regex" --launch-skip 3 --launch-count 1 --set full \
  --import-source no -f -o "$rep" .device/bin/tune "$@" --no-cache --out /tmp/profile-results >/tmp/$name.log 2>&1
{ "$ncu" -i "$rep.ncu-rep" --page details; echo "== ncu run log"; cat /tmp/$name.log; } >"$out/$name.txt" 2>&1
"$ncu" -i "$rep.ncu-rep" --page source --csv --print-source sass >"$out/$name-sass.csv" 2>&1 || true
tail -5 /tmp/$name.log
grep -E "Duration|Elapsed Cycles|Achieved Occupancy|Registers Per|Stall|Warp Cycles Per Issued" "$out/$name.txt" | head -20
