// tune_bench: the tuned kernels of the merged headers against their baselines, on this GPU.
#include "bench.hpp"

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  if (const int rc = tune_bench::open_gpu(); rc != 0) return rc;
  tune_bench::register_contact();
  tune_bench::register_scene_graph();
  tune_bench::compile_programs();
  benchmark::RunSpecifiedBenchmarks();
  tune_bench::print_pair_table();
  benchmark::Shutdown();
  return 0;
}
