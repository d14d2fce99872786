#!/usr/bin/env bash
# Runs on the GPU machine (device tool), from the repository root, with .device/ carried:
#   tools/device_session.sh STEP...   steps: info, tests, verify, bench, tune[=LABEL]:<args separated by :>,
#                                       torch[:<args separated by :>], check:<results file>[:<args>],
#                                       plant=NAME:<tune args separated by :>, probe, modelnew,
#                                       bench-compare, bench-shuffled, bench-aa, study[=exhaustive|warm|sweep],
#                                       median-check[:<args separated by :>],
#                                       racecheck-workers:<results file>:<N>...
# modelnew: tune export torch of the committed contact, scene_graph and ln_linear_gelu (examples/) results, built on the GPU
# machine (torch.utils.cpp_extension), and ModelNew timed beside Model eager and torch.compile
# (the export embeds each record's CUBIN and refuses a record tuned from other kernel sources than
# today's: re-tune it, or name only current records with modelnew=LABEL:...)
# (report/torch_baseline.py --export), TF32 off then on: $OUT/torch_modelnew{,_tf32}.json.
# modelnew=LABEL:<record>:<record>...: the same for the named results files only (e.g. the bfloat16
# records and an example's), TF32 off, into $OUT/torch_modelnew_LABEL.json.
# probe: tools/sanitizer/cluster_exchange.cu built by nvcc and run in each mode under racecheck
# into $OUT/probe.log (does racecheck understand a cluster exchange by st.async and an mbarrier,
# and named barriers that only some warps pass? docs/scene-graph-racecheck.md).
# Each tune and check step is stopped after $STEP_TIMEOUT seconds (default 300), so that one slow
# step leaves the others' logs.
# sanitizer-start: the same program's smallest mode (one small kernel) timed bare and under each
# tool, into $OUT/probe.log: what a sanitized process costs before any kernel of ours runs (issue 37).
# check: tune check on a result of record (the correctness gate) into $OUT/check.log.
# plant=NAME: tools/plant.py NAME builds the planted-defect problem folder (tests/plants/NAME.json),
# then tune runs it with the args, results under results-device/plants/NAME.
# torch: PyTorch eager and torch.compile timed at the shapes of the committed results/
# (report/torch_baseline.py, each problem's make_model from configs/<problem>/reference.py) into
# $OUT/torch_baseline.json.
# bench: the tuned kernels built by nvcc (bench/) and tune's NVRTC build of each, side by side, into
# $OUT/bench.json and $OUT/bench.log (the table of both medians at its end).
# bench-compare: the same twice more, as 5 repetitions (aggregates only), and the strict re-measure
# of contact B4 N64 reproduced (strict/alone vs strict/interleaved, both builds) 5 times, into
# $OUT/bench_compare.json, $OUT/bench_strict.json and $OUT/bench_compare.log.
# median-check: tools/median_check.py on .median-before (its docstring) into $OUT/median_check.log
# and $OUT/median_check.json.
# Logs and results go to $OUT (results as one tarball, since $OUT keeps only two folder levels).
set -uo pipefail
out=${OUT:-/tmp/tune-out}
mkdir -p "$out"
# The device tests read the golden cases from the problem folders of this copy of the tree.
export TUNE_REPO_DIR=$PWD
export LD_LIBRARY_PATH=$PWD/.device/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
tune=$PWD/.device/bin/tune
export TUNE_BIN=$tune  # report/torch_baseline.py runs tune problem draw
results=$PWD/results-device
status=0
step_timeout=${STEP_TIMEOUT:-300}
for step in "$@"; do
  case "$step" in
    info)
      { nvidia-smi; nvidia-smi -q -d CLOCK,PERFORMANCE; } >"$out/nvidia-smi.txt" 2>&1
      nproc >>"$out/nvidia-smi.txt"
      { command -v compute-sanitizer; compute-sanitizer --version; compute-sanitizer --help; } >>"$out/nvidia-smi.txt" 2>&1 ;;
    check:*)
      args=${step#check:}
      echo "== tune check ${args//:/ }" | tee -a "$out/check.log"
      start=$(date +%s%N)
      timeout "$step_timeout" "$tune" check ${args//:/ } 2>&1 | tee -a "$out/check.log" | tail -2
      echo "exit ${PIPESTATUS[0]}; wall $(( ($(date +%s%N) - start) / 1000000 )) ms" | tee -a "$out/check.log" ;;
    racecheck-workers:*)
      # racecheck-workers:<results file>:<N>...: tune check --fresh of the file's winner with
      # racecheck's CPU analysis threads set to each N in turn (0: automatic) through
      # tools/sanitizer/racecheck_workers.sh, each line into $OUT/racecheck_workers.log as it comes
      # (a step cut short by $STEP_TIMEOUT still leaves what it printed).
      rest=${step#racecheck-workers:}; file=${rest%%:*}; counts=${rest#*:}
      for n in ${counts//:/ }; do
        echo "== racecheck workers $n: tune check $file --fresh" >>"$out/racecheck_workers.log"
        start=$(date +%s%N)
        RACECHECK_WORKERS=$n TUNE_SANITIZER=$PWD/tools/sanitizer/racecheck_workers.sh \
          timeout "$step_timeout" "$tune" check "$file" --fresh >>"$out/racecheck_workers.log" 2>&1
        echo "exit $?; wall $(( ($(date +%s%N) - start) / 1000000 )) ms" >>"$out/racecheck_workers.log"
      done ;;
    modelnew=*)
      label=${step#modelnew=}; label=${label%%:*}; records=${step#modelnew=*:}
      exp=$PWD/export-device-$label stage=$PWD/modelnew-$label
      rm -rf "$stage"
      for r in ${records//:/ }; do  # results/<gpu>/<problem>/<file>, staged so that only these are timed
        mkdir -p "$stage/$(basename "$(dirname "$(dirname "$r")")")/$(basename "$(dirname "$r")")"
        cp "$r" "$stage/$(basename "$(dirname "$(dirname "$r")")")/$(basename "$(dirname "$r")")/"
      done
      echo "== modelnew $label: ${records//:/ }" | tee -a "$out/torch.log"
      "$tune" --problem-path examples export torch ${records//:/ } -o "$exp" >>"$out/torch.log" 2>&1 || status=1
      python3 -c "import sys; sys.path.insert(0, '$exp'); import tune_ops; tune_ops.load(verbose=True)" >>"$out/torch.log" 2>&1 || status=1
      python3 report/torch_baseline.py "$stage" --problem-path examples -o "$out/torch_modelnew_$label.json" --export "$exp" \
        2>&1 | tee -a "$out/torch.log" || status=1 ;;
    modelnew)
      exp=$PWD/export-device
      # The results of record: <shape>.json, or <shape>.json.gz (those over 256 KB are kept compressed).
      records=$(shopt -s nullglob; echo results/h200/{contact,scene_graph,ln_linear_gelu}/*.json{,.gz})
      "$tune" --problem-path examples export torch $records -o "$exp" >>"$out/torch.log" 2>&1 || status=1
      python3 -c "import sys; sys.path.insert(0, '$exp'); import tune_ops; tune_ops.load(verbose=True)" >>"$out/torch.log" 2>&1 || status=1
      for tf32 in "" --tf32; do
        python3 report/torch_baseline.py results --problem-path examples -o "$out/torch_modelnew${tf32:+_tf32}.json" --export "$exp" $tf32 \
          2>&1 | tee -a "$out/torch.log" || status=1
      done ;;
    probe)
      nvcc -arch=sm_90 -lineinfo -o /tmp/cluster_exchange tools/sanitizer/cluster_exchange.cu >>"$out/probe.log" 2>&1 || status=1
      for mode in sync cluster stasync stasync_bar stasync_self stasync_race stasync_namedbar namedbar namedbar_even \
        namedbar_race; do
        echo "== racecheck $mode" >>"$out/probe.log"
        compute-sanitizer --tool racecheck --print-limit 4 /tmp/cluster_exchange "$mode" >>"$out/probe.log" 2>&1
        echo "exit $?" >>"$out/probe.log"
      done ;;
    sanitizer-start)
      nvcc -arch=sm_90 -lineinfo -o /tmp/cluster_exchange tools/sanitizer/cluster_exchange.cu >>"$out/probe.log" 2>&1 || status=1
      for tool in none memcheck racecheck synccheck initcheck none; do
        start=$(date +%s%N)
        if [ "$tool" = none ]; then /tmp/cluster_exchange sync >/dev/null 2>&1
        else compute-sanitizer --tool "$tool" /tmp/cluster_exchange sync >/dev/null 2>&1; fi
        echo "sanitizer-start $tool: exit $? wall $(( ($(date +%s%N) - start) / 1000000 )) ms" | tee -a "$out/probe.log"
      done ;;
    plant=*)
      name=${step#plant=}; name=${name%%:*}; args=${step#plant=*:}
      folder=$PWD/plants-device/$name
      python3 tools/plant.py "$name" "$folder" >>"$out/tune.log" 2>&1 || status=1
      echo "== plant $name: tune --problem $folder ${args//:/ }" | tee -a "$out/tune.log"
      start=$(date +%s%N)
      "$tune" --problem "$folder" ${args//:/ } --out "$results/plants/$name" 2>>"$out/tune.log" | tee -a "$out/tune.log"
      echo "exit ${PIPESTATUS[0]}; wall $(( ($(date +%s%N) - start) / 1000000 )) ms" | tee -a "$out/tune.log" ;;
    tests)
      for t in .device/bin/tune_device*_tests; do
        TUNE_EXE=$tune TUNE_FIXTURES=$PWD/tests/fixtures "$t" 2>&1 | tee -a "$out/tests.log" |
          grep -E "^\[  (PASSED|FAILED|SKIPPED) |Failure|error" || status=1
      done ;;
    verify)
      "$tune" verify configs/*/golden/*.json* --results "$results" 2>&1 | tee -a "$out/verify.log" | tail -3 || status=1 ;;
    bench)
      # The tuned kernels built by nvcc (bench/), winners and baselines, Google Benchmark JSON.
      .device/bin/tune_bench --benchmark_out="$out/bench.json" --benchmark_out_format=json \
        --benchmark_counters_tabular=true 2>&1 | tee -a "$out/bench.log" || status=1 ;;
    bench-compare)
      # nvcc vs NVRTC build of every entry, 5 repetitions; then tune's interleaved strict re-measure
      # reproduced (the baseline alone vs between the other finalists' samples), 5 repetitions.
      .device/bin/tune_bench --benchmark_filter='/(winner|baseline)/' --benchmark_repetitions=5 \
        --benchmark_report_aggregates_only=true --benchmark_out="$out/bench_compare.json" \
        --benchmark_out_format=json --benchmark_counters_tabular=true 2>&1 | tee -a "$out/bench_compare.log" || status=1
      .device/bin/tune_bench --benchmark_filter='/strict/' --benchmark_repetitions=5 \
        --benchmark_out="$out/bench_strict.json" --benchmark_out_format=json \
        --benchmark_counters_tabular=true 2>&1 | tee -a "$out/bench_compare.log" || status=1 ;;
    bench-shuffled|bench-aa)
      # The nvcc vs NVRTC comparison of bench-compare with the repetitions of all entries in random
      # order (Google Benchmark's random interleaving): a difference that is the order or the GPU's
      # state when an entry ran, not its build, averages out. bench-aa: its A/A twin, the "nvcc"
      # column a second module of the NVRTC build's own CUBIN (TUNE_BENCH_AA), so the columns differ
      # in their module alone: the comparison's noise floor.
      name=bench_shuffled aa=
      if [ "$step" = bench-aa ]; then name=bench_aa aa=1; fi
      TUNE_BENCH_AA=$aa .device/bin/tune_bench --benchmark_filter='/(winner|baseline)/' --benchmark_repetitions=5 \
        --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true \
        --benchmark_out="$out/$name.json" --benchmark_out_format=json \
        --benchmark_counters_tabular=true 2>&1 | tee -a "$out/$name.log" || status=1 ;;
    tune:*|tune=*)
      # tune=LABEL:args writes under results-device/LABEL (repeated runs of one shape side by side).
      dest=$results
      if [[ $step == tune=* ]]; then label=${step#tune=}; label=${label%%:*}; dest=$results/$label; fi
      args=${step#tune*:}
      echo "== tune ${args//:/ } (results in ${dest#$PWD/})" | tee -a "$out/tune.log"
      start=$(date +%s%N)
      "$tune" ${args//:/ } --out "$dest" 2>>"$out/tune.log" | tee -a "$out/tune.log" || status=1
      echo "wall $(( ($(date +%s%N) - start) / 1000000 )) ms" | tee -a "$out/tune.log" ;;
    study|study=*)
      # Issue 24's sweep study (tools/search_study.sh): the shapes of $STUDY_SHAPES (";"-separated
      # PROBLEM:ARGS, cheapest first; default below) tuned exhaustively and as a warm sweep into
      # results-device/search (in results.tgz). study=exhaustive or study=warm runs one half, so
      # that each device call stays under its 10 minutes; the warm half reads the warm results of
      # earlier calls on the same machine.
      part=${step#study}; part=${part#=}
      IFS=';' read -r -a study_shapes <<<"${STUDY_SHAPES:-contact:--B 4 --N 24;contact:--B 4 --N 64;contact:--B 2 --N 128;contact:--B 2 --N 256;contact:--B 2 --N 512;contact:--B 1 --N 1024 --C 128;scene_graph:--B 4 --N 24;scene_graph:--B 8 --N 24;scene_graph:--B 4 --N 48;scene_graph:--B 16 --N 64 --D 256 --heads 8 --P 32}"
      # $STUDY_ARGS: extra tune options for every run of both halves (e.g. --sanitize off).
      # shellcheck disable=SC2086
      STUDY_PART=${part:-both} tools/search_study.sh "$tune" "$results/search" "${study_shapes[@]}" -- ${STUDY_ARGS:-} 2>&1 |
        tee -a "$out/study.log" || status=1
      python3 tools/search_summary.py "$results/search" -o "$out/search_summary.json" --md "$out/search_summary.md" \
        2>&1 | tee -a "$out/study.log" ;;
    median-check|median-check:*)
      # Issue 23: the kernels a template change left not byte-identical, timed before/after
      # alternately with a before/before A/A floor (tools/median_check.py), from the before tree
      # and variants.json that `median_check.py --export-before .median-before` wrote (carried).
      # median-check:ARGS passes more options (e.g. median-check:--part:1/2, a device call per half).
      args=${step#median-check}; args=${args#:}
      python3 tools/median_check.py --before .median-before --tune "$tune" --out "$out" ${args//:/ } \
        2>&1 | tee -a "$out/median_check${args:+_${args//[^A-Za-z0-9]/_}}.log"
      [ "${PIPESTATUS[0]}" -eq 0 ] || status=1 ;;
    torch|torch:*)
      args=${step#torch}; args=${args#:}
      python3 report/torch_baseline.py results --problem-path examples -o "$out/torch_baseline.json" ${args//:/ } \
        2>&1 | tee -a "$out/torch.log" || status=1 ;;
    *) echo "unknown step $step" >&2; status=2 ;;
  esac
done
[ -d "$results" ] && tar -C "$results" -czf "$out/results.tgz" .
exit $status
