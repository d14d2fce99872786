#!/usr/bin/env bash
# The sweep study of issue 24, on a GPU machine: the same shapes tuned exhaustively and as a warm
# sweep, each run with a compile cache of its own (cold: every compile counts), then
# tools/search_summary.py writes summary.json and summary.md.
#
#   tools/search_study.sh TUNE OUT PROBLEM:SHAPE... [-- EXTRA TUNE ARGS]
#   e.g. tools/search_study.sh .device/bin/tune results-device/search \
#          "contact:--B 4 --N 24" "contact:--B 4 --N 64" "scene_graph:--B 4 --N 24"
#
# Shapes are given in sweep order, cheapest first: the warm sweep tunes the first shape of each
# problem exhaustively and every later one with --warm-start on all earlier results of that
# problem in OUT/warm (the cheap shapes teach the expensive ones). OUT/exhaustive and OUT/warm hold the
# results, OUT/walls.jsonl each run's wall time (the tune process, start to exit), OUT/study.log
# the runs' output.
# STUDY_PART=exhaustive or warm runs one half (a device call is at most 10 minutes).
# STUDY_PART=sweep runs the shapes as one tune process instead, the way a user tunes many shapes:
# tune --sweep (the shapes) --transfer $STUDY_SWEEP_ARGS (default --search model) into OUT/sweep,
# with one cold compile cache for the sweep; walls.jsonl gets the process's wall ("mode": "sweep"),
# each result file its own (wall_seconds.total).
set -uo pipefail
tune=$1 out=$2
shift 2
shapes=() extra=()
while (($#)); do
  if [ "$1" = -- ]; then shift; extra=("$@"); break; fi
  shapes+=("$1"); shift
done
part=${STUDY_PART:-both}
mkdir -p "$out"
walls=$out/walls.jsonl
if [ "$part" = sweep ]; then
  sweep=$out/sweep.json
  python3 - "$sweep" "${shapes[@]}" <<'PY'
import json, sys
items = []
for spec in sys.argv[2:]:
    problem, args = spec.split(":", 1)
    words = args.split()
    items.append({"problem": problem, **{k.lstrip("-"): [int(v)] for k, v in zip(words[::2], words[1::2])}})
open(sys.argv[1], "w").write(json.dumps({"items": items}, indent=1) + "\n")
PY
  cache=$(mktemp -d)
  start=$(date +%s%N)
  # shellcheck disable=SC2086
  "$tune" --sweep "$sweep" --transfer ${STUDY_SWEEP_ARGS:---search model} --out "$out/sweep" --cache-dir "$cache" \
    "${extra[@]}" >>"$out/study.log" 2>&1
  code=$?
  wall=$(( ($(date +%s%N) - start) / 1000000 ))
  rm -rf "$cache"
  printf '{"problem": "all", "args": "%s", "mode": "sweep", "warm_files": 0, "exit": %d, "wall_ms": %d}\n' \
    "--sweep --transfer ${STUDY_SWEEP_ARGS:---search model}" "$code" "$wall" >>"$walls"
  echo "sweep of ${#shapes[@]} shapes: exit $code, $((wall / 1000)) s"
  exit "$code"
fi
for k in "${!shapes[@]}"; do
  problem=${shapes[$k]%%:*} args=${shapes[$k]#*:}
  for mode in exhaustive warm; do
    [ "$part" = both ] || [ "$part" = "$mode" ] || continue
    warm=()
    if [ "$mode" = warm ]; then
      mapfile -t earlier < <(find "$out/warm" -path "*/$problem/*" -name '*.json' 2>/dev/null | sort)
      ((${#earlier[@]})) && warm=(--warm-start "${earlier[@]}")
    fi
    cache=$(mktemp -d)
    start=$(date +%s%N)
    # shellcheck disable=SC2086
    "$tune" --problem "$problem" $args "${warm[@]}" --out "$out/$mode" --cache-dir "$cache" "${extra[@]}" \
      >>"$out/study.log" 2>&1
    code=$?
    wall=$(( ($(date +%s%N) - start) / 1000000 ))
    rm -rf "$cache"
    printf '{"problem": "%s", "args": "%s", "mode": "%s", "warm_files": %d, "exit": %d, "wall_ms": %d}\n' \
      "$problem" "$args" "$mode" "$(( ${#warm[@]} ? ${#warm[@]} - 1 : 0 ))" "$code" "$wall" >>"$walls"
    echo "$mode $problem $args: exit $code, $((wall / 1000)) s${warm:+ (warm start from $(( ${#warm[@]} - 1 )) file(s))}"
  done
done
