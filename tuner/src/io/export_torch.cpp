// `tune export torch`: results of record as a buildable PyTorch extension. One op per problem
// (TORCH_LIBRARY), dispatching on (device, shape) to the tuned instantiations compiled by nvcc, a
// drop-in ModelNew per problem built from the user's Model instance, and the build files
// (setup.py for `pip install`, torch.utils.cpp_extension.load for a JIT build).
//
// Layout of the output folder:
//   setup.py, pyproject.toml, README.md
//   <package>/__init__.py      load(): the built extension, else a JIT build of csrc/
//   <package>/_build.py        sources and nvcc flags (read by setup.py and load())
//   <package>/<problem>.py     ModelNew, PARAMETERS, INPUTS, TUNED
//   <package>/csrc/binding.cpp the ops: checks, shapes, allocation, the current stream (torch)
//   <package>/csrc/<problem>/  tuned.hpp (the merged header), kernels/ (the template files),
//                              launch_<problem>.cu (dispatch and launches, no torch; a name of
//                              its own, since torch.utils.cpp_extension.load names objects by
//                              the sources' file names)
#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <set>

#include <fmt/format.h>

#include "io/header_text.hpp"
#include "io/json_file.hpp"
#include "space/expr_cpp.hpp"
#include "space/sources.hpp"
#include "tune/dtype.hpp"
#include "tune/errors.hpp"
#include "tune/io.hpp"
#include "tune/problem.hpp"
#include "tune/problem_space.hpp"

namespace tune {
namespace {

using header_text::c_string;
using header_text::identifier;

// What the export needs of one problem.
struct ExportedProblem {
  std::string name, ns;  // the problem's name; its Python module and op (and C symbols)
  std::string header_ns;  // its namespace in the merged header
  const Problem* problem = nullptr;
  std::vector<NamedResult> results;
  std::vector<std::string> dims;
  struct Tensor {
    std::string name;
    std::vector<std::string> shape;  // expressions of the dims
    std::string dtype;               // a dtype name, or the name of a dtype variable
  };
  std::vector<Tensor> tensors;  // parameters, then inputs (the op's argument order)
  std::size_t parameter_count = 0;
  Tensor output;
  struct DTypeVariable {
    std::string name;
    std::vector<DType> values;
    std::size_t tensor = 0;  // the first of `tensors` of that dtype: the op reads the value from it
  };
  std::vector<DTypeVariable> dtype_vars;  // in the results' Shape order (the header's Shape fields)
};

// The nvcc flags of the tuned kernels: as bench/ builds them for the arch. PyTorch's extension
// build defines __CUDA_NO_HALF_OPERATORS__, __CUDA_NO_HALF_CONVERSIONS__,
// __CUDA_NO_BFLOAT16_CONVERSIONS__ and __CUDA_NO_HALF2_OPERATORS__ before these flags; a kernel
// tuned through NVRTC had the conversions and operators of cuda_fp16.h and cuda_bf16.h, so they are
// undefined again here (as FlashAttention's build does): the same source means the same code.
std::vector<std::string> nvcc_flags(int arch) {
  return {"-O3",
          fmt::format("-gencode=arch=compute_{0},code=sm_{0}", arch),
          "-lineinfo",
          "-U__CUDA_NO_HALF_OPERATORS__",
          "-U__CUDA_NO_HALF_CONVERSIONS__",
          "-U__CUDA_NO_BFLOAT16_CONVERSIONS__",
          "-U__CUDA_NO_HALF2_OPERATORS__"};
}

std::string python_list(const std::vector<std::string>& items) {
  std::vector<std::string> quoted;
  for (const auto& s : items) quoted.push_back(nlohmann::json(s).dump());
  return fmt::format("[{}]", fmt::join(quoted, ", "));
}

// The files of an export, by path relative to its folder, made in memory before anything is written.
using ExportFiles = std::vector<std::pair<std::filesystem::path, std::string>>;

// The list of what an export wrote, in its folder: a later export there removes those files first.
constexpr const char* kManifest = ".tune-export.json";

[[noreturn]] void cannot_write(const std::filesystem::path& out, const std::string& why) {
  throw InputError(fmt::format("-o {}: {}; pass -o a folder you can write (it is created when new)", out.string(), why));
}

// The files an earlier export into `out` wrote, relative to it, from its manifest; only paths inside.
std::vector<std::filesystem::path> earlier_export(const std::filesystem::path& out) {
  const auto manifest = json_file::read(out / kManifest);
  const std::string where = (out / kManifest).string();
  if (!manifest.is_object() || manifest.value("kind", "") != "tune.export" || !manifest.contains("files") ||
      !manifest.at("files").is_array())
    throw InputError(fmt::format("{}: not the list tune export writes; remove the folder, or pass another -o", where));
  std::vector<std::filesystem::path> files;
  for (const auto& f : manifest.at("files")) {
    const std::filesystem::path rel = f.is_string() ? f.get<std::string>() : "";
    const auto normal = rel.lexically_normal();
    if (rel.empty() || rel.is_absolute() || normal.begin() == normal.end() || *normal.begin() == "..")
      throw InputError(fmt::format("{}: lists {}, not a file of the export; remove the folder, or pass another -o", where,
                                   json_file::brief(f)));
    files.push_back(normal);
  }
  return files;
}

// `out` made ready for an export: created when new; when it holds an earlier export, the files that
// one wrote removed (a problem it had and this one has not would stay importable); any other
// non-empty folder is refused (issue 34, #26).
void prepare_out(const std::filesystem::path& out) {
  std::error_code ec;
  const auto status = std::filesystem::status(out, ec);
  if (std::filesystem::exists(status) && !std::filesystem::is_directory(status)) cannot_write(out, "not a folder");
  if (!std::filesystem::exists(status)) {
    std::filesystem::create_directories(out, ec);
    if (ec) cannot_write(out, fmt::format("cannot create the folder ({})", ec.message()));
    return;
  }
  if (std::filesystem::is_empty(out, ec)) return;
  if (!std::filesystem::exists(out / kManifest, ec))
    throw InputError(fmt::format("-o {}: a folder that holds other files than an earlier tune export; pass a new or empty "
                                 "folder",
                                 out.string()));
  std::set<std::filesystem::path> dirs;
  for (const auto& f : earlier_export(out)) {
    std::filesystem::remove(out / f, ec);
    if (ec) cannot_write(out, fmt::format("cannot remove {} of the earlier export ({})", f.string(), ec.message()));
    for (auto d = f.parent_path(); !d.empty(); d = d.parent_path()) dirs.insert(out / d);
  }
  for (auto it = dirs.rbegin(); it != dirs.rend(); ++it)  // deepest first; a folder with other files stays
    if (std::filesystem::is_empty(*it, ec)) std::filesystem::remove(*it, ec);
}

// The files written into `out`, then the manifest that lists them. Returns their paths.
std::vector<std::filesystem::path> write_export(const std::filesystem::path& out, const ExportFiles& files) {
  prepare_out(out);
  std::vector<std::filesystem::path> written;
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const auto& [rel, text] : files) {
    std::error_code ec;
    std::filesystem::create_directories((out / rel).parent_path(), ec);
    if (ec) cannot_write(out, fmt::format("cannot create {} ({})", (out / rel).parent_path().string(), ec.message()));
    write_file_atomic(out / rel, text);
    written.push_back(out / rel);
    list.push_back(rel.generic_string());
  }
  write_file_atomic(out / kManifest, nlohmann::ordered_json{{"kind", "tune.export"}, {"files", list}}.dump(1) + "\n");
  return written;
}

// --name: a Python identifier that is no keyword, and no module or builtin a user's code or the
// package's own imports would then get instead (torch, json, list).
void check_package_name(const std::string& package) {
  if (package.empty() || identifier(package) != package)
    throw InputError(fmt::format("--name {}: not a Python identifier, or a Python or C++ keyword; use letters, digits and _, "
                                 "not a digit first, as in tune_ops",
                                 package));
  static const std::set<std::string> kShadowed = {
      "torch", "numpy", "setuptools", "pkg_resources", "json", "glob", "os", "sys", "warnings", "runpy", "math",
      "re", "io", "abc", "types", "typing", "copy", "time", "random", "string", "collections", "functools",
      "itertools", "pathlib", "subprocess", "site", "builtins", "importlib", "test", "tune", "list", "dict", "set",
      "str", "bytes", "tuple", "object", "type", "len", "print", "open", "input", "range", "map", "filter", "zip",
      "min", "max", "sum", "abs", "all", "any", "id", "iter", "next", "super", "property", "format", "hash", "vars",
      "dir", "help", "exit", "quit", "compile", "eval", "exec"};
  if (kShadowed.count(package))
    throw InputError(fmt::format("--name {}: the name of a Python module or builtin the package would shadow; choose "
                                 "another, such as tune_ops",
                                 package));
}

// The dtype variables of p (issue 35): their values, and the tensor the op reads each from.
void describe_dtypes(ExportedProblem& p) {
  const auto& declared = p.problem->json();
  for (const auto& [var, unused] : p.results.front().run.shape.dtypes()) {
    ExportedProblem::DTypeVariable v{var, {}, p.tensors.size()};
    if (declared.contains("dtypes") && declared.at("dtypes").contains(var))
      for (const auto& name : declared.at("dtypes").at(var).value("values", nlohmann::ordered_json::array()))
        if (auto t = parse_dtype(name.get<std::string>())) v.values.push_back(*t);
    for (std::size_t i = 0; i < p.tensors.size() && v.tensor == p.tensors.size(); ++i)
      if (p.tensors[i].dtype == var) v.tensor = i;
    if (v.tensor == p.tensors.size())
      throw InputError(fmt::format("problem {}: dtype variable {} is the dtype of no parameter or input; the op cannot tell "
                                   "it from the tensors",
                                   p.name, var));
    p.dtype_vars.push_back(std::move(v));
  }
  for (const auto* t : {&p.output}) {
    const bool variable = std::any_of(p.dtype_vars.begin(), p.dtype_vars.end(), [&](const auto& v) { return v.name == t->dtype; });
    if (!variable && !parse_dtype(t->dtype))
      throw InputError(fmt::format("problem {}: output {} has dtype {}, neither a dtype ({}) nor a dtype variable of its results",
                                   p.name, t->name, t->dtype, dtype_choices()));
  }
}

ExportedProblem describe(const std::string& name, std::vector<NamedResult> results) {
  ExportedProblem p;
  p.name = name;
  p.header_ns = identifier(name);  // the namespace of the problem in its merged header
  // The problem's module and op: a name of the package's own __init__ gets '_' after it.
  static const std::set<std::string> kPackageNames = {"load", "glob", "os", "torch", "build", "csrc"};
  p.ns = p.header_ns + (kPackageNames.count(p.header_ns) || p.header_ns.front() == '_' ? "_" : "");
  p.problem = &find_problem(problem_spec_of(results.front().run));
  p.results = std::move(results);
  for (const auto& d : p.results.front().run.shape.dims()) p.dims.push_back(d.first);
  std::vector<ExportedProblem::Tensor> inputs;
  for (const auto& t : p.problem->json().at("tensors")) {
    ExportedProblem::Tensor x{t.at("name").get<std::string>(), {}, t.value("dtype", std::string(dtype_name(DType::kFloat32)))};
    for (const auto& s : t.at("shape")) x.shape.push_back(s.is_string() ? s.get<std::string>() : s.dump());
    const std::string role = t.value("role", "");
    if (role == "parameter") p.tensors.push_back(x);
    if (role == "input") inputs.push_back(x);
    if (role == "output") p.output = x;
  }
  p.parameter_count = p.tensors.size();
  p.tensors.insert(p.tensors.end(), inputs.begin(), inputs.end());
  describe_dtypes(p);
  return p;
}

// launch_<problem>.cu: the entry for a device and shape, and the launches, with the CUDA runtime only.
std::string launch_source(const ExportedProblem& p, const std::string& main_template) {
  std::vector<std::string> shape_args;
  for (std::size_t d = 0; d < p.dims.size(); ++d) shape_args.push_back(fmt::format("dims[{}]", d));
  // A dtype variable's value follows the dims, as tune numbers the dtype (the header's DType).
  for (std::size_t v = 0; v < p.dtype_vars.size(); ++v)
    shape_args.push_back(fmt::format("static_cast<t::DType>(dims[{}])", p.dims.size() + v));
  std::vector<std::string> sizes;
  for (const DType t : all_dtypes()) sizes.push_back(fmt::format("    case {}: return {};", static_cast<int>(t), dtype_size(t)));
  return fmt::format(R"CPP(// Generated by `tune export torch` (tune {version}): the tuned kernels of problem {name}, dispatched
// and launched with the CUDA runtime only (binding.cpp holds the torch side). Do not edit.
#include <cuda_runtime.h>

#include "kernels/{main}"
#define TUNE_TUNED_KERNELS
#include "tuned.hpp"

namespace {{
namespace t = tune_tuned::{header_ns};

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

// The entry whose winner this file instantiates for that device and shape: the exact one, else the
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

// Launches entry's winner on `stream`. buffers: the problem's parameters, inputs, out, then
// scratch, as the header's Variant::buffers. Returns null, or the CUDA error's text.
const char* tune_{ns}_launch(int entry, void* const* buffers, cudaStream_t stream) {{
  const t::Variant& v = t::kEntries[entry].winner;
  for (int l = 0; l < v.launch_count; ++l) {{
    const t::Launch& launch = v.launches[l];
    const void* kernel = t::kWinnerKernels[entry][l];
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
                     fmt::arg("version", tool_version()), fmt::arg("name", p.name), fmt::arg("main", main_template),
                     fmt::arg("ns", p.ns), fmt::arg("header_ns", p.header_ns),
                     fmt::arg("shape", fmt::join(shape_args, ", ")), fmt::arg("sizes", fmt::join(sizes, "\n")));
}

// The C++ of a tensor shape expression over the dims (long long locals named after them).
std::string dim_expression(const ExportedProblem& p, const std::string& text) {
  const auto resolve = [&](const std::string& name) -> std::optional<std::string> {
    if (std::find(p.dims.begin(), p.dims.end(), name) != p.dims.end()) return "static_cast<double>(d_" + identifier(name) + ")";
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
  for (const auto& v : p.dtype_vars)
    if (v.name == dtype) return fmt::format("t[{}].scalar_type()", v.tensor);
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
        throw InputError(fmt::format("problem {}: tensor {} has dtype {}, neither a dtype ({}) nor a dtype variable of its "
                                     "results",
                                     p.name, x.name, x.dtype, dtype_choices()));
      s += fmt::format("  TORCH_CHECK(t[{0}].scalar_type() == {1}, \"{2}: {3} must be {4}, not \", dtype_name(t[{0}].scalar_type()));\n",
                       i, dtype_torch_scalar(*t), op, x.name, dtype_name(*t));
    } else if (v->tensor == i) {
      std::vector<std::string> allowed, names;
      for (const DType d : v->values) {
        allowed.push_back(fmt::format("t[{}].scalar_type() == {}", i, dtype_torch_scalar(d)));
        names.push_back(std::string(dtype_name(d)));
      }
      if (allowed.empty()) continue;
      s += fmt::format("  TORCH_CHECK({}, \"{}: {} is \", dtype_name(t[{}].scalar_type()), \"; its dtype {} takes {}\");\n",
                       fmt::join(allowed, " || "), op, x.name, i, v->name, fmt::join(names, ", "));
    } else {
      s += fmt::format("  TORCH_CHECK(t[{0}].scalar_type() == t[{1}].scalar_type(), \"{2}: {3} must be \", dtype_name(t[{1}].scalar_type()), "
                       "\" as {4} is (both {5}), not \", dtype_name(t[{0}].scalar_type()));\n",
                       i, v->tensor, op, x.name, p.tensors[v->tensor].name, v->name);
    }
  }
  return s;
}

// The op of one problem in binding.cpp: checks, the shape from the tensors, dispatch, launch.
std::string op_source(const ExportedProblem& p, const std::string& package) {
  const std::string op = package + "::" + p.ns;
  std::string s;
  s += fmt::format("extern \"C\" {{\nint tune_{0}_entry(const char*, int, int, long long, const long long*);\nconst char* tune_{0}_variant(int);\n"
                   "int tune_{0}_buffer_count(int);\nlong long tune_{0}_buffer_elements(int, int);\n"
                   "long long tune_{0}_buffer_bytes(int, int);\n"
                   "const char* tune_{0}_launch(int, void* const*, cudaStream_t);\n}}\n\n",
                   p.ns);
  std::vector<std::string> names;
  for (const auto& t : p.tensors) names.push_back(c_string(t.name));
  s += fmt::format("const char* const k{}Tensors[] = {{{}}};\n\n", p.ns, fmt::join(names, ", "));
  s += fmt::format("// The dims of problem {} from its tensors; every tensor's shape checked against them.\n", p.name);
  s += fmt::format("std::vector<long long> {}_dims(const std::vector<at::Tensor>& t) {{\n", p.ns);
  s += fmt::format("  check_tensors(\"{}\", t, k{}Tensors, {});\n", op, p.ns, p.tensors.size());
  for (const auto& d : p.dims) {
    bool found = false;
    for (std::size_t i = 0; i < p.tensors.size() && !found; ++i)
      for (std::size_t a = 0; a < p.tensors[i].shape.size() && !found; ++a)
        if (p.tensors[i].shape[a] == d) {
          s += fmt::format("  const long long d_{} = t[{}].dim() > {} ? t[{}].size({}) : -1;\n", identifier(d), i, a, i, a);
          found = true;
        }
    if (!found) throw InputError(fmt::format("problem {}: dimension {} is no tensor's dimension of its own; the op cannot tell it "
                                             "from the tensors",
                                             p.name, d));
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
  for (const auto& v : p.dtype_vars) dims.push_back(fmt::format("dtype_code(t[{}].scalar_type())", v.tensor));
  s += fmt::format("  return {{{}}};\n}}\n\n", fmt::join(dims, ", "));

  std::vector<std::string> out_shape;
  for (const auto& e : p.output.shape) out_shape.push_back(dim_expression(p, e));
  s += fmt::format("// {}: the output, or None when no tuned entry covers this device and shape.\n", op);
  s += fmt::format("c10::optional<at::Tensor> {}_op(std::vector<at::Tensor> t) {{\n", p.ns);
  s += fmt::format("  const std::vector<long long> dims = {}_dims(t);\n", p.ns);
  for (std::size_t d = 0; d < p.dims.size(); ++d)
    s += fmt::format("  const long long d_{0} = dims[{1}];\n  static_cast<void>(d_{0});\n", identifier(p.dims[d]), d);
  s += "  const c10::cuda::CUDAGuard guard(t[0].device());\n  const DeviceKey& device = device_key(t[0].get_device());\n";
  s += fmt::format("  const int entry = tune_{}_entry(device.name.c_str(), device.arch, device.sm_count, device.max_smem, dims.data());\n", p.ns);
  s += "  if (entry < 0) return c10::nullopt;\n";
  s += fmt::format("  at::Tensor out = at::empty({{{}}}, t[0].options().dtype({}));\n", fmt::join(out_shape, ", "),
                   scalar_of(p, p.output.dtype));
  s += "  std::vector<void*> buffers;\n  for (const at::Tensor& x : t) buffers.push_back(x.data_ptr());\n"
       "  buffers.push_back(out.data_ptr());\n";
  s += fmt::format("  const int count = tune_{}_buffer_count(entry);\n", p.ns);
  s += fmt::format("  TORCH_CHECK(tune_{0}_buffer_elements(entry, {1}) == out.numel(), \"{2}: the tuned entry's output has \", "
                   "tune_{0}_buffer_elements(entry, {1}), \" elements, not \", out.numel(), \"; re-export\");\n",
                   p.ns, p.tensors.size(), op);
  s += "  std::vector<at::Tensor> scratch;\n";
  s += fmt::format("  for (int b = static_cast<int>(buffers.size()); b < count; ++b) {{\n"
                   "    scratch.push_back(at::empty({{tune_{}_buffer_bytes(entry, b)}}, t[0].options().dtype(at::kByte)));\n"
                   "    buffers.push_back(scratch.back().data_ptr());\n  }}\n",
                   p.ns);
  s += fmt::format("  const char* error = tune_{}_launch(entry, buffers.data(), c10::cuda::getCurrentCUDAStream().stream());\n", p.ns);
  s += fmt::format("  TORCH_CHECK(error == nullptr, \"{}: the launch failed: \", error);\n  return out;\n}}\n\n", op);
  s += fmt::format("// The tuned variant that would run for a device and dims, or \"\" for none.\n"
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
std::string dtype_helpers() {
  std::string names, codes;
  for (const DType t : all_dtypes()) {
    names += fmt::format("    case {}: return \"{}\";\n", dtype_torch_scalar(t), dtype_name(t));
    codes += fmt::format("    case {}: return {};\n", dtype_torch_scalar(t), static_cast<int>(t));
  }
  return "const char* dtype_name(at::ScalarType s) {\n  switch (s) {\n" + names +
         "    default: return c10::toString(s);\n  }\n}\n\nint dtype_code(at::ScalarType s) {\n  switch (s) {\n" + codes +
         "    default: return -1;\n  }\n}\n";
}

std::string binding_source(const std::vector<ExportedProblem>& problems, const std::string& package) {
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
                              tool_version(), package, fmt::arg("dtype_helpers", dtype_helpers()));
  for (const auto& p : problems) s += op_source(p, package);
  s += "}  // namespace\n\n";
  s += fmt::format("TORCH_LIBRARY({}, m) {{\n", package);
  for (const auto& p : problems) {
    s += fmt::format("  m.def(\"{}(Tensor[] tensors) -> Tensor?\");\n", p.ns);
    s += fmt::format("  m.def(\"{0}_variant(str device, int arch, int sm_count, int max_smem, int[] dims) -> str\", &{0}_variant);\n", p.ns);
  }
  s += "}\n\n";
  s += fmt::format("TORCH_LIBRARY_IMPL({}, CUDA, m) {{\n", package);
  for (const auto& p : problems) s += fmt::format("  m.impl(\"{0}\", &{0}_op);\n", p.ns);
  s += "}\n";
  return s;
}

std::string problem_module(const ExportedProblem& p) {
  std::vector<std::string> params, inputs, dtype_var_names;
  for (const auto& v : p.dtype_vars) dtype_var_names.push_back(v.name);
  nlohmann::ordered_json dtype_codes = nlohmann::ordered_json::object();
  for (const DType t : all_dtypes()) dtype_codes[std::string(dtype_name(t))] = static_cast<int>(t);
  for (std::size_t i = 0; i < p.tensors.size(); ++i) (i < p.parameter_count ? params : inputs).push_back(p.tensors[i].name);
  nlohmann::ordered_json tuned = nlohmann::ordered_json::array();
  for (const auto& r : p.results) {
    const VariantRecord* w = r.run.winner ? r.run.find(*r.run.winner) : nullptr;
    nlohmann::ordered_json shape = nlohmann::ordered_json::object();
    for (const auto& [k, v] : r.run.shape.dims()) shape[k] = v;
    for (const auto& [k, v] : r.run.shape.dtypes()) shape[k] = std::string(dtype_name(v));
    tuned.push_back({{"device", r.run.device ? r.run.device->name : ""},
                     {"arch", r.run.device ? r.run.device->compute_capability() : 0},
                     {"shape", shape},
                     {"variant", w ? w->name : ""},
                     {"median_us", w && w->timing ? w->timing->median_us : 0.0},
                     {"synthetic", !measured_on_gpu(r.run)},
                     {"file", std::filesystem::path(r.file).filename().string()}});
  }
  return fmt::format(R"PY('''Problem {name} with tune's tuned kernels (generated by `tune export torch`, tune {version}).

ModelNew(model) runs the problem's PyTorch module `model` (an instance of its Model, on a CUDA
device, its tensors in the dtypes problem.json gives them) with the tuned kernel of the device, shape
and dtypes when the export has one (a tensor of another dtype: a clear error), and the
module itself otherwise (a warning, once per device and shape, says so). It uses the module's
parameters, not copies: load weights into `model`, then call ModelNew. Inference only: the op has
no backward.
'''
import json
import warnings

import torch

from . import load

PROBLEM = {name_json}
DIMS = {dims}
# The dtype variables (a dtype the op reads from the tensors), and tune's number of each dtype.
DTYPE_VARIABLES = {dtype_vars}
DTYPE_CODES = {dtype_codes}
# The op's arguments: the module's parameters (state_dict names), then the forward's inputs.
PARAMETERS = {params}
INPUTS = {inputs}
# The results exported: device, arch, shape, winner and its cold median as tune measured it.
TUNED = json.loads({tuned})


def _dtype_code(value):
    """tune's number of a dtype given by name ("bfloat16") or as a torch.dtype."""
    name = value if isinstance(value, str) else str(value).replace("torch.", "")
    if name not in DTYPE_CODES:
        raise ValueError(f"{{value!r}} is not a dtype (one of {{', '.join(DTYPE_CODES)}})")
    return DTYPE_CODES[name]


def variant(device, dims):
    """The tuned variant the op runs on `device` (a torch.device or index) for `dims` ({{dim: size}}, and
    {{dtype variable: dtype name or torch.dtype}} for each of DTYPE_VARIABLES), or ''."""
    props = torch.cuda.get_device_properties(device)
    # Shared memory per block opt-in where this torch reports it; 0: the arch's.
    return load().{ns}_variant(props.name, props.major * 10 + props.minor, props.multi_processor_count,
                                int(getattr(props, "shared_memory_per_block_optin", 0)),
                                [int(dims[d]) for d in DIMS] + [_dtype_code(dims[v]) for v in DTYPE_VARIABLES])


class ModelNew(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model
        named = dict(model.named_parameters())
        named.update(dict(model.named_buffers()))
        missing = [n for n in PARAMETERS if n not in named]
        if missing:
            raise ValueError(f"ModelNew({name}): the module has no {{missing}}; pass an instance of the problem's Model")
        self._parameters_in_order = [named[n] for n in PARAMETERS]
        self._warned = set()
        self.last_call_tuned = False

    def forward(self, *inputs):
        if len(inputs) != len(INPUTS):
            raise TypeError(f"ModelNew({name}) takes {{len(INPUTS)}} inputs ({{', '.join(INPUTS)}}), not {{len(inputs)}}")
        out = load().{ns}(list(self._parameters_in_order) + list(inputs))
        self.last_call_tuned = out is not None
        if out is None:
            key = (str(inputs[0].device), tuple(tuple(x.shape) for x in inputs))
            if key not in self._warned:
                self._warned.add(key)
                name = torch.cuda.get_device_name(inputs[0].device) if inputs[0].is_cuda else str(inputs[0].device)
                warnings.warn(f"tune: no tuned {name} kernel for {{name}} at input shapes {{key[1]}}; running the "
                              "reference module (tune that shape, re-export)", RuntimeWarning, stacklevel=2)
            return self.model(*inputs)
        return out
)PY",
                     fmt::arg("name", p.name), fmt::arg("version", tool_version()), fmt::arg("name_json", nlohmann::json(p.name).dump()),
                     fmt::arg("dims", python_list(p.dims)), fmt::arg("params", python_list(params)),
                     fmt::arg("inputs", python_list(inputs)), fmt::arg("tuned", nlohmann::json(tuned.dump()).dump()), fmt::arg("ns", p.ns),
                     fmt::arg("dtype_vars", python_list(dtype_var_names)), fmt::arg("dtype_codes", dtype_codes.dump()));
}

std::string init_module(const std::vector<ExportedProblem>& problems, const std::string& package) {
  std::vector<std::string> modules;
  for (const auto& p : problems) modules.push_back(p.ns);
  return fmt::format(R"PY('''Tuned kernels exported by tune (`tune export torch`, tune {version}): one op per problem in
torch.ops.{package}, and a ModelNew per problem ({modules}).

load() loads the extension built by `pip install .` (setup.py), else builds it once with
torch.utils.cpp_extension.load (nvcc; cached by PyTorch) and returns torch.ops.{package}.
'''
import glob
import os

import torch

from . import _build

_HERE = os.path.dirname(os.path.abspath(__file__))
_ops = None


def load(verbose=False):
    global _ops
    if _ops is None:
        built = sorted(glob.glob(os.path.join(_HERE, "_C*.so")))
        if built:
            torch.ops.load_library(built[0])
        else:
            from torch.utils.cpp_extension import load as build
            build(name="{package}_C", sources=[os.path.join(_HERE, s) for s in _build.SOURCES],
                  extra_cflags=_build.CXX_FLAGS, extra_cuda_cflags=_build.NVCC_FLAGS, is_python_module=False,
                  verbose=verbose)
        _ops = getattr(torch.ops, "{package}")
    return _ops


from . import {imports}  # noqa: E402
)PY",
                     fmt::arg("version", tool_version()), fmt::arg("package", package),
                     fmt::arg("modules", fmt::join(modules, ", ")), fmt::arg("imports", fmt::join(modules, ", ")));
}

}  // namespace

std::vector<std::filesystem::path> export_torch(const std::vector<std::filesystem::path>& files,
                                                const std::filesystem::path& out, const TorchExportOptions& options) {
  if (files.empty()) throw InputError("no result files given; pass the results JSON files to export");
  const std::string& package = options.package;
  check_package_name(package);
  std::map<std::string, std::vector<NamedResult>> by_problem;
  std::set<int> archs;
  for (const auto& f : files) {
    NamedResult r{f.string(), read_problem_result(f)};
    if (r.run.device) archs.insert(r.run.device->compute_capability());
    if (!options.arch || (r.run.device && r.run.device->compute_capability() == *options.arch))
      by_problem[r.run.problem].push_back(std::move(r));
  }
  if (!options.arch && archs.size() > 1)
    throw InputError(fmt::format("the results are of {} archs (sm_{}); export one arch per package: pass --arch",
                                 archs.size(), fmt::join(archs, ", sm_")));
  if (by_problem.empty()) throw InputError(fmt::format("no result of arch sm_{} among the files", options.arch.value_or(0)));
  const int arch = options.arch.value_or(archs.empty() ? 90 : *archs.begin());

  std::vector<ExportedProblem> problems;
  ExportFiles files_out;
  const std::filesystem::path pkg = package, csrc = pkg / "csrc";
  std::vector<std::string> sources{"csrc/binding.cpp"};
  for (auto& [name, results] : by_problem) {
    problems.push_back(describe(name, std::move(results)));
    const ExportedProblem& p = problems.back();
    for (std::size_t i = 0; i + 1 < problems.size(); ++i)
      if (problems[i].ns == p.ns)
        throw InputError(fmt::format("problems {} and {} both export as {} (module {}.{}, op torch.ops.{}.{}); export them "
                                     "in two packages (--name), or rename one",
                                     problems[i].name, p.name, p.ns, package, p.ns, package, p.ns));
    const Space space = load_space(problem_spec_of(p.results.front().run), options.config);
    files_out.emplace_back(csrc / p.ns / "tuned.hpp", generate_merged_header(p.results, space, options.allow_synthetic));
    const auto sources_of = space.sources();
    if (!sources_of) throw InputError(fmt::format("problem {}: its kernel template was not found", name));
    files_out.emplace_back(csrc / p.ns / "kernels" / sources_of->main_name, sources_of->main);
    for (std::size_t h = 0; h < sources_of->headers.size(); ++h)
      files_out.emplace_back(csrc / p.ns / "kernels" / sources_of->headers[h].first, header_for_nvcc(*sources_of, h));
    const std::string launcher = "launch_" + p.ns + ".cu";
    files_out.emplace_back(csrc / p.ns / launcher, launch_source(p, sources_of->main_name));
    sources.push_back("csrc/" + p.ns + "/" + launcher);
    files_out.emplace_back(pkg / (p.ns + ".py"), problem_module(p));
  }
  files_out.emplace_back(csrc / "binding.cpp", binding_source(problems, package));
  files_out.emplace_back(pkg / "_build.py",
             fmt::format("# Generated by `tune export torch`: what setup.py and load() build.\nSOURCES = {}\n"
                         "# The C++ standard is PyTorch's own (C++17 or C++20, as its headers need).\nCXX_FLAGS = [\"-O3\"]\nNVCC_FLAGS = {}\nARCH = {}\n",
                         python_list(sources), python_list(nvcc_flags(arch)), arch));
  files_out.emplace_back(pkg / "__init__.py", init_module(problems, package));
  files_out.emplace_back("setup.py", fmt::format(R"PY(# Generated by `tune export torch`. Build and install: pip install --no-build-isolation .
import runpy

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

build = runpy.run_path("{package}/_build.py")
setup(
    name="{package}",
    version="0.1.0",
    packages=["{package}"],
    package_data={{"{package}": ["csrc/*.cpp", "csrc/*/*.cu", "csrc/*/*.hpp", "csrc/*/kernels/**/*"]}},
    ext_modules=[CUDAExtension("{package}._C", ["{package}/" + s for s in build["SOURCES"]],
                               extra_compile_args={{"cxx": build["CXX_FLAGS"], "nvcc": build["NVCC_FLAGS"]}})],
    cmdclass={{"build_ext": BuildExtension}},
)
)PY",
                                           fmt::arg("package", package)));
  files_out.emplace_back("pyproject.toml",
             fmt::format("[build-system]\n# torch must be the one the package will run with: pip install --no-build-isolation .\n"
                         "requires = [\"setuptools\", \"torch\"]\nbuild-backend = \"setuptools.build_meta\"\n\n"
                         "[project]\nname = \"{}\"\nversion = \"0.1.0\"\ndependencies = [\"torch\"]\n",
                         package));
  std::string readme = fmt::format("# {} (generated by `tune export torch`)\n\nBuild: `pip install --no-build-isolation .` (nvcc and a CUDA "
                                   "build of PyTorch), or import the package from this folder and let `{}.load()` build it "
                                   "once.\n\nUse:\n\n",
                                   package, package);
  for (const auto& p : problems)
    readme += fmt::format("    from {}.{} import ModelNew\n    fast = ModelNew(model)   # model: the problem's Model on the GPU\n", package, p.ns);
  readme += fmt::format("\nOps: `torch.ops.{}.<problem>(parameters + inputs)` returns None for a device and shape no tuned "
                        "entry covers; ModelNew then runs the module (one warning per device and shape). Kernels for sm_{}, "
                        "flags {}.\n",
                        package, arch, fmt::join(nvcc_flags(arch), " "));
  files_out.emplace_back("README.md", readme);
  return write_export(out, files_out);
}

}  // namespace tune
