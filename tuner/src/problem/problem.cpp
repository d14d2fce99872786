// A problem read from its folder (docs/problem-format.md): dims, tensors, seeded data, edits,
// tolerance, work counts and the reference. The search-space keys of the same file are Space's.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <ranges>
#include <set>
#include <span>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/expr.hpp"
#include "core/json_file.hpp"
#include "problem/dtype_vars.hpp"
#include "problem/init.hpp"
#include "problem/json_check.hpp"
#include "problem/problem_impl.hpp"
#include "problem/python_reference.hpp"
#include "tune/errors.hpp"
#include "tune/hash.hpp"
#include "tune/problem.hpp"
#include "tune/rng.hpp"

namespace tune {

using namespace problem_file;

Problem::Problem(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Problem::~Problem() = default;

std::unique_ptr<Problem> Problem::load(const std::filesystem::path& problem_file) {
  auto impl = std::make_unique<Impl>();
  Impl& p = *impl;
  p.read(problem_file);
  auto f = [&](const std::string& m) { p.fail(m); };
  const Json& j = p.json;
  p.name = json_check::string(j, "problem", "the file", f);
  p.check_name();
  if (j.contains("description")) p.description = json_check::string(j, "description", "the file", f);
  // Dims first: every expression binds the whole variable table when it is built.
  p.parse_dims();
  p.dtype_vars = dtype_vars::parse(j, f);
  p.dtype_slots = dtype_vars::declare(p.dtype_vars, p.table, f);
  const std::vector<std::string> loop_names = p.declare_loop_variables();
  if (j.contains("tolerance")) p.tolerance = parse_tolerance(j.at("tolerance"), p.file.string());
  p.parse_tensors();
  p.parse_edits(loop_names);
  if (j.contains("deterministic")) {
    if (!j.at("deterministic").is_boolean())
      p.fail("'deterministic' must be true or false (false: the kernels may give other bits from launch to launch)");
    p.deterministic = j.at("deterministic").get<bool>();
  }
  p.parse_work();
  p.parse_reference();
  p.golden = p.file.parent_path() / (j.contains("golden") ? json_check::string(j, "golden", "the file", f) : "golden");
  return std::unique_ptr<Problem>(new Problem(std::move(impl)));
}

void Problem::Impl::read(const std::filesystem::path& problem_file) {
  std::error_code ec;
  file = std::filesystem::weakly_canonical(std::filesystem::absolute(problem_file), ec);
  if (ec) file = std::filesystem::absolute(problem_file);
  if (!std::ifstream(file))
    throw ConfigError(file.string() + ": cannot be read (pass --problem a folder with a problem.json)");
  try {
    json = json_file::read(file);  // bounded in size and depth
  } catch (const InputError& e) {
    throw ConfigError(e.what());
  }
  if (!json.is_object()) fail("the top level must be a JSON object");
  for (const auto& [k, v] : json.items())
    if (k != "_comment" && !json_check::problem_file_keys().count(k))
      fail(fmt::format("unknown key '{}' (known: {})", k, fmt::join(json_check::problem_file_keys(), ", ")));
}

void Problem::Impl::parse_dims() {
  const Json& j = json;
  if (!j.contains("shape") || !j.at("shape").is_object() || !j.at("shape").contains("dims") ||
      !j.at("shape").at("dims").is_array())
    fail("'shape.dims' must list the dimension names");
  for (const Json& d : j.at("shape").at("dims")) {
    if (!d.is_string()) fail("'shape.dims' must list names");
    dims.push_back(d.get<std::string>());
    try {
      dim_slots.push_back(table.declare(dims.back()));
    } catch (const std::invalid_argument& e) {
      fail(std::string("'shape.dims': ") + e.what());
    }
    if (reserved_dimension_names().count(dims.back()))
      fail(fmt::format("'shape.dims': '{0}' is an option of tune (--{0}), so --{0} could not give the dimension; rename it",
                       dims.back()));
  }
}

// The loop variables of every edit (top level and edge cases') are declared before any
// expression is built.
std::vector<std::string> Problem::Impl::declare_loop_variables() {
  const Json& j = json;
  std::vector<std::string> loop_names;
  if (j.contains("edits")) {
    if (!j.at("edits").is_array()) fail("'edits' must be a list");
    declare_loops(j.at("edits"), "edits", loop_names);
  }
  if (j.contains("edge_cases")) {
    if (!j.at("edge_cases").is_array()) fail("'edge_cases' must be a list of {\"name\": ..., \"set\": {...}}");
    for (std::size_t i = 0; i < j.at("edge_cases").size(); ++i) {
      const Json& c = j.at("edge_cases")[i];
      if (c.is_object() && c.contains("edits") && c.at("edits").is_array())
        declare_loops(c.at("edits"), fmt::format("edge_cases[{}].edits", i), loop_names);
    }
  }
  return loop_names;
}

void Problem::Impl::declare_loops(const Json& list, const std::string& where, std::vector<std::string>& loop_names) {
  for (std::size_t i = 0; i < list.size(); ++i) {
    const Json& e = list[i];
    if (!e.is_object() || !e.contains("for")) continue;
    if (!e.at("for").is_object()) fail(fmt::format("{}[{}].for must map loop variables to their bounds", where, i));
    for (const auto& [var, bound] : e.at("for").items()) {
      if (std::find(loop_names.begin(), loop_names.end(), var) != loop_names.end()) continue;
      if (std::find(dims.begin(), dims.end(), var) != dims.end())
        fail(fmt::format("{}[{}].for: loop variable '{}' is also a dimension; choose another name", where, i, var));
      try {
        (void)table.declare(var);
      } catch (const std::invalid_argument& e2) {
        fail(fmt::format("{}[{}].for: {}", where, i, e2.what()));
      }
      loop_names.push_back(var);
    }
  }
}

void Problem::Impl::parse_work() {
  Impl& p = *this;
  auto f = [&](const std::string& m) { p.fail(m); };
  const Json& j = p.json;
  if (j.contains("work")) {
    const Json& w = j.at("work");
    json_check::keys(w, {"flop", "bytes"}, "work", f);
    if (w.contains("flop")) {
      p.flop = p.expression(w.at("flop"), "work.flop", true);
      p.flop_text = p.flop->text();
    }
    if (w.contains("bytes")) {
      p.bytes = p.expression(w.at("bytes"), "work.bytes", true);
      p.bytes_text = p.bytes->text();
    }
    for (const auto& [key, e] : {std::pair{"flop", &p.flop}, std::pair{"bytes", &p.bytes}})
      if (*e && (*e)->is_constant() && !((*e)->eval() >= 0 && std::isfinite((*e)->eval())))
        p.fail(fmt::format("work.{} '{}' gives {}; a work count must be finite and >= 0", key, (*e)->text(), (*e)->eval()));
  }
}

namespace {

// The folder of a problem.json that lies in a built-in folder (configs/<name>/problem.json).
bool in_builtin_folder(const std::filesystem::path& file) {
  std::error_code ec;
  const auto parent = std::filesystem::weakly_canonical(file.parent_path().parent_path(), ec);
  for (const auto& d : builtin_problem_dirs())
    if (std::filesystem::weakly_canonical(d, ec) == parent) return true;
  return false;
}

std::string slurp(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// What of a folder outside configs/ differs from the built-in problem whose C++ reference it
// names (empty: an unchanged copy, such as tools/plant.py makes): its dims, its tensors or its
// reference.py. The fast path computes the built-in's function on the built-in's tensors only.
std::string builtin_mismatch(const Json& j, const std::optional<std::filesystem::path>& python, const std::string& builtin) {
  for (const auto& d : builtin_problem_dirs()) {
    const auto file = d / builtin / "problem.json";
    std::error_code ec;
    if (!std::filesystem::is_regular_file(file, ec)) continue;
    Json o;
    try {
      o = json_file::read(file);
    } catch (const InputError&) {
      return "problem.json (the built-in one cannot be read)";
    }
    if (!o.is_object()) return "problem.json (the built-in one cannot be read)";
    if (!o.contains("shape") || !j.contains("shape") ||
        o.at("shape").value("dims", Json()) != j.at("shape").value("dims", Json()))
      return "dims";
    if (o.value("tensors", Json()) != j.value("tensors", Json())) return "tensors";
    const Json ref = o.value("reference", Json::object());
    if (python && ref.contains("python") && ref.at("python").is_string() &&
        slurp(*python) != slurp(file.parent_path() / ref.at("python").get<std::string>()))
      return "reference.py";
    return {};
  }
  return "problem (no built-in problem has that name)";
}

}  // namespace

void Problem::Impl::parse_reference() {
  Impl& p = *this;
  auto f = [&](const std::string& m) { p.fail(m); };
  const Json& j = p.json;

  if (!j.contains("reference")) p.fail("'reference' must name the reference: {\"python\": \"reference.py\"}");
  const Json& r = j.at("reference");
  json_check::keys(r, {"python", "builtin"}, "reference", f);
  if (r.contains("python")) {
    p.python = p.file.parent_path() / json_check::string(r, "python", "reference", f);
    if (std::error_code ec; std::filesystem::is_directory(*p.python, ec))
      p.fail(fmt::format("reference.python: {} is a folder; name the Python file (reference.py)", p.python->string()));
    if (!std::filesystem::is_regular_file(*p.python))
      p.fail(fmt::format("reference.python: {} does not exist", p.python->string()));
  }
  if (r.contains("builtin")) {
    p.builtin = json_check::string(r, "builtin", "reference", f);
    // The C++ fast path is tied to the built-in problem: a copy of its folder elsewhere with other
    // tensors or another reference.py would be checked against the wrong function (issue 34 #9).
    if (!in_builtin_folder(p.file))
      if (const std::string what = builtin_mismatch(j, p.python, p.builtin); !what.empty())
        p.fail(
            fmt::format("reference.builtin '{0}' is the C++ reference of the built-in problem {0}, but this folder's {1} "
                        "differ from it; remove reference.builtin (the folder's reference.py then runs)",
                        p.builtin, what));
    if (!builtin_reference(p.builtin))
      p.fail(fmt::format("reference.builtin '{}' is not a reference built into this tune ({})", p.builtin,
                         fmt::join(builtin_reference_names(), ", ")));
  }
  if (!p.python && p.builtin.empty()) p.fail("'reference' must name a Python module: {\"python\": \"reference.py\"}");
}

// The name names the results folder, the header's namespace and the exported Python module.
void Problem::Impl::check_name() const {
  if (name.empty() ||
      name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != std::string::npos ||
      std::isdigit(static_cast<unsigned char>(name.front())))
    fail(
        fmt::format("problem name '{}' must be letters, digits, '_' and '-', not starting with a digit (it names the "
                    "results folder and the generated code's namespace)",
                    name));
  if (const std::string kind = space::keyword_kind(name); !kind.empty())
    fail(fmt::format("problem name '{}' is {}, which the generated headers and packages cannot use; rename it", name, kind));
}

namespace {

std::mutex g_reserved_mutex;
std::set<std::string> g_reserved;

}  // namespace

void set_reserved_dimension_names(std::set<std::string> names) {
  const std::lock_guard lock(g_reserved_mutex);
  g_reserved = std::move(names);
}

std::set<std::string> reserved_dimension_names() {
  const std::lock_guard lock(g_reserved_mutex);
  return g_reserved;
}

std::string_view Problem::name() const { return impl_->name; }
const std::string& Problem::description() const { return impl_->description; }
const std::filesystem::path& Problem::file() const { return impl_->file; }
std::filesystem::path Problem::golden_dir() const { return impl_->golden; }
const nlohmann::ordered_json& Problem::json() const { return impl_->json; }
std::vector<std::string> Problem::dims() const { return impl_->dims; }
const std::vector<DTypeVariable>& Problem::dtype_variables() const { return impl_->dtype_vars; }

void Problem::add_dtype_defaults(Shape& shape, const std::map<std::string, std::string>& recorded) const {
  for (std::size_t k = 0; k < impl_->dtype_vars.size(); ++k) {
    const DTypeVariable& v = impl_->dtype_vars[k];
    if (shape.has_dtype(v.name)) continue;
    std::optional<DType> ran;  // the dtype a record's tensors of this variable were bound to
    for (const auto& t : impl_->tensors)
      if (t.dtype_var == k)
        if (const auto it = recorded.find(t.name); it != recorded.end() && !ran) ran = parse_dtype(it->second);
    if (ran && std::find(v.values.begin(), v.values.end(), *ran) != v.values.end())
      shape.set_dtype(v.name, *ran);
    else if (v.default_value)
      shape.set_dtype(v.name, *v.default_value);
  }
  std::vector<std::string> declared;
  for (const DTypeVariable& v : impl_->dtype_vars) declared.push_back(v.name);
  shape.order_dtypes(declared);
}
std::string Problem::recorded_dtype_conflict(const Shape& shape, const std::map<std::string, std::string>& recorded) const {
  for (const auto& t : impl_->tensors) {
    if (!t.dtype_var) continue;
    const DTypeVariable& v = impl_->dtype_vars[*t.dtype_var];
    const auto it = recorded.find(t.name);
    if (it != recorded.end() && shape.has_dtype(v.name) && it->second != dtype_name(shape.dtype(v.name)))
      return fmt::format("shape.{} is {}, but context.tensors records {} as {}", v.name, dtype_name(shape.dtype(v.name)),
                         t.name, it->second);
  }
  return {};
}

Tolerance Problem::tolerance(const Shape& shape) const { return tolerance(output_spec(shape).dtype); }
Tolerance Problem::tolerance(DType output_dtype) const { return impl_->tolerance.of(output_dtype); }
bool Problem::has_builtin_reference() const { return !impl_->builtin.empty(); }

bool Problem::uses_builtin(ReferenceBackend backend) const {
  return !impl_->builtin.empty() && (backend != ReferenceBackend::kPython || !impl_->python);
}

namespace {

// The Python a reference.py may import besides itself, as (name, text) pairs in name order: its
// folder is first on sys.path, so the .py files beside it and the packages there (folders with an
// __init__.py), a few levels deep. `skip` is the reference itself.
void python_beside(const std::filesystem::path& dir, const std::filesystem::path& rel, const std::filesystem::path& skip,
                   int depth, std::vector<std::string>& out) {
  constexpr std::size_t kMostFiles = 256;
  std::error_code ec;
  std::vector<std::filesystem::path> entries;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    entries.push_back(it->path());
  std::sort(entries.begin(), entries.end());
  for (const auto& path : entries) {
    if (out.size() >= 2 * kMostFiles) return;
    const std::string name = path.filename().string();
    if (std::filesystem::is_directory(path, ec)) {
      if (depth < 4 && name != "__pycache__" && std::filesystem::is_regular_file(path / "__init__.py", ec))
        python_beside(path, rel / name, skip, depth + 1, out);
    } else if (path.extension() == ".py" && !(depth == 0 && path.filename() == skip.filename()) &&
               std::filesystem::is_regular_file(path, ec)) {
      out.push_back((rel / name).generic_string());
      out.push_back(slurp(path));
    }
  }
}

}  // namespace

std::string Problem::reference_identity(ReferenceBackend backend) const {
  if (uses_builtin(backend)) return "built-in C++ (" + impl_->builtin + ")";
  const std::filesystem::path& file = *impl_->python;
  std::ifstream f(file, std::ios::binary);
  if (!f) throw InputError(fmt::format("{} cannot be read; check its permissions", file.string()));
  const std::string text{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
  const char* choice = std::getenv("TUNE_REFERENCE_BACKEND");
  const std::string backend_name = choice && *choice ? choice : "numpy or torch";
  // A helper module it imports decides its answer as much as its own bytes do; so does the Python
  // that runs it (torch where it imports, numpy where not; their versions).
  std::vector<std::string> beside;
  python_beside(file.parent_path(), {}, file, 0, beside);
  const std::string under = "under " + python_identity();
  if (beside.empty())
    return fmt::format("{} xxh3:{} ({}) {}", file.filename().string(), content_hash({text}), backend_name, under);
  return fmt::format("{} xxh3:{} and {} .py file(s) beside it xxh3:{} ({}) {}", file.filename().string(),
                     content_hash({text}), beside.size() / 2, content_hash(beside), backend_name, under);
}
bool Problem::deterministic() const { return impl_->deterministic; }
std::optional<std::filesystem::path> Problem::python_reference() const { return impl_->python; }

std::string Problem::work_expression(const std::string& which) const {
  return which == "flop" ? impl_->flop_text : which == "bytes" ? impl_->bytes_text : std::string();
}

std::vector<TensorSpec> Problem::param_specs(const Shape& shape) const { return impl_->specs(shape, Role::kParameter); }
std::vector<TensorSpec> Problem::input_specs(const Shape& shape) const { return impl_->specs(shape, Role::kInput); }
TensorSpec Problem::output_spec(const Shape& shape) const { return impl_->specs(shape, Role::kOutput).at(0); }

namespace {

// Why an output of dtype `t` cannot hold the reference's value `v` (finite), or "" when it can:
// no kernel that stores `t` can match such a value, so every variant would fail parity (an integer
// or bool output exactly, a float one as a non-finite store) and the reference is what is wrong.
std::string unholdable(DType t, double v) {
  const std::string_view name = dtype_name(t);
  if (t == DType::kBool) return v == 0 || v == 1 ? "" : "a bool output holds 0 or 1 alone; return True/False (0 or 1)";
  if (!is_floating(t)) {
    if (v != std::trunc(v))
      return fmt::format("not an integer; return the integers the {} output holds, rounded as the kernel rounds", name);
    // Here as a double (the exact integers are compared apart): 2^63 - 1 reads 2^63, as in the kernel's output.
    if (t == DType::kInt64 ? std::abs(v) <= 0x1p63 : representable(t, v)) return "";
    const std::string range = t == DType::kInt64 ? "[-2^63, 2^63)" : fmt::format("[{}, {}]", dtype_lowest(t), dtype_max(t));
    return fmt::format("beyond {}'s range {}; wrap or clamp it as the kernel's {} arithmetic does", name, range, name);
  }
  if (std::isfinite(round_to(t, v))) return "";
  return fmt::format("beyond {}'s largest value {}, so a {} store is infinite; keep the output's magnitudes within {}", name,
                     dtype_max(t), name, name);
}

}  // namespace

ProblemData Problem::make_data(const Shape& shape, std::uint64_t seed, DataPurpose purpose) const {
  check_host_memory(shape);
  return impl_->pack(impl_->draw_all(shape, seed, purpose));
}

OutputValues Problem::reference(const Shape& shape, const ProblemData& data, ReferenceBackend backend, std::string* how,
                                std::vector<double>* module_output) const {
  check_shape(shape);
  const Impl& p = *impl_;
  const TensorSpec out = output_spec(shape);
  for (const auto& specs : {param_specs(shape), input_specs(shape)})
    for (const auto& s : specs) {
      const HostTensor* t = data.find(s.name);
      if (!t || t->data.size() != static_cast<std::size_t>(s.elements()))
        throw InputError(fmt::format("{}: tensor '{}' {} for shape {}; make the data for the same shape as the reference",
                                     p.name, s.name,
                                     t ? fmt::format("has {} elements, not {}", t->data.size(), s.elements()) : "is missing",
                                     shape.describe()));
    }
  OutputValues values;
  // The module rule's run, only where it applies: a low-precision output and a reference.py.
  const bool module_run = module_output && is_low_precision(out.dtype) && p.python;
  if (module_output) module_output->clear();
  if (uses_builtin(backend)) {
    values = OutputValues::of_doubles(out.dtype, builtin_reference(p.builtin)(shape, data));
    if (how) *how = "built-in C++ (" + p.builtin + ")";
    if (module_run)
      (void)run_python_reference(*p.python, p.name, shape, data, out, nullptr, ModuleRun::kOnly, module_output);
  } else {
    if (!p.python) throw ConfigError(p.file.string() + ": no Python reference to run (reference.python)");
    values = run_python_reference(*p.python, p.name, shape, data, out, how, module_run ? ModuleRun::kAlso : ModuleRun::kNo,
                                  module_run ? module_output : nullptr);
  }
  const std::vector<double>& ref = values.values();
  if (ref.size() != static_cast<std::size_t>(out.elements()))
    throw InputError(fmt::format("{}: the reference returned {} values, the output '{}' has {}", p.name, ref.size(),
                                 out.name, out.elements()));
  // The line names the reference that returned it: reference.py (what to fix) or the C++ fast path.
  const std::string who = uses_builtin(backend) ? "the built-in C++ reference (" + p.builtin + ")" : p.python->string();
  for (std::size_t i = 0; i < ref.size(); ++i)
    if (!std::isfinite(ref[i]))
      throw InputError(
          fmt::format("{}: {}: the reference output '{}' is {} at element {} for shape {}; a reference must "
                      "be finite",
                      p.name, who, out.name, ref[i], i, shape.describe()));
  for (std::size_t i = 0; i < ref.size(); ++i)
    if (const std::string why = unholdable(out.dtype, ref[i]); !why.empty())
      throw InputError(
          fmt::format("{}: {}: the reference output '{}' is {} at element {} for shape {}, which its dtype {} "
                      "cannot hold: {}",
                      p.name, who, out.name, ref[i], i, shape.describe(), dtype_name(out.dtype), why));
  return values;
}

WorkCounts Problem::counts(const Shape& shape) const {
  const Impl& p = *impl_;
  WorkCounts c;
  double tensor_bytes = 0;
  for (const auto& specs : {param_specs(shape), input_specs(shape), std::vector<TensorSpec>{output_spec(shape)}})
    for (const auto& s : specs) tensor_bytes += static_cast<double>(s.bytes());
  const std::lock_guard lock(p.mutex);
  p.bind(shape);
  c.flop = p.flop ? p.flop->eval() : 0;
  c.bytes = p.bytes ? p.bytes->eval() : tensor_bytes;  // default: every tensor moved once
  return c;
}

ReferenceBackend reference_backend_from_env() {
  const char* v = std::getenv("TUNE_REFERENCE");
  if (!v || !*v) return ReferenceBackend::kAuto;
  const std::string s(v);
  if (s == "python") return ReferenceBackend::kPython;
  if (s == "builtin") return ReferenceBackend::kBuiltin;
  if (s == "auto") return ReferenceBackend::kAuto;
  throw InputError("TUNE_REFERENCE='" + s + "' is not python, builtin or auto");
}

}  // namespace tune
