// Kernel parameter types from lowered names (compile/kernel_params.hpp).
#include "compile/kernel_params.hpp"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>
#include <optional>
#include <regex>

#include <fmt/format.h>

namespace tune {

std::vector<std::string> kernel_parameter_types(const std::string& lowered_name) {
  int status = 0;
  const std::unique_ptr<char, decltype(&std::free)> text(abi::__cxa_demangle(lowered_name.c_str(), nullptr, nullptr,
                                                                             &status),
                                                         &std::free);
  if (status != 0 || !text) return {};
  // "void k<64, (bool)1>(float const*, __half*)": the parameter list is the last top-level (...).
  const std::string s(text.get());
  if (s.empty() || s.back() != ')') return {};
  int depth = 0;
  std::size_t open = std::string::npos;
  for (std::size_t i = s.size(); i-- > 0;) {
    depth += s[i] == ')' ? 1 : s[i] == '(' ? -1 : 0;
    if (depth == 0) {
      open = i;
      break;
    }
  }
  if (open == std::string::npos) return {};
  std::vector<std::string> out;
  std::string item;
  depth = 0;
  for (std::size_t i = open + 1; i + 1 < s.size(); ++i) {
    const char c = s[i];
    depth += (c == '<' || c == '(') ? 1 : (c == '>' || c == ')') ? -1 : 0;
    if (c == ',' && depth == 0) {
      out.push_back(item);
      item.clear();
    } else if (!(item.empty() && c == ' ')) {
      item += c;
    }
  }
  if (!item.empty()) out.push_back(item);
  return out;
}

namespace {

// The dtype a floating pointee type holds, nullopt for any other type (integers, char, void, structs).
std::optional<DType> floating_pointee(const std::string& type) {
  static const std::regex pointer(R"(^(?:const\s+)?(float|double|__half|__nv_bfloat16)(\d?)(?:\s+const)?\s*\*$)");
  std::smatch m;
  if (!std::regex_match(type, m, pointer)) return std::nullopt;
  const std::string base = m[1];
  if (base == "float") return DType::kFloat32;
  if (base == "double") return DType::kFloat64;
  if (base == "__half") return DType::kFloat16;
  return DType::kBFloat16;
}

// The size of a scalar integer pointee wider than a byte (short, int, long, long long, signed or
// unsigned), nullopt for any other type: char types and void are byte access, and vector types (int4,
// longlong2) are the wide loads of raw access.
std::optional<int> integer_pointee_bytes(const std::string& type) {
  static const std::regex pointer(
      R"(^(?:const\s+)?(?:unsigned\s+|signed\s+)?(short|int|long long|long)(?:\s+int)?(?:\s+const)?\s*\*$)");
  std::smatch m;
  if (!std::regex_match(type, m, pointer)) return std::nullopt;
  const std::string base = m[1];
  return base == "short" ? 2 : base == "int" ? 4 : 8;  // NVRTC's device ABI is LP64
}

}  // namespace

std::string parameter_mismatch(const std::string& type, DType dtype) {
  // An integer of another width than the tensor's elements (int* for an int64 output, long long*
  // for a float32 one) strides the buffer wrongly: half the elements, or past its end.
  if (const std::optional<int> bytes = integer_pointee_bytes(type);
      bytes && static_cast<std::size_t>(*bytes) != dtype_size(dtype))
    return fmt::format("its type {} reads {}-byte integers, the tensor's {} elements are {} bytes", type, *bytes,
                       dtype_name(dtype), dtype_size(dtype));
  const std::optional<DType> holds = floating_pointee(type);
  if (!holds || *holds == dtype) return {};
  return fmt::format("a {} parameter reads a {} tensor as {} numbers", type, dtype_name(dtype), dtype_name(*holds));
}

}  // namespace tune
