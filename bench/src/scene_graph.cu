// The tuned scene_graph kernels, instantiated ahead of time by nvcc from kernel_templates/scene_graph/scene_graph.cuh.
#include "scene_graph/scene_graph.cuh"
#define TUNE_TUNED_KERNELS
#include "scene_graph_tuned.hpp"
#define TUNE_BENCH_FINALIST_KERNELS
#include "scene_graph_nvrtc.hpp"

#include "bench.hpp"

void tune_bench::register_scene_graph() {
  namespace t = tune_tuned::scene_graph;
  namespace r = tune_bench_nvrtc::scene_graph;
  register_problem("scene_graph", t::kEntries, t::kWinnerKernels, t::kBaselineKernels, r::kSources, r::kRecords);
  register_interleave("scene_graph", t::kEntries, r::kRecords, r::kNvccKernels, r::kNvccKernelCount, r::kSources);
}
