#pragma once
// tune's build of an instantiation, in the bench: the kernel template compiled by NVRTC with the
// options the results file records (context.compile_options, what tune measured with), the
// CUBIN loaded with the driver API (cuModuleLoadData) into the runtime's primary context and
// each kernel found by its lowered name, as tuner/src/compile/nvrtc.cpp and
// tuner/src/measure/runner.cpp do. One NVRTC program per variant, its launches' name expressions
// added to it, as tune compiles a variant.
#include <string>
#include <vector>

#include <cuda.h>

namespace tune_bench {

void check(CUresult e, const char* what);
#define TUNE_BENCH_CU(call) ::tune_bench::check((call), #call)

// A kernel template as tune hands it to NVRTC (Space::load_sources): the program's name and text,
// and every header of its folder and of the problem's include_dirs by include name
// (<problem>_nvrtc.hpp, embed_nvrtc.py).
struct RtcSources {
  const char* name = nullptr;
  const char* source = nullptr;
  int header_count = 0;
  const char* const* header_names = nullptr;
  const char* const* header_sources = nullptr;
};

struct RtcProgram {
  // In
  RtcSources sources;
  std::vector<std::string> name_expressions;
  std::vector<std::string> options;
  // Out (nvrtc_compile)
  std::vector<char> cubin;
  std::vector<std::string> lowered_names;
  std::string log;
  std::string error;  // empty when it compiled
  double seconds = 0;
  // Out (nvrtc_load): one function per name expression; the module is never unloaded.
  std::vector<CUfunction> functions;
  // Out (nvrtc_load_twin): the same CUBIN loaded again as a module of its own (TUNE_BENCH_AA).
  std::vector<CUfunction> twin_functions;
};

// Compiles every program, on as many threads as the machine has (NVRTC programs are independent).
void nvrtc_compile(std::vector<RtcProgram*>& programs);
// Loads a compiled program into the current context (call from the thread that launches).
void nvrtc_load(RtcProgram& p);
// Loads the same CUBIN a second time, as another module: the A/A comparison of TUNE_BENCH_AA.
void nvrtc_load_twin(RtcProgram& p);
// "NVRTC <major>.<minor>".
std::string nvrtc_version();

}  // namespace tune_bench
