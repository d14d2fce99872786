#include <nvrtc.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <regex>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "tune/compile.hpp"
#include "tune/errors.hpp"

namespace tune {
// cmake/embed_files.cmake's: tune's own files, built in.
std::string_view embedded_file(std::string_view name);
}  // namespace tune

namespace tune {
namespace {

class NvrtcError : public std::runtime_error {
 public:
  NvrtcError(nvrtcResult code, const char* expr, const char* file, int line)
      : std::runtime_error(fmt::format("{} failed with {} at {}:{}", expr, nvrtcGetErrorString(code), file, line)),
        code_(code) {}
  [[nodiscard]] nvrtcResult code() const { return code_; }

 private:
  nvrtcResult code_;
};

#define TUNE_NVRTC(call)                                                                                      \
  do {                                                                                                        \
    const nvrtcResult tune_nvrtc_result_ = (call);                                                            \
    if (tune_nvrtc_result_ != NVRTC_SUCCESS) throw NvrtcError(tune_nvrtc_result_, #call, __FILE__, __LINE__); \
  } while (false)

// Move-only owner of an NVRTC program.
class Program {
 public:
  // `headers`: include name and text of every header the source may include.
  Program(const std::string& source, const std::string& name,
          const std::vector<std::pair<std::string, std::string>>& headers) {
    std::vector<const char*> texts, names;
    for (const auto& [n, t] : headers) {
      names.push_back(n.c_str());
      texts.push_back(t.c_str());
    }
    TUNE_NVRTC(nvrtcCreateProgram(&prog_, source.c_str(), name.c_str(), static_cast<int>(headers.size()),
                                  headers.empty() ? nullptr : texts.data(), headers.empty() ? nullptr : names.data()));
  }
  Program(Program&& o) noexcept : prog_(std::exchange(o.prog_, nullptr)) {}
  Program& operator=(Program&&) = delete;
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;
  ~Program() {
    if (prog_ != nullptr) (void)nvrtcDestroyProgram(&prog_);
  }
  [[nodiscard]] nvrtcProgram get() const { return prog_; }

 private:
  nvrtcProgram prog_ = nullptr;
};

}  // namespace

std::string arch_name(int compute_capability) { return fmt::format("sm_{}", compute_capability); }

std::vector<std::string> default_options(int compute_capability) {
  // -lineinfo: line tables only (the code is the same), so compute-sanitizer reports name lines.
  return {"-arch=" + arch_name(compute_capability), "-std=c++17", "--ptxas-options=-v", "-lineinfo"};
}

std::vector<int> supported_archs() {
  int count = 0;
  TUNE_NVRTC(nvrtcGetNumSupportedArchs(&count));
  std::vector<int> archs(static_cast<std::size_t>(std::max(count, 0)));
  if (!archs.empty()) TUNE_NVRTC(nvrtcGetSupportedArchs(archs.data()));
  std::sort(archs.begin(), archs.end());
  return archs;
}

void check_arch(int compute_capability, const std::string& what) {
  const std::vector<int> archs = supported_archs();
  if (std::find(archs.begin(), archs.end(), compute_capability) != archs.end()) return;
  throw InputError(fmt::format("{}: NVRTC {} cannot compile for compute capability {}; it supports {}", what,
                               nvrtc_version(), compute_capability, fmt::join(archs, ", ")));
}

std::string nvrtc_version() {
  int major = 0, minor = 0;
  TUNE_NVRTC(nvrtcVersion(&major, &minor));
  return fmt::format("{}.{}", major, minor);
}

std::map<std::string, Resources> parse_ptxas_report(std::string_view log) {
  std::map<std::string, Resources> out;
  static const std::regex entry(R"(Compiling entry function '([^']+)')");
  static const std::regex props(R"(Function properties for (\S+))");
  static const std::regex frame(R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex used(R"(Used (\d+) registers)");
  static const std::regex barriers(R"(used (\d+) barriers)");
  static const std::regex smem(R"((\d+) bytes smem)");
  std::string current;
  std::string text(log);
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    std::smatch m;
    if (std::regex_search(line, m, entry) || std::regex_search(line, m, props)) {
      current = m[1];
      out.try_emplace(current);
      continue;
    }
    if (current.empty()) continue;
    Resources& r = out[current];
    if (std::regex_search(line, m, frame)) {
      r.stack_frame_bytes = std::stoi(m[1]);
      r.spill_store_bytes = std::stoi(m[2]);
      r.spill_load_bytes = std::stoi(m[3]);
    }
    if (std::regex_search(line, m, used)) r.registers = std::stoi(m[1]);
    if (std::regex_search(line, m, barriers)) r.barriers = std::stoi(m[1]);
    if (line.find("Used") != std::string::npos && std::regex_search(line, m, smem)) r.static_smem_bytes = std::stoi(m[1]);
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> with_cuda_headers(
    const std::string& source, std::vector<std::pair<std::string, std::string>> headers) {
  static const char* const kNames[] = {"cuda_fp16.h", "cuda_fp16.hpp", "cuda_bf16.h", "cuda_bf16.hpp"};
  auto mentions = [](const std::string& text) {
    return text.find("cuda_bf16.h") != std::string::npos || text.find("cuda_fp16.h") != std::string::npos;
  };
  bool needed = mentions(source);
  for (const auto& [name, text] : headers) needed = needed || mentions(text);
  if (!needed) return headers;
  for (const char* name : kNames)
    if (std::none_of(headers.begin(), headers.end(), [&](const auto& h) { return h.first == name; }))
      headers.emplace_back(name, std::string(embedded_file(name)));
  return headers;
}

CompileResult compile(const CompileRequest& request) {
  const auto start = std::chrono::steady_clock::now();
  CompileResult out;
  Program prog(request.source, request.source_name, request.headers);
  for (const auto& e : request.name_expressions) TUNE_NVRTC(nvrtcAddNameExpression(prog.get(), e.c_str()));
  std::vector<const char*> opts;
  for (const auto& o : request.options) opts.push_back(o.c_str());
  // No search directory, not even the working directory: NVRTC reads only the headers it is
  // given (and its own), so the cache key and the run's identity cover everything it compiles.
  opts.push_back("-no-source-include");
  const nvrtcResult r = nvrtcCompileProgram(prog.get(), static_cast<int>(opts.size()), opts.data());
  std::size_t log_size = 0;
  TUNE_NVRTC(nvrtcGetProgramLogSize(prog.get(), &log_size));
  out.log.resize(log_size);
  TUNE_NVRTC(nvrtcGetProgramLog(prog.get(), out.log.data()));
  while (!out.log.empty() && (out.log.back() == '\0' || out.log.back() == '\n')) out.log.pop_back();
  if (r == NVRTC_SUCCESS) {
    std::size_t size = 0;
    TUNE_NVRTC(nvrtcGetCUBINSize(prog.get(), &size));
    out.cubin.resize(size);
    TUNE_NVRTC(nvrtcGetCUBIN(prog.get(), out.cubin.data()));
    for (const auto& e : request.name_expressions) {
      const char* lowered = nullptr;
      TUNE_NVRTC(nvrtcGetLoweredName(prog.get(), e.c_str(), &lowered));
      // NVRTC succeeds without a name when the text ended early (a 0xFF byte reads as its end).
      if (lowered == nullptr) {
        out.log += fmt::format("{}NVRTC compiled the program but gave no kernel for '{}' (did the source end early?)",
                               out.log.empty() ? "" : "\n", e);
        out.cubin.clear();
        break;
      }
      out.lowered_names.emplace_back(lowered);
    }
    out.resources = parse_ptxas_report(out.log);
    out.ok = !out.cubin.empty() && out.lowered_names.size() == request.name_expressions.size();
  } else if (r != NVRTC_ERROR_COMPILATION) {
    throw NvrtcError(r, "nvrtcCompileProgram", __FILE__, __LINE__);
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace tune
