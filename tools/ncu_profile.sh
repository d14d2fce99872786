#!/usr/bin/env bash
# On a GPU machine with Nsight Compute: profiles the winner (and, with --baseline, the baseline)
# of a committed result file, one kernel launch each, through tune itself: a copy of the problem's
# space holding that configuration alone (as its baseline too), then
#   ncu --target-processes all -k regex:<the first launch's function> --launch-count 1 tune ... --config <copy>
# Clocks are left alone (--clock-control none); caches are flushed before each replay pass (ncu's
# default), i.e. a cold launch as tune times it.
#
#   tools/ncu_profile.sh TUNE RESULT.json OUTDIR [--baseline] [--stalls]
# Writes OUTDIR/<problem>_<shape>_<winner|baseline>.txt (the sections' tables). --stalls adds
# every warp-stall reason (cycles per issued instruction), the source counters with the densest
# stall sampling, the report (.ncu-rep) and its per-SASS-instruction page (.sass.csv).
set -uo pipefail
tune=$1 result=$2 outdir=$3
which=(winner)
stalls=0
for a in "${@:4}"; do
  case "$a" in
    --baseline) which+=(baseline) ;;
    --stalls) stalls=1 ;;
    *) echo "ncu_profile: unknown option $a (use --baseline, --stalls)"; exit 2 ;;
  esac
done
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
here=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$outdir"
status=0
for role in "${which[@]}"; do
  # space file, tune arguments, kernel-name regex, output name
  mapfile -t plan < <(python3 - "$result" "$role" "$here" "$outdir" <<'PY'
import json, sys
result, role, here, outdir = sys.argv[1:5]
r = json.load(open(result))
problem, shape = r["problem"], r["shape"]
name = r["summary"]["winner" if role == "winner" else "baseline"]
v = next(v for v in r["variants"] if v["name"] == name)
base = next(v for v in r["variants"] if v["baseline"])
space = json.load(open(f"{here}/configs/{problem}/problem.json"))
# A space of this one configuration: it is also the baseline (a space must contain its baseline),
# so the only kernel launched is the one to profile. Parameters newer than the result take their
# declared `absent` value.
params = {p["name"]: v["params"].get(p["name"], p.get("absent")) for p in space["parameters"]}
def clause(params):
    terms = []
    for k, val in params.items():
        if isinstance(val, bool):
            terms.append(k if val else f"!{k}")
        else:
            terms.append(f"{k} == {val}")
    return " && ".join(terms)
space["constraints"].append(clause(params))
space["baseline"] = params
tag = f"{problem}_" + "_".join(f"{k}{shape[k]}" for k in shape) + f"_{role}"
path = f"{outdir}/{tag}.space.json"
json.dump(space, open(path, "w"), indent=1)
args = ["--problem", problem] + [a for k in shape for a in (f"--{k}", str(shape[k]))]
regex = v["launches"][0]["kernel"].split("<")[0]  # the first (or only) launch's function
print(path); print(" ".join(args)); print(regex); print(f"{outdir}/{tag}.txt")
PY
  )
  [ ${#plan[@]} -eq 4 ] || { echo "ncu_profile: could not plan $role of $result"; status=1; continue; }
  echo "== $role of $result: ${plan[1]}, kernel ${plan[2]}" | tee "${plan[3]}"
  extra=()
  if [ $stalls = 1 ]; then
    extra=(--section SourceCounters --section InstructionStats --import-source no -f -o "${plan[3]%.txt}")
    # the densest warp sampling (every 2^5 cycles), under the option name this ncu knows
    help=$("$ncu" --help 2>&1)
    for opt in --warp-sampling-interval --sampling-interval; do
      if [[ $help == *"$opt "* ]]; then extra+=("$opt" 0); break; fi
    done
  fi
  "$ncu" "${extra[@]}" --target-processes all --clock-control none --kernel-name-base function -k "regex:^${plan[2]}$" \
    --launch-count 1 --section SpeedOfLight --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis \
    --section LaunchStats --section Occupancy --section WarpStateStats --section SchedulerStats \
    --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,sm__inst_executed_pipe_tensor_op_hmma.sum,smsp__sass_thread_inst_executed_op_ffma_pred_on.sum \
    "$tune" ${plan[1]} --config "${plan[0]}" --out "$outdir/results" >>"${plan[3]}" 2>&1 || status=1
  if [ $stalls = 1 ] && [ -f "${plan[3]%.txt}.ncu-rep" ]; then
    "$ncu" --import "${plan[3]%.txt}.ncu-rep" --page details >>"${plan[3]}" 2>&1
    # every collected metric, the stall reasons (smsp__average_warp_latency_issue_stalled_*) among them
    "$ncu" --import "${plan[3]%.txt}.ncu-rep" --page raw --csv >"${plan[3]%.txt}.raw.csv" 2>&1
    "$ncu" --import "${plan[3]%.txt}.ncu-rep" --page source --csv --print-source sass >"${plan[3]%.txt}.sass.csv" 2>&1 ||
      "$ncu" --import "${plan[3]%.txt}.ncu-rep" --page source --csv >"${plan[3]%.txt}.sass.csv" 2>&1
  fi
  tail -5 "${plan[3]}"
done
exit $status
