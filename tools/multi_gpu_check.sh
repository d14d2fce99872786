#!/usr/bin/env bash
# On a machine with two or more GPUs: the same contact sweep once on one device (--devices 0) and
# once on all of them (--devices all), after a shared warm-up of the compile cache so that both
# runs measure the same thing (loading, parity and timing; no NVRTC compile in either). Prints both
# wall times and their ratio and writes a JSON summary.
#
#   tools/multi_gpu_check.sh [-t TUNE] [-w WORKDIR] [-- TUNE_SWEEP_ARGS...]
#
#   -t TUNE      the tune binary (default: $TUNE_EXE, else build/tuner/tune)
#   -w WORKDIR   where the cache, both --out folders, the logs and summary.json go
#                (default: ${OUT:-/tmp}/multi_gpu_check)
#   after --      the sweep (default: --problem contact --B 1,2,4,8 --N 64,128: eight shapes)
#
# Exit status: 0 when both runs succeeded, 1 otherwise (the summary says which).
set -uo pipefail

tune=${TUNE_EXE:-build/tuner/tune}
work=${OUT:-/tmp}/multi_gpu_check
while getopts "t:w:" opt; do
  case "$opt" in
    t) tune=$OPTARG ;;
    w) work=$OPTARG ;;
    *) sed -n '2,14p' "$0" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ "${1:-}" = "--" ] && shift
sweep=("$@")
[ ${#sweep[@]} -eq 0 ] && sweep=(--problem contact --B 1,2,4,8 --N 64,128)

if [ ! -x "$tune" ]; then
  echo "multi_gpu_check: $tune is not an executable; pass -t path/to/tune" >&2
  exit 2
fi
rm -rf "$work"
mkdir -p "$work"
cache=$work/cache

gpus=$(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null | wc -l)
cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '. ')
echo "multi_gpu_check: $gpus GPU(s), compute capability ${cc:-unknown}; sweep: ${sweep[*]}"
[ "$gpus" -ge 2 ] || echo "multi_gpu_check: fewer than two GPUs; the ratio says nothing about --devices all" >&2

now() { date +%s.%N; }

# The warm-up: every variant of the sweep compiled for the devices' arch into the shared cache
# (the same options, so the same cache keys, as the timed runs). Without nvidia-smi's compute
# capability the cache stays cold and both runs compile: the summary says so.
cache_state="cold (compute capability unknown; both runs compile)"
if [ -n "$cc" ]; then
  t0=$(now)
  if "$tune" "${sweep[@]}" --compile-only --arch "$cc" --cache-dir "$cache" --out "$work/warmup" \
      >"$work/warmup.log" 2>&1; then
    cache_state="warm: compile-only warm-up for sm_$cc into $cache in $(awk -v a="$t0" -v b="$(now)" 'BEGIN{printf "%.1f", b-a}') s"
  else
    cache_state="cold (the warm-up failed, see warmup.log)"
  fi
fi
echo "multi_gpu_check: compile cache $cache_state"

run() {  # run NAME DEVICES: sets wall_NAME (seconds) and rc_NAME
  local name=$1 devices=$2 t0 rc
  t0=$(now)
  "$tune" "${sweep[@]}" --devices "$devices" --cache-dir "$cache" --out "$work/$name" >"$work/$name.log" 2>&1
  rc=$?
  printf -v "wall_$name" '%s' "$(awk -v a="$t0" -v b="$(now)" 'BEGIN{printf "%.3f", b-a}')"
  printf -v "rc_$name" '%s' "$rc"
}

run single 0
run all all
single_s=$wall_single
all_s=$wall_all
ratio=$(awk -v a="$single_s" -v b="$all_s" 'BEGIN{ if (b > 0) printf "%.3f", a/b; else print "null" }')
files_single=$(find "$work/single" -name '*.json' ! -name '*.journal*' 2>/dev/null | wc -l)
files_all=$(find "$work/all" -name '*.json' ! -name '*.journal*' 2>/dev/null | wc -l)
folders_all=$(find "$work/all" -mindepth 1 -maxdepth 1 -type d -printf '"%f",' 2>/dev/null | sed 's/,$//')
version=$("$tune" --version 2>/dev/null | head -1)

echo "--devices 0:   ${single_s} s, $files_single result files (exit $rc_single)"
echo "--devices all: ${all_s} s, $files_all result files (exit $rc_all)"
echo "ratio (one device / all devices): $ratio"

json_str() { printf '"%s"' "$(printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g')"; }
{
  echo "{"
  echo "  \"kind\": \"tune.multi_gpu_check\","
  echo "  \"tune\": $(json_str "$version"),"
  echo "  \"host\": $(json_str "$(hostname)"),"
  echo "  \"gpus\": $gpus,"
  echo "  \"sweep\": $(json_str "${sweep[*]}"),"
  echo "  \"compile_cache\": $(json_str "$cache_state"),"
  echo "  \"single\": {\"devices\": \"0\", \"wall_s\": $single_s, \"exit\": $rc_single, \"result_files\": $files_single},"
  echo "  \"all\": {\"devices\": \"all\", \"wall_s\": $all_s, \"exit\": $rc_all, \"result_files\": $files_all, \"folders\": [$folders_all]},"
  echo "  \"speedup_all_over_single\": $ratio"
  echo "}"
} >"$work/summary.json"
echo "summary: $work/summary.json (logs: $work/{warmup,single,all}.log)"
[ "$rc_single" = 0 ] && [ "$rc_all" = 0 ]
