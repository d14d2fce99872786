// `tune export torch`: results of record as a buildable PyTorch extension. One op per problem
// (TORCH_LIBRARY), dispatching on (device, shape) to the CUBIN of the entry's winner, the bytes the
// tune gated and timed (compiled again by tune's NVRTC path and checked against the record), a
// drop-in ModelNew per problem built from the user's Model instance, and the build files
// (setup.py for `pip install`, torch.utils.cpp_extension.load for a JIT build).
//
// Layout of the output folder:
//   setup.py, pyproject.toml, README.md
//   <package>/__init__.py      load(): the built extension, else a JIT build of csrc/
//   <package>/_build.py        sources and flags (read by setup.py and load())
//   <package>/<problem>.py     ModelNew, PARAMETERS, INPUTS, TUNED
//   <package>/csrc/binding.cpp the ops: checks, shapes, allocation, the current stream (torch)
//   <package>/csrc/<problem>/  tuned.hpp (the merged header), cubins.inc (the winners' CUBINs),
//                              launch_<problem>.cpp (dispatch and launches, no torch; a name of
//                              its own, since torch.utils.cpp_extension.load names objects by
//                              the sources' file names)
#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "core/json_file.hpp"
#include "ship/export_torch_parts.hpp"
#include "ship/header_parts.hpp"
#include "ship/header_text.hpp"
#include "tune/dtype.hpp"
#include "tune/errors.hpp"
#include "tune/io.hpp"
#include "tune/problem.hpp"
#include "tune/problem_space.hpp"

namespace tune {
namespace {

using header_text::identifier;
using torch_export::ExportedProblem;

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

// `out` made ready for an export: created when new. Returns the files an earlier export there wrote
// (its manifest's list), which write_export removes; any other non-empty folder is refused (issue
// 34, #26).
std::vector<std::filesystem::path> prepare_out(const std::filesystem::path& out) {
  std::error_code ec;
  const auto status = std::filesystem::status(out, ec);
  if (std::filesystem::exists(status) && !std::filesystem::is_directory(status)) cannot_write(out, "not a folder");
  if (!std::filesystem::exists(status)) {
    std::filesystem::create_directories(out, ec);
    if (ec) cannot_write(out, fmt::format("cannot create the folder ({})", folder_error(out, ec)));
    return {};
  }
  // An export killed while it wrote its list (the first file it writes) left only the list's
  // temporary: the folder is as empty as before that export.
  remove_dead_temporaries_of(out / kManifest);
  if (std::filesystem::is_empty(out, ec)) return {};
  if (!std::filesystem::exists(out / kManifest, ec))
    throw InputError(
        fmt::format("-o {}: a folder that holds other files than an earlier tune export; pass a new or empty "
                    "folder",
                    out.string()));
  return earlier_export(out);
}

// The earlier export's files removed, with what a writer of them killed mid-write left, then their
// folders where empty (deepest first; a folder with other files stays).
void remove_earlier(const std::filesystem::path& out, const std::vector<std::filesystem::path>& earlier) {
  std::error_code ec;
  std::set<std::filesystem::path> dirs;
  for (const auto& f : earlier) {
    std::filesystem::remove(out / f, ec);
    if (ec) cannot_write(out, fmt::format("cannot remove {} of the earlier export ({})", f.string(), ec.message()));
    remove_dead_temporaries_of(out / f);
    for (auto d = f.parent_path(); !d.empty(); d = d.parent_path()) dirs.insert(out / d);
  }
  for (auto it = dirs.rbegin(); it != dirs.rend(); ++it)
    if (std::filesystem::is_empty(*it, ec)) std::filesystem::remove(*it, ec);
}

void write_manifest(const std::filesystem::path& out, const std::vector<std::filesystem::path>& files) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const auto& f : files) list.push_back(f.generic_string());
  write_output_atomic(out / kManifest, nlohmann::ordered_json{{"kind", "tune.export"}, {"files", list}}.dump(1) + "\n");
}

// The files written into `out`, then the manifest that lists them. Returns their paths. Before
// anything is removed or written, the manifest lists every file of the earlier export and of this
// one: an export killed part way (kill -9, a lost node) is then an earlier export to the next, which
// removes all it may have left, where a folder of part of an export and no list was refused for good
// as one of other files.
std::vector<std::filesystem::path> write_export(const std::filesystem::path& out, const ExportFiles& files) {
  const std::vector<std::filesystem::path> earlier = prepare_out(out);
  std::vector<std::filesystem::path> these, either = earlier;
  for (const auto& [rel, text] : files) these.push_back(rel.lexically_normal());
  for (const auto& f : these)
    if (std::find(either.begin(), either.end(), f) == either.end()) either.push_back(f);
  write_manifest(out, either);
  remove_earlier(out, earlier);
  std::vector<std::filesystem::path> written;
  for (const auto& [rel, text] : files) {
    std::error_code ec;
    std::filesystem::create_directories((out / rel).parent_path(), ec);
    if (ec) cannot_write(out, fmt::format("cannot create {} ({})", (out / rel).parent_path().string(), ec.message()));
    write_output_atomic(out / rel, text);
    written.push_back(out / rel);
  }
  write_manifest(out, these);
  return written;
}

// --name: a Python identifier that is no keyword, and no module or builtin a user's code or the
// package's own imports would then get instead (torch, json, list).
void check_package_name(const std::string& package) {
  if (package.empty() || identifier(package) != package)
    throw InputError(
        fmt::format("--name {}: not a Python identifier, or a Python or C++ keyword; use letters, digits and _, "
                    "not a digit first, as in tune_ops",
                    package));
  static const std::set<std::string> kShadowed = {"torch",       "numpy",     "setuptools", "pkg_resources", "json",
                                                  "glob",        "os",        "sys",        "warnings",      "runpy",
                                                  "math",        "re",        "io",         "abc",           "types",
                                                  "typing",      "copy",      "time",       "random",        "string",
                                                  "collections", "functools", "itertools",  "pathlib",       "subprocess",
                                                  "site",        "builtins",  "importlib",  "test",          "tune",
                                                  "list",        "dict",      "set",        "str",           "bytes",
                                                  "tuple",       "object",    "type",       "len",           "print",
                                                  "open",        "input",     "range",      "map",           "filter",
                                                  "zip",         "min",       "max",        "sum",           "abs",
                                                  "all",         "any",       "id",         "iter",          "next",
                                                  "super",       "property",  "format",     "hash",          "vars",
                                                  "dir",         "help",      "exit",       "quit",          "compile",
                                                  "eval",        "exec"};
  if (kShadowed.count(package))
    throw InputError(
        fmt::format("--name {}: the name of a Python module or builtin the package would shadow; choose "
                    "another, such as tune_ops",
                    package));
}

// The dtype variables of p (issue 35): their values, and the tensor the op reads each from; then
// what the op is given (ExportedProblem::given).
void describe_dtypes(ExportedProblem& p) {
  const auto& declared = p.problem->json();
  for (const auto& [var, unused] : p.results.front().run.shape.dtypes()) {
    ExportedProblem::DTypeVariable v{var, {}, p.tensors.size()};
    if (declared.contains("dtypes") && declared.at("dtypes").contains(var))
      for (const auto& name : declared.at("dtypes").at(var).value("values", nlohmann::ordered_json::array()))
        if (auto t = parse_dtype(name.get<std::string>())) v.values.push_back(*t);
    for (std::size_t i = 0; i < p.tensors.size() && v.tensor == p.tensors.size(); ++i)
      if (p.tensors[i].dtype == var) v.tensor = i;
    p.dtype_vars.push_back(std::move(v));
  }
  // What no parameter or input tells, the op is given (dims first, then dtype variables).
  for (const auto& d : p.dims)
    if (std::none_of(p.tensors.begin(), p.tensors.end(),
                     [&](const auto& t) { return std::find(t.shape.begin(), t.shape.end(), d) != t.shape.end(); }))
      p.given.push_back(d);
  for (const auto& v : p.dtype_vars)
    if (v.tensor == p.tensors.size()) p.given.push_back(v.name);
  for (const auto* t : {&p.output}) {
    const bool variable =
        std::any_of(p.dtype_vars.begin(), p.dtype_vars.end(), [&](const auto& v) { return v.name == t->dtype; });
    if (!variable && !parse_dtype(t->dtype))
      throw InputError(
          fmt::format("problem {}: output {} has dtype {}, neither a dtype ({}) nor a dtype variable of its results", p.name,
                      t->name, t->dtype, dtype_choices()));
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
    ExportedProblem::Tensor x{t.at("name").get<std::string>(),
                              {},
                              t.value("dtype", std::string(dtype_name(DType::kFloat32)))};
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

// The results to export by problem, of one arch (--arch, else the files' one); *arch set to it.
std::map<std::string, std::vector<NamedResult>> results_by_problem(const std::vector<std::filesystem::path>& files,
                                                                   const TorchExportOptions& options, int* arch) {
  std::map<std::string, std::vector<NamedResult>> by_problem;
  std::set<int> archs;
  for (const auto& f : files) {
    NamedResult r{f.string(), read_problem_result(f)};
    header_parts::check_whole_shape(r.run, r.file);
    if (r.run.device) archs.insert(r.run.device->compute_capability());
    if (!options.arch || (r.run.device && r.run.device->compute_capability() == *options.arch))
      by_problem[r.run.problem].push_back(std::move(r));
  }
  if (!options.arch && archs.size() > 1)
    throw InputError(fmt::format("the results are of {} archs (sm_{}); export one arch per package: pass --arch",
                                 archs.size(), fmt::join(archs, ", sm_")));
  if (by_problem.empty()) throw InputError(fmt::format("no result of arch sm_{} among the files", options.arch.value_or(0)));
  *arch = options.arch.value_or(archs.empty() ? 90 : *archs.begin());
  return by_problem;
}

// A problem's files: its merged header, the CUBINs of its winners, its launcher (added to `sources`)
// and its module.
void add_problem_files(ExportFiles& files_out, std::vector<std::string>& sources, const ExportedProblem& p,
                       const TorchExportOptions& options) {
  const std::filesystem::path pkg = options.package, csrc = pkg / "csrc";
  const Space space = load_space(problem_spec_of(p.results.front().run), options.config);
  files_out.emplace_back(csrc / p.ns / "tuned.hpp", generate_merged_header(p.results, space, options.allow_synthetic));
  if (!space.sources()) throw InputError(fmt::format("problem {}: its kernel template was not found", p.name));
  files_out.emplace_back(csrc / p.ns / "cubins.inc",
                         torch_export::cubin_source(torch_export::gated_code(p, space, options.allow_synthetic)));
  const std::string launcher = "launch_" + p.ns + ".cpp";
  files_out.emplace_back(csrc / p.ns / launcher, torch_export::launch_source(p));
  sources.push_back("csrc/" + p.ns + "/" + launcher);
  files_out.emplace_back(pkg / (p.ns + ".py"), torch_export::problem_module(p));
}

}  // namespace

std::vector<std::filesystem::path> export_torch(const std::vector<std::filesystem::path>& files,
                                                const std::filesystem::path& out, const TorchExportOptions& options) {
  if (files.empty()) throw InputError("no result files given; pass the results JSON files to export");
  const std::string& package = options.package;
  check_package_name(package);
  int arch = 0;
  auto by_problem = results_by_problem(files, options, &arch);
  std::vector<ExportedProblem> problems;
  ExportFiles files_out;
  std::vector<std::string> sources{"csrc/binding.cpp"};
  for (auto& [name, results] : by_problem) {
    problems.push_back(describe(name, std::move(results)));
    const ExportedProblem& p = problems.back();
    for (std::size_t i = 0; i + 1 < problems.size(); ++i) {
      if (problems[i].ns == p.ns)
        throw InputError(
            fmt::format("problems {} and {} both export as {} (module {}.{}, op torch.ops.{}.{}); export them "
                        "in two packages (--name), or rename one",
                        problems[i].name, p.name, p.ns, package, p.ns, package, p.ns));
      // Each problem registers two ops, <ns> and <ns>_variant: problem a_variant's op would be
      // registered twice with a's lookup, which torch refuses when the package loads.
      using Pair = std::pair<const ExportedProblem*, const ExportedProblem*>;
      for (const auto& [a, b] : {Pair{&problems[i], &p}, Pair{&p, &problems[i]}})
        if (a->ns + "_variant" == b->ns)
          throw InputError(fmt::format(
              "problems {} and {} both need op torch.ops.{}.{} ({}'s variant lookup, {}'s op); export them in two "
              "packages (--name), or rename one",
              a->name, b->name, package, b->ns, a->name, b->name));
    }
    add_problem_files(files_out, sources, p, options);
  }
  const std::filesystem::path pkg = package;
  files_out.emplace_back(pkg / "csrc" / "binding.cpp", torch_export::binding_source(problems, package));
  files_out.emplace_back(pkg / "_build.py", torch_export::build_module(sources, arch));
  files_out.emplace_back(pkg / "__init__.py", torch_export::init_module(problems, package));
  files_out.emplace_back("setup.py", torch_export::setup_py(package));
  files_out.emplace_back("pyproject.toml", torch_export::pyproject_toml(package));
  files_out.emplace_back("README.md", torch_export::readme(problems, package, arch));
  return write_export(out, files_out);
}

}  // namespace tune
