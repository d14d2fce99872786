#!/usr/bin/env bash
# Submit a sharded tune run to Slurm: a job array of N shards and a merge job that runs after all
# of them succeeded (--dependency=afterok). Prints the two job ids.
#
#   scripts/slurm/submit.sh --shards 4 --work runs/sweep1 [--out results] [--tune PATH] \
#       [--merge-arg ARG]... -- --sweep sweeps/contact.json
#
# Everything after -- goes to every shard's tune (not --shard or --out: this script sets them).
# sbatch options come from its environment, e.g. SBATCH_PARTITION=gpu SBATCH_GRES=gpu:1
# SBATCH_TIMELIMIT=1:00:00; logs go to WORK/logs.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
usage() { echo "usage: $0 --shards N --work DIR [--out DIR] [--tune PATH] [--merge-arg ARG]... -- TUNE_ARGS..." >&2; exit 2; }
# The tune beside this script: a checkout's build (scripts/slurm/), an install's bin/
# (<prefix>/share/tune/scripts/slurm/), else the one on PATH.
tune=$here/../../build/tuner/tune
[ -x "$tune" ] || tune=$here/../../../../bin/tune
[ -x "$tune" ] || tune=$(command -v tune || echo "$here/../../build/tuner/tune")
shards="" work="" out="results" merge_args=()
while (($#)); do
  case $1 in
    --shards) shards=${2:?}; shift 2 ;;
    --work) work=${2:?}; shift 2 ;;
    --out) out=${2:?}; shift 2 ;;
    --tune) tune=${2:?}; shift 2 ;;
    --merge-arg) merge_args+=("${2:?}"); shift 2 ;;
    --) shift; break ;;
    *) usage ;;
  esac
done
[[ $shards =~ ^[1-9][0-9]*$ && -n $work ]] || usage
(($#)) || { echo "$0: give tune's arguments after --, e.g. -- --sweep sweep.json" >&2; exit 2; }
[ -x "$tune" ] || { echo "$0: $tune is not an executable; build tune or pass --tune" >&2; exit 2; }
abs() { mkdir -p "$1" && (cd "$1" && pwd); }
work=$(abs "$work") out=$(abs "$out") tune=$(cd "$(dirname "$tune")" && pwd)/$(basename "$tune")
mkdir -p "$work/logs"
export TUNE=$tune TUNE_WORK=$work TUNE_OUT=$out
array=$(sbatch --parsable --array="0-$((shards - 1))" --output="$work/logs/shard-%A_%a.out" \
  "$here/tune_array.sbatch" "$@")
array=${array%%;*}
merge=$(sbatch --parsable --dependency="afterok:$array" --kill-on-invalid-dep=yes --output="$work/logs/merge-%j.out" \
  "$here/tune_merge.sbatch" "${merge_args[@]}")
merge=${merge%%;*}
echo "shards_job=$array"
echo "merge_job=$merge"
