// tune's NVRTC build of the entries, at the bench's start-up (nvrtc.hpp).
#include "nvrtc.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

#include <nvrtc.h>

namespace tune_bench {

void check(CUresult e, const char* what) {
  if (e == CUDA_SUCCESS) return;
  const char* name = nullptr;
  cuGetErrorName(e, &name);
  throw std::runtime_error(std::string(what) + ": " + (name ? name : "CUresult " + std::to_string(e)));
}

namespace {

void compile_one(RtcProgram& p) {
  const auto t0 = std::chrono::steady_clock::now();
  nvrtcProgram prog = nullptr;
  const auto fail = [&](nvrtcResult r, const char* what) { p.error = std::string(what) + ": " + nvrtcGetErrorString(r); };
  nvrtcResult r = nvrtcCreateProgram(&prog, p.sources.source, p.sources.name, p.sources.header_count,
                                     p.sources.header_sources, p.sources.header_names);
  if (r != NVRTC_SUCCESS) return fail(r, "nvrtcCreateProgram");
  for (const auto& e : p.name_expressions)
    if ((r = nvrtcAddNameExpression(prog, e.c_str())) != NVRTC_SUCCESS) {
      fail(r, "nvrtcAddNameExpression");
      nvrtcDestroyProgram(&prog);
      return;
    }
  std::vector<const char*> opts;
  for (const auto& o : p.options) opts.push_back(o.c_str());
  r = nvrtcCompileProgram(prog, static_cast<int>(opts.size()), opts.data());
  std::size_t size = 0;
  nvrtcGetProgramLogSize(prog, &size);
  p.log.assign(size, '\0');
  if (size) nvrtcGetProgramLog(prog, p.log.data());
  while (!p.log.empty() && (p.log.back() == '\0' || p.log.back() == '\n')) p.log.pop_back();
  if (r != NVRTC_SUCCESS) {
    fail(r, "nvrtcCompileProgram");
    p.error += "\n" + p.log;
  } else {
    nvrtcGetCUBINSize(prog, &size);
    p.cubin.resize(size);
    nvrtcGetCUBIN(prog, p.cubin.data());
    for (const auto& e : p.name_expressions) {
      const char* lowered = nullptr;
      if ((r = nvrtcGetLoweredName(prog, e.c_str(), &lowered)) != NVRTC_SUCCESS) {
        fail(r, "nvrtcGetLoweredName");
        break;
      }
      p.lowered_names.emplace_back(lowered);
    }
    if (p.cubin.empty() && p.error.empty()) p.error = "NVRTC produced no CUBIN";
  }
  nvrtcDestroyProgram(&prog);
  p.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

void nvrtc_compile(std::vector<RtcProgram*>& programs) {
  std::atomic<std::size_t> next{0};
  const unsigned n =
      std::max(1u, std::min<unsigned>(std::thread::hardware_concurrency(), static_cast<unsigned>(programs.size())));
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < n; ++t)
    threads.emplace_back([&] {
      for (std::size_t i; (i = next++) < programs.size();) {
        try {
          compile_one(*programs[i]);
        } catch (const std::exception& e) {
          programs[i]->error = e.what();
        }
      }
    });
  for (auto& t : threads) t.join();
}

namespace {

void load_module(const RtcProgram& p, std::vector<CUfunction>& functions) {
  CUmodule module = nullptr;
  TUNE_BENCH_CU(cuModuleLoadData(&module, p.cubin.data()));
  for (const auto& name : p.lowered_names) {
    CUfunction f = nullptr;
    TUNE_BENCH_CU(cuModuleGetFunction(&f, module, name.c_str()));
    functions.push_back(f);
  }
}

}  // namespace

void nvrtc_load(RtcProgram& p) {
  if (p.error.empty() && p.functions.empty()) load_module(p, p.functions);
}

void nvrtc_load_twin(RtcProgram& p) {
  if (p.error.empty() && p.twin_functions.empty()) load_module(p, p.twin_functions);
}

std::string nvrtc_version() {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  return "NVRTC " + std::to_string(major) + "." + std::to_string(minor);
}

}  // namespace tune_bench
