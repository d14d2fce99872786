// The C++ of `tune export torch`'s extension: launch_<problem>.cpp (the gated CUBINs' dispatch and
// launches, CUDA runtime only) and binding.cpp (the torch ops: checks, shapes, allocation, stream).
#include <algorithm>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "ship/export_torch_parts.hpp"
#include "ship/header_text.hpp"
#include "space/expr_cpp.hpp"
#include "tune/dtype.hpp"
#include "tune/errors.hpp"

namespace tune::torch_export {
namespace {

using header_text::c_string;
using header_text::identifier;

// tune_<problem>_launch: the entry's winner launched on a stream from its CUBIN, loaded once per
// process; the shared-memory opt-in set once per device and kernel.
std::string launch_function(const ExportedProblem& p) {
  return fmt::format(R"CPP(// The CUBIN an entry launches (cubins.inc), as embedded: the bytes the tune gated and timed.
const char* tune_{ns}_cubin(int entry, unsigned long long* bytes) {{
  *bytes = kEntryCode[entry].bytes;
  return reinterpret_cast<const char*>(kEntryCode[entry].cubin);
}}

// Launches entry's winner on `stream`. buffers: the problem's parameters, inputs, out, then
// scratch, as the header's Variant::buffers. Returns null, or the CUDA error's text.
const char* tune_{ns}_launch(int entry, void* const* buffers, cudaStream_t stream) {{
  const t::Variant& v = t::kEntries[entry].winner;
  const Loaded& code = loaded(entry);
  if (!code.error.empty()) return code.error.c_str();
  for (int l = 0; l < v.launch_count; ++l) {{
    const t::Launch& launch = v.launches[l];
    // A cudaKernel_t is taken as the function by cudaFuncSetAttribute and cudaLaunchKernel.
    const void* kernel = static_cast<const void*>(code.kernels[l]);
    void* args[t::kMaxArgs];
    for (int a = 0; a < launch.arg_count; ++a) args[a] = const_cast<void**>(&buffers[launch.args[a]]);
    cudaError_t e = cudaSuccess;
    // Over 48 KiB of dynamic shared memory needs the opt-in, set once per device and kernel.
    if (launch.dynamic_smem_bytes > 48u * 1024u) {{
      static unsigned char opted[64][t::kEntryCount][t::kMaxLaunches] = {{}};
      int device = 0;
      e = cudaGetDevice(&device);
      if (e == cudaSuccess && (device >= 64 || !opted[device][entry][l])) {{
        e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(launch.dynamic_smem_bytes));
        if (e == cudaSuccess && device < 64) opted[device][entry][l] = 1;
      }}
    }}
    if (e == cudaSuccess)
      e = cudaLaunchKernel(kernel, dim3(launch.grid[0], launch.grid[1], launch.grid[2]),
                           dim3(launch.block[0], launch.block[1], launch.block[2]), args, launch.dynamic_smem_bytes, stream);
    if (e != cudaSuccess) return cudaGetErrorString(e);
  }}
  return nullptr;
}}

}}  // extern "C"
)CPP",
                     fmt::arg("ns", p.ns));
}

// The launcher's loading of an entry's CUBIN: once per process, on its first launch.
std::string loader_source() {
  return R"CPP(// An entry's kernels by their lowered names, from its CUBIN loaded once per process on its first
// launch (cudaLibraryLoadData: into every device's context, thread-safe); or why they could not be.
struct Loaded {
  std::once_flag once;
  cudaKernel_t kernels[t::kMaxLaunches] = {};
  std::string error;
};

const Loaded& loaded(int entry) {
  static Loaded all[t::kEntryCount];
  Loaded& l = all[entry];
  std::call_once(l.once, [&] {
    cudaLibrary_t library = nullptr;
    cudaError_t e = cudaLibraryLoadData(&library, kEntryCode[entry].cubin, nullptr, nullptr, 0, nullptr, nullptr, 0);
    if (e != cudaSuccess) {
      l.error = std::string("loading the tuned CUBIN (cudaLibraryLoadData): ") + cudaGetErrorString(e);
      return;
    }
    for (int k = 0; k < t::kEntries[entry].winner.launch_count && e == cudaSuccess; ++k) {
      e = cudaLibraryGetKernel(&l.kernels[k], library, kEntryCode[entry].kernels[k]);
      if (e != cudaSuccess)
        l.error = std::string("cudaLibraryGetKernel(") + kEntryCode[entry].kernels[k] + "): " + cudaGetErrorString(e);
    }
    if (e != cudaSuccess) static_cast<void>(cudaLibraryUnload(library));
  });
  return l;
}
)CPP";
}

// The C++ of a tensor shape expression over the dims (long long locals named after them).
std::string dim_expression(const ExportedProblem& p, const std::string& text) {
  const auto resolve = [&](const std::string& name) -> std::optional<std::string> {
    if (std::find(p.dims.begin(), p.dims.end(), name) != p.dims.end())
      return "static_cast<double>(d_" + identifier(name) + ")";
    return std::nullopt;
  };
  try {
    return fmt::format("static_cast<long long>({})", space::expression_to_cpp(text, resolve));
  } catch (const std::invalid_argument& e) {
    throw InputError(fmt::format("problem {}: tensor shape {} cannot be written as C++: {}", p.name, text, e.what()));
  }
}

// The at::ScalarType of a tensor dtype: a dtype's own, or that of the tensor its variable is read from.
std::string scalar_of(const ExportedProblem& p, const std::string& dtype) {
  for (std::size_t k = 0; k < p.dtype_vars.size(); ++k)
    if (const auto& v = p.dtype_vars[k]; v.name == dtype)
      return p.is_given(v.name) ? fmt::format("scalar_type_of(dims[{}])", p.dims.size() + k)
                                : fmt::format("t[{}].scalar_type()", v.tensor);
  return std::string(dtype_torch_scalar(*parse_dtype(dtype)));
}

// Every tensor in its dtype: a fixed one ("x must be bfloat16, not float32"), a dtype variable's
// first tensor one of the variable's values, the others of that variable the same dtype.
std::string dtype_checks(const ExportedProblem& p, const std::string& op) {
  std::string s;
  for (std::size_t i = 0; i < p.tensors.size(); ++i) {
    const auto& x = p.tensors[i];
    const auto v = std::find_if(p.dtype_vars.begin(), p.dtype_vars.end(), [&](const auto& d) { return d.name == x.dtype; });
    if (v == p.dtype_vars.end()) {
      const auto t = parse_dtype(x.dtype);
      if (!t)
        throw InputError(
            fmt::format("problem {}: tensor {} has dtype {}, neither a dtype ({}) nor a dtype variable of its "
                        "results",
                        p.name, x.name, x.dtype, dtype_choices()));
      s += fmt::format("  TORCH_CHECK(t[{0}].scalar_type() == {1}, {2}, dtype_name(t[{0}].scalar_type()));\n", i,
                       dtype_torch_scalar(*t), c_string(fmt::format("{}: {} must be {}, not ", op, x.name, dtype_name(*t))));
    } else if (v->tensor == i) {
      std::vector<std::string> allowed, names;
      for (const DType d : v->values) {
        allowed.push_back(fmt::format("t[{}].scalar_type() == {}", i, dtype_torch_scalar(d)));
        names.push_back(std::string(dtype_name(d)));
      }
      if (allowed.empty()) continue;
      s += fmt::format("  TORCH_CHECK({}, {}, dtype_name(t[{}].scalar_type()), {});\n", fmt::join(allowed, " || "),
                       c_string(fmt::format("{}: {} is ", op, x.name)), i,
                       c_string(fmt::format("; its dtype {} takes {}", v->name, fmt::join(names, ", "))));
    } else {
      s += fmt::format(
          "  TORCH_CHECK(t[{0}].scalar_type() == t[{1}].scalar_type(), {2}, dtype_name(t[{1}].scalar_type()), {3}, "
          "dtype_name(t[{0}].scalar_type()));\n",
          i, v->tensor, c_string(fmt::format("{}: {} must be ", op, x.name)),
          c_string(fmt::format(" as {} is (both {}), not ", p.tensors[v->tensor].name, v->name)));
    }
  }
  return s;
}

// The given values (ExportedProblem::given) as locals, checked: a dim at least 1, a dtype variable's
// number one of its values.
std::string given_values(const ExportedProblem& p, const std::string& op) {
  std::string s;
  for (std::size_t k = 0; k < p.given.size(); ++k) {
    const std::string& name = p.given[k];
    const auto v = std::find_if(p.dtype_vars.begin(), p.dtype_vars.end(), [&](const auto& d) { return d.name == name; });
    if (v == p.dtype_vars.end()) {
      s += fmt::format("  const long long d_{} = given[{}];\n", identifier(name), k);
      s += fmt::format("  TORCH_CHECK(d_{0} >= 1, \"{1}: {2} must be at least 1, got \", d_{0});\n", identifier(name), op,
                       name);
      continue;
    }
    std::vector<std::string> allowed, names;
    for (const DType d : v->values) {
      allowed.push_back(fmt::format("g_{} == {}", identifier(name), static_cast<int>(d)));
      names.push_back(std::string(dtype_name(d)));
    }
    s += fmt::format("  const long long g_{} = given[{}];\n", identifier(name), k);
    if (!allowed.empty())
      s += fmt::format("  TORCH_CHECK({}, \"{}: {} is dtype number \", g_{}, \"; it takes {}\");\n",
                       fmt::join(allowed, " || "), op, name, identifier(name), fmt::join(names, ", "));
  }
  return s;
}

// {ns}_dims of binding.cpp: the dims of the problem from its tensors, every tensor's shape and dtype
// checked against them.
std::string dims_function(const ExportedProblem& p, const std::string& op) {
  std::string s;
  s += fmt::format("// The dims of problem {} from its tensors; every tensor's shape checked against them.\n", p.name);
  if (p.given.empty()) {
    s += fmt::format("std::vector<long long> {}_dims(const std::vector<at::Tensor>& t) {{\n", p.ns);
  } else {
    s += fmt::format("// {} no parameter or input tells: given (ModelNew passes them).\n", fmt::join(p.given, ", "));
    s += fmt::format(
        "std::vector<long long> {}_dims(const std::vector<at::Tensor>& t, const std::vector<int64_t>& given) {{\n", p.ns);
    s += fmt::format("  TORCH_CHECK(given.size() == {0}, \"{1}: expected {0} given values ({2}), got \", given.size());\n",
                     p.given.size(), op, fmt::join(p.given, ", "));
  }
  s += fmt::format("  check_tensors(\"{}\", t, k{}Tensors, {});\n", op, p.ns, p.tensors.size());
  s += given_values(p, op);
  for (const auto& d : p.dims) {
    if (p.is_given(d)) continue;
    bool found = false;  // a dim not given is some tensor's own (describe_dtypes gives the others)
    for (std::size_t i = 0; i < p.tensors.size() && !found; ++i)
      for (std::size_t a = 0; a < p.tensors[i].shape.size() && !found; ++a)
        if (p.tensors[i].shape[a] == d) {
          s += fmt::format("  const long long d_{} = t[{}].dim() > {} ? t[{}].size({}) : -1;\n", identifier(d), i, a, i, a);
          found = true;
        }
  }
  for (std::size_t i = 0; i < p.tensors.size(); ++i) {
    const auto& x = p.tensors[i];
    std::vector<std::string> expected, cond{fmt::format("t[{}].dim() == {}", i, x.shape.size())};
    for (std::size_t a = 0; a < x.shape.size(); ++a) {
      expected.push_back(dim_expression(p, x.shape[a]));
      cond.push_back(fmt::format("t[{}].size({}) == {}", i, a, expected.back()));
    }
    const std::string what = fmt::format("{}: {} must have shape [{}] = ", op, x.name, fmt::join(x.shape, ", "));
    s += fmt::format("  TORCH_CHECK({}, {}, at::IntArrayRef(std::vector<int64_t>{{{}}}), \", got \", t[{}].sizes());\n",
                     fmt::join(cond, " && "), c_string(what), fmt::join(expected, ", "), i);
  }
  s += dtype_checks(p, op);
  std::vector<std::string> dims;
  for (const auto& d : p.dims) dims.push_back("d_" + identifier(d));
  for (const auto& v : p.dtype_vars)
    dims.push_back(p.is_given(v.name) ? "g_" + identifier(v.name)
                                      : fmt::format("dtype_code(t[{}].scalar_type())", v.tensor));
  s += fmt::format("  return {{{}}};\n}}\n\n", fmt::join(dims, ", "));
  return s;
}

// The op of one problem in binding.cpp: checks, the shape from the tensors, dispatch, launch.
std::string op_source(const ExportedProblem& p, const std::string& package) {
  const std::string op = package + "::" + p.ns;
  std::string s;
  s += fmt::format(
      "extern \"C\" {{\nint tune_{0}_entry(const char*, int, int, long long, const long long*);\nconst char* tune_{0}_variant(int);\n"
      "int tune_{0}_buffer_count(int);\nlong long tune_{0}_buffer_elements(int, int);\n"
      "long long tune_{0}_buffer_bytes(int, int);\n"
      "const char* tune_{0}_launch(int, void* const*, cudaStream_t);\n}}\n\n",
      p.ns);
  std::vector<std::string> names;
  for (const auto& t : p.tensors) names.push_back(c_string(t.name));
  s += fmt::format("const char* const k{}Tensors[] = {{{}}};\n\n", p.ns, fmt::join(names, ", "));
  s += dims_function(p, op);

  std::vector<std::string> out_shape;
  for (const auto& e : p.output.shape) out_shape.push_back(dim_expression(p, e));
  s += fmt::format("// {}: the output, or None when no tuned entry covers this device and shape.\n", op);
  if (p.given.empty()) {
    s += fmt::format("c10::optional<at::Tensor> {}_op(std::vector<at::Tensor> t) {{\n", p.ns);
    s += fmt::format("  const std::vector<long long> dims = {}_dims(t);\n", p.ns);
  } else {
    s += fmt::format("c10::optional<at::Tensor> {}_op(std::vector<at::Tensor> t, std::vector<int64_t> given) {{\n", p.ns);
    s += fmt::format("  const std::vector<long long> dims = {}_dims(t, given);\n", p.ns);
  }
  for (std::size_t d = 0; d < p.dims.size(); ++d)
    s += fmt::format("  const long long d_{0} = dims[{1}];\n  static_cast<void>(d_{0});\n", identifier(p.dims[d]), d);
  s += "  const c10::cuda::CUDAGuard guard(t[0].device());\n  const DeviceKey& device = device_key(t[0].get_device());\n";
  s += fmt::format(
      "  const int entry = tune_{}_entry(device.name.c_str(), device.arch, device.sm_count, device.max_smem, dims.data());\n",
      p.ns);
  s += "  if (entry < 0) return c10::nullopt;\n";
  s += fmt::format("  at::Tensor out = at::empty({{{}}}, t[0].options().dtype({}));\n", fmt::join(out_shape, ", "),
                   scalar_of(p, p.output.dtype));
  s += "  std::vector<void*> buffers;\n  for (const at::Tensor& x : t) buffers.push_back(x.data_ptr());\n"
       "  buffers.push_back(out.data_ptr());\n";
  s += fmt::format("  const int count = tune_{}_buffer_count(entry);\n", p.ns);
  s += fmt::format(
      "  TORCH_CHECK(tune_{0}_buffer_elements(entry, {1}) == out.numel(), \"{2}: the tuned entry's output has \", "
      "tune_{0}_buffer_elements(entry, {1}), \" elements, not \", out.numel(), \"; re-export\");\n",
      p.ns, p.tensors.size(), op);
  s += "  std::vector<at::Tensor> scratch;\n";
  s += fmt::format(
      "  for (int b = static_cast<int>(buffers.size()); b < count; ++b) {{\n"
      "    scratch.push_back(at::empty({{tune_{}_buffer_bytes(entry, b)}}, t[0].options().dtype(at::kByte)));\n"
      "    buffers.push_back(scratch.back().data_ptr());\n  }}\n",
      p.ns);
  s += fmt::format(
      "  const char* error = tune_{}_launch(entry, buffers.data(), c10::cuda::getCurrentCUDAStream().stream());\n", p.ns);
  s += fmt::format("  TORCH_CHECK(error == nullptr, \"{}: the launch failed: \", error);\n  return out;\n}}\n\n", op);
  s += fmt::format(
      "// The tuned variant that would run for a device and dims, or \"\" for none.\n"
      "std::string {0}_variant(std::string device, int64_t arch, int64_t sm_count, int64_t max_smem, std::vector<int64_t> dims) {{\n"
      "  TORCH_CHECK(dims.size() == {1}, \"{2}_variant: expected {1} dims (the dims, then the dtype variables' numbers)\");\n"
      "  const std::vector<long long> d(dims.begin(), dims.end());\n"
      "  const int entry = tune_{0}_entry(device.c_str(), static_cast<int>(arch), static_cast<int>(sm_count), max_smem, d.data());\n"
      "  return entry < 0 ? std::string() : std::string(tune_{0}_variant(entry));\n}}\n\n",
      p.ns, p.dims.size() + p.dtype_vars.size(), op);
  return s;
}

// dtype_name(at::ScalarType): PyTorch's name as problem.json spells it; dtype_code: tune's number of
// the dtype (the header's DType), -1 for a type no problem takes.
std::string dtype_helpers(bool scalar_types) {
  std::string names, codes, scalars;
  for (const DType t : all_dtypes()) {
    names += fmt::format("    case {}: return \"{}\";\n", dtype_torch_scalar(t), dtype_name(t));
    codes += fmt::format("    case {}: return {};\n", dtype_torch_scalar(t), static_cast<int>(t));
    scalars += fmt::format("    case {}: return {};\n", static_cast<int>(t), dtype_torch_scalar(t));
  }
  std::string s = "const char* dtype_name(at::ScalarType s) {\n  switch (s) {\n" + names +
                  "    default: return c10::toString(s);\n  }\n}\n\nint dtype_code(at::ScalarType s) {\n  switch (s) {\n" +
                  codes + "    default: return -1;\n  }\n}\n";
  // scalar_type_of: the at::ScalarType of tune's number of a dtype (a given dtype variable's).
  if (scalar_types)
    s +=
        "\nat::ScalarType scalar_type_of(long long code) {\n  switch (code) {\n" + scalars +
        "    default: break;\n  }\n  TORCH_CHECK(false, \"no dtype has number \", code);\n  return at::ScalarType::Undefined;\n}\n";
  return s;
}

}  // namespace

// launch_<problem>.cpp: the entry for a device and shape, and the launches of the gated CUBINs, with
// the CUDA runtime only.
std::string launch_source(const ExportedProblem& p) {
  std::vector<std::string> shape_args;
  for (std::size_t d = 0; d < p.dims.size(); ++d) shape_args.push_back(fmt::format("dims[{}]", d));
  // A dtype variable's value follows the dims, as tune numbers the dtype (the header's DType).
  for (std::size_t v = 0; v < p.dtype_vars.size(); ++v)
    shape_args.push_back(fmt::format("static_cast<t::DType>(dims[{}])", p.dims.size() + v));
  std::vector<std::string> sizes;
  for (const DType t : all_dtypes())
    sizes.push_back(fmt::format("    case {}: return {};", static_cast<int>(t), dtype_size(t)));
  return fmt::format(
             R"CPP(// Generated by `tune export torch` (tune {version}): the tuned kernels of problem {name} as the CUBIN
// bytes tune compiled, gated and timed (cubins.inc), dispatched and launched with the CUDA runtime's
// library API (CUDA 12.0 or later): no nvcc, no kernel templates. binding.cpp holds the torch side.
// Do not edit.
#include <cuda_runtime.h>

#include <mutex>
#include <string>

#include "tuned.hpp"

namespace {{
namespace t = tune_tuned::{header_ns};

#include "cubins.inc"

{loader}
// Bytes per element of a dtype by tune's number; a header without dtypes holds float32 buffers.
constexpr long long bytes_of(int dtype) {{
  switch (dtype) {{
{sizes}
  }}
  return 0;
}}
template <class B>
constexpr auto element_bytes(const B& b, int) -> decltype(static_cast<int>(b.dtype), 0LL) {{ return bytes_of(static_cast<int>(b.dtype)); }}
template <class B>
constexpr long long element_bytes(const B&, long) {{ return 4; }}
}}  // namespace

extern "C" {{

// The entry whose winner this file holds for that device and shape: the exact one, else the
// shape's on another device of the arch; -1 for none (the kernels bake the shape in).
int tune_{ns}_entry(const char* device_name, int arch, int sm_count, long long max_smem, const long long* dims) {{
  const t::Selection s = t::select(t::Device{{device_name, arch, sm_count, max_smem}}, t::Shape{{{shape}}});
  return s.match == t::Match::kExact || s.match == t::Match::kSameArch ? s.index : -1;
}}

const char* tune_{ns}_variant(int entry) {{ return t::kEntries[entry].winner.name; }}
int tune_{ns}_buffer_count(int entry) {{ return t::kEntries[entry].winner.buffer_count; }}
long long tune_{ns}_buffer_elements(int entry, int buffer) {{ return t::kEntries[entry].winner.buffers[buffer].elements; }}
long long tune_{ns}_buffer_bytes(int entry, int buffer) {{
  const auto& b = t::kEntries[entry].winner.buffers[buffer];
  return b.elements * element_bytes(b, 0);
}}

)CPP",
             fmt::arg("version", tool_version()), fmt::arg("name", p.name), fmt::arg("loader", loader_source()),
             fmt::arg("ns", p.ns), fmt::arg("header_ns", p.header_ns), fmt::arg("shape", fmt::join(shape_args, ", ")),
             fmt::arg("sizes", fmt::join(sizes, "\n"))) +
         launch_function(p);
}

std::string binding_source(const std::vector<ExportedProblem>& problems, const std::string& package) {
  const bool given_dtypes = std::any_of(problems.begin(), problems.end(), [](const ExportedProblem& p) {
    return std::any_of(p.dtype_vars.begin(), p.dtype_vars.end(), [&](const auto& v) { return p.is_given(v.name); });
  });
  std::string s = fmt::format(R"CPP(// Generated by `tune export torch` (tune {}): the {} ops. Do not edit.
// Each op takes the problem's parameters then its inputs (each in its dtype, CUDA, contiguous, 16-byte
// aligned, one device), reads the shape from them, and launches the tuned kernels on the current
// stream; it returns None when no tuned entry covers the device and shape (ModelNew then runs the
// reference module).
#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#include <torch/library.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace {{

// What select() matches a device on, read once per device.
struct DeviceKey {{
  std::string name;
  int arch;
  int sm_count;
  long long max_smem;  // sharedMemPerBlockOptin: select() checks a winner's shared memory against it
}};

const DeviceKey& device_key(int index) {{
  static std::mutex mutex;
  static std::map<int, DeviceKey> cache;
  const std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(index);
  if (it == cache.end()) {{
    cudaDeviceProp p{{}};
    const cudaError_t e = cudaGetDeviceProperties(&p, index);
    TORCH_CHECK(e == cudaSuccess, "cudaGetDeviceProperties(", index, "): ", cudaGetErrorString(e));
    it = cache.emplace(index, DeviceKey{{p.name, p.major * 10 + p.minor, p.multiProcessorCount,
                                                   static_cast<long long>(p.sharedMemPerBlockOptin)}}).first;
  }}
  return it->second;
}}

{dtype_helpers}
void check_tensors(const char* op, const std::vector<at::Tensor>& t, const char* const* names, std::size_t count) {{
  TORCH_CHECK(t.size() == count, op, ": expected ", count, " tensors (the parameters, then the inputs), got ", t.size());
  for (std::size_t i = 0; i < t.size(); ++i) {{
    TORCH_CHECK(t[i].is_cuda(), op, ": ", names[i], " must be a CUDA tensor, not on ", t[i].device());
    TORCH_CHECK(t[i].device() == t[0].device(), op, ": ", names[i], " is on ", t[i].device(), " but ", names[0], " on ",
                t[0].device(), "; put them on one device");
    TORCH_CHECK(t[i].is_contiguous(), op, ": ", names[i], " must be contiguous; pass .contiguous()");
    TORCH_CHECK(reinterpret_cast<std::uintptr_t>(t[i].data_ptr()) % 16 == 0, op, ": ", names[i],
                " must be 16-byte aligned (a view at an offset is not); pass .clone()");
  }}
}}

)CPP",
                              tool_version(), package, fmt::arg("dtype_helpers", dtype_helpers(given_dtypes)));
  for (const auto& p : problems) s += op_source(p, package);
  s += "}  // namespace\n\n";
  s += fmt::format("TORCH_LIBRARY({}, m) {{\n", package);
  for (const auto& p : problems) {
    s += fmt::format("  m.def(\"{}(Tensor[] tensors{}) -> Tensor?\");\n", p.ns, p.given.empty() ? "" : ", int[] given");
    s += fmt::format(
        "  m.def(\"{0}_variant(str device, int arch, int sm_count, int max_smem, int[] dims) -> str\", &{0}_variant);\n",
        p.ns);
  }
  s += "}\n\n";
  s += fmt::format("TORCH_LIBRARY_IMPL({}, CUDA, m) {{\n", package);
  for (const auto& p : problems) s += fmt::format("  m.impl(\"{0}\", &{0}_op);\n", p.ns);
  s += "}\n";
  return s;
}

}  // namespace tune::torch_export
