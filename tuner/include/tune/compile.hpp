#pragma once
// NVRTC: source + name expressions + options + arch -> CUBIN, log and ptxas resources.
// Needs no GPU. A compile failure is a result; only an API misuse throws.
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace tune {

// One kernel's resources from the ptxas report (-1 where the report did not say).
struct Resources {
  int registers = -1;
  int spill_store_bytes = 0;
  int spill_load_bytes = 0;
  int stack_frame_bytes = 0;
  int static_smem_bytes = 0;
  int barriers = 0;
  // "ptxas": the compile's report. "driver": cuFuncGetAttribute after loading, when the report
  // lacked the kernel (registers, static shared memory, local memory as the stack frame; no spills).
  std::string source = "ptxas";
};

struct CompileRequest {
  std::string source;
  std::string source_name;                                   // shown in the log, e.g. "contact.cuh"
  std::vector<std::string> name_expressions;                 // e.g. "contact_kernel<4,64,...>"
  std::vector<std::string> options;                          // one option per entry, never space-joined
  std::vector<std::pair<std::string, std::string>> headers;  // include name and text of each header
};

// NVRTC of CUDA 13 has no <cuda_bf16.h> / <cuda_fp16.h> of its own: `headers` with the toolkit's
// cuda_bf16.h, cuda_bf16.hpp, cuda_fp16.h and cuda_fp16.hpp added (embedded at tune's build, so part of
// the compile request and its cache key) when `source` or one of `headers` includes either and no
// header of the folder has the name already. Unchanged otherwise (every other kernel keeps its key).
[[nodiscard]] std::vector<std::pair<std::string, std::string>> with_cuda_headers(
    const std::string& source, std::vector<std::pair<std::string, std::string>> headers);

struct CompileResult {
  bool ok = false;
  std::vector<char> cubin;
  std::string log;
  std::vector<std::string> lowered_names;      // in name_expressions order
  std::map<std::string, Resources> resources;  // by lowered (mangled) name
  double seconds = 0;
};

// "sm_90" for 90.
std::string arch_name(int compute_capability);
// The options every variant is compiled with: straight to CUBIN for the arch, ptxas report on.
std::vector<std::string> default_options(int compute_capability);
CompileResult compile(const CompileRequest& request);
// "13.0".
std::string nvrtc_version();
// The compute capabilities this NVRTC compiles for (nvrtcGetSupportedArchs), ascending: 75, 80, ...
std::vector<int> supported_archs();
// Throws InputError ("WHAT: NVRTC 13.0 cannot compile for compute capability 999; it supports 75,
// 80, ...") unless NVRTC compiles for it. `what` says where the arch came from ("--arch 999").
void check_arch(int compute_capability, const std::string& what);
// Parses the ptxas lines of an NVRTC log; exposed for tests.
std::map<std::string, Resources> parse_ptxas_report(std::string_view log);

// The process-wide limit on concurrent NVRTC compiles. Every run's compile threads take a slot
// around each compile (a cache hit takes none), so runs on several devices at once share the
// cores: together they compile at most `limit` variants at a time, and one run's compile-bound
// phase uses every slot while another run measures.
class CompileSlots {
 public:
  // The process's slots.
  static CompileSlots& shared();
  // Raises the limit to at least n (runs of one process ask for the same --jobs).
  void ensure(int n);
  [[nodiscard]] int limit() const;
  [[nodiscard]] int in_use() const;
  // A held slot; released when destroyed.
  class Slot {
   public:
    explicit Slot(CompileSlots& slots);
    ~Slot();
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;

   private:
    CompileSlots& slots_;
  };

 private:
  mutable std::mutex mutex_;
  std::condition_variable freed_;
  int limit_ = 1;
  int in_use_ = 0;
};

}  // namespace tune
