#include "problem/python_reference.hpp"

#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/subprocess.hpp"
#include "tune/errors.hpp"
#include "tune/io.hpp"
#include "tune/problem.hpp"
#include "tune/record.hpp"

namespace tune {
namespace {

std::string slurp(const std::filesystem::path& file) {
  std::ifstream f(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// The longest --reference-timeout (about 11 days): a deadline, not a way to say "none".
constexpr double kMaxReferenceTimeoutS = 1e6;
std::atomic<double> g_reference_timeout_s{0};  // 0: not set, $TUNE_REFERENCE_TIMEOUT or the default

double checked_timeout(double s, const std::string& what) {
  if (!(std::isfinite(s) && s > 0 && s <= kMaxReferenceTimeoutS))
    throw InputError(fmt::format("{}: expected a positive number of seconds, at most {:.0f}", what, kMaxReferenceTimeoutS));
  return s;
}

// A note for an error when the disk of the temporary folder is full (or nearly), else "".
std::string disk_full_note(const std::filesystem::path& dir, const std::string& said = "") {
  struct statvfs st {};
  const bool full =
      said.find("No space left on device") != std::string::npos ||
      (statvfs(dir.c_str(), &st) == 0 && static_cast<double>(st.f_bavail) * static_cast<double>(st.f_frsize) < 1 << 20);
  return full ? fmt::format(" (the disk of {} is full: free some space, or set TMPDIR to a folder with room)",
                            dir.parent_path().string())
              : "";
}

// The one line for a reference that gave no result.
std::string failure(const ChildResult& r, const std::string& problem, const std::filesystem::path& module,
                    const std::string& python, double deadline_s) {
  std::string said = last_line(r.err);
  if (said.empty()) said = last_line(r.out);
  switch (r.end) {
    case ChildEnd::kTimedOut:
      return fmt::format(
          "{}: {} did not return within {:g} s and was stopped, with every process it started; make it "
          "faster, or give it longer with --reference-timeout SECONDS (or TUNE_REFERENCE_TIMEOUT)",
          problem, module.string(), deadline_s);
    case ChildEnd::kNotStarted:
      return fmt::format("{}: cannot run the Python reference with '{}' ({}); set TUNE_PYTHON to a python3", problem, python,
                         std::strerror(r.error));
    case ChildEnd::kSignaled:
      return fmt::format("{}: {} was killed by signal {} ({}){}", problem, module.string(), r.signal, strsignal(r.signal),
                         said.empty() ? "" : ": " + said);
    case ChildEnd::kExited:
      break;
  }
  // The runner's line names the module itself where it can ("<module>: the reference returned None").
  if (said.starts_with(module.string())) return fmt::format("{}: {}", problem, said);
  return fmt::format("{}: {} failed: {}", problem, module.string(),
                     said.empty() ? fmt::format("exit code {}, no output", r.exit_code) : said);
}

// The request: each parameter and input as a .npy file, request.json, the runner.
void write_request(const std::filesystem::path& dir, const std::string& problem, const Shape& shape, const ProblemData& data,
                   const TensorSpec& output, ModuleRun module_run) {
  nlohmann::ordered_json request{{"problem", problem}, {"shape", shape_to_json(shape)}};
  request["module_run"] = module_run == ModuleRun::kNo ? "no" : module_run == ModuleRun::kAlso ? "also" : "only";
  request["tensors"] = nlohmann::ordered_json::array();
  std::size_t n = 0;
  for (const auto* group : {&data.params, &data.inputs})
    for (const HostTensor& t : *group) {
      const std::string file = fmt::format("t{}.npy", n++);
      write_npy(dir / file, t.spec.shape, t.spec.dtype, t.data);
      request["tensors"].push_back({{"name", t.spec.name},
                                    {"role", group == &data.params ? "parameter" : "input"},
                                    {"shape", t.spec.shape},
                                    {"dtype", dtype_name(t.spec.dtype)},
                                    {"file", file}});
    }
  request["output"] = {{"name", output.name},
                       {"shape", output.shape},
                       {"dtype", dtype_name(output.dtype)},
                       {"file", "out.npy"}};
  write_file_atomic(dir / "request.json", request.dump(1));
  write_file_atomic(dir / "reference_runner.py", std::string(embedded_file("reference_runner.py")));
}

// How the reference ran, for RunContext::reference: "reference.py (numpy)".
std::string backend_of(const std::filesystem::path& dir, const std::filesystem::path& module) {
  try {
    const auto result = nlohmann::json::parse(slurp(dir / "result.json"));
    const std::string how = result.value("backend", "?");
    const std::string torch = result.contains("torch_version") ? result.at("torch_version").get<std::string>() : "";
    return fmt::format("{} ({}{}{})", module.filename().string(), how, torch.empty() ? "" : " ", torch);
  } catch (const nlohmann::json::exception&) {
    return module.filename().string();
  }
}

}  // namespace

void write_npy(const std::filesystem::path& file, const std::vector<std::int64_t>& shape, DType dtype,
               const std::vector<double>& data) {
  // bfloat16 has no NumPy type: its values go as float32, which holds each exactly.
  const DType stored = dtype == DType::kBFloat16 ? DType::kFloat32 : dtype;
  const std::vector<std::byte> bytes = encode_all(stored, data);
  std::string dims;
  for (const auto d : shape) dims += fmt::format("{}, ", d);
  if (shape.size() > 1) dims.resize(dims.size() - 2);
  std::string header =
      fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}", dtype_npy_descr(stored), dims);
  // Magic (6) + version (2) + length (2) + header, padded with spaces to a multiple of 64, ending in '\n'.
  const std::size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream f(file, std::ios::binary | std::ios::trunc);
  const char magic[] = {'\x93', 'N', 'U', 'M', 'P', 'Y', 1, 0};
  f.write(magic, sizeof(magic));
  const auto len = static_cast<std::uint16_t>(header.size());
  const char len_bytes[] = {static_cast<char>(len & 0xff), static_cast<char>(len >> 8)};
  f.write(len_bytes, 2);
  f << header;
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!f) throw InputError(fmt::format("cannot write {} (disk full?)", file.string()));
}

namespace {

// A .npy file's header read: its element type ("<f8", "<f4", "<i8"), shape and where its data start.
struct NpyView {
  std::string bytes;
  std::string descr;
  std::vector<std::int64_t> dims;
  std::size_t count = 0, data_start = 0;
};

NpyView parse_npy(const std::filesystem::path& file) {
  NpyView v{slurp(file), {}, {}, 0, 0};
  const std::string& bytes = v.bytes;
  auto bad = [&](const std::string& why) {
    return InputError(fmt::format("{}: not a .npy file tune reads ({})", file.string(), why));
  };
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) throw bad("no NUMPY magic");
  const int major = static_cast<unsigned char>(bytes[6]);
  std::size_t len = 0, start = 0;
  if (major == 1) {
    len = static_cast<unsigned char>(bytes[8]) | (static_cast<std::size_t>(static_cast<unsigned char>(bytes[9])) << 8);
    start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) throw bad("truncated header");
    for (int i = 3; i >= 0; --i) len = (len << 8) | static_cast<unsigned char>(bytes[8 + static_cast<std::size_t>(i)]);
    start = 12;
  } else {
    throw bad(fmt::format("version {}", major));
  }
  if (start + len > bytes.size()) throw bad("truncated header");
  const std::string header = bytes.substr(start, len);
  for (const char* d : {"<f8", "<f4", "<i8"})
    if (header.find(fmt::format("'descr': '{}'", d)) != std::string::npos) v.descr = d;
  if (v.descr.empty()) throw bad("dtype must be little-endian float64, float32 or int64");
  if (header.find("'fortran_order': False") == std::string::npos) throw bad("Fortran order");
  const auto open = header.find("'shape': (");
  const auto close = header.find(')', open);
  if (open == std::string::npos || close == std::string::npos) throw bad("no shape");
  std::int64_t count = 1;
  const std::string list = header.substr(open + 10, close - open - 10);
  for (std::size_t pos = 0; pos < list.size();) {
    const auto comma = list.find(',', pos);
    const std::string item = list.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (item.find_first_not_of(' ') != std::string::npos) {
      v.dims.push_back(std::stoll(item));
      count *= v.dims.back();
    }
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  const std::size_t width = v.descr == "<f4" ? 4 : 8;
  v.data_start = start + len;
  if (count < 0 || bytes.size() - v.data_start != static_cast<std::size_t>(count) * width)
    throw bad("data size differs from its shape");
  v.count = static_cast<std::size_t>(count);
  return v;
}

}  // namespace

std::vector<double> read_npy(const std::filesystem::path& file, std::vector<std::int64_t>* shape) {
  const NpyView v = parse_npy(file);
  if (v.descr == "<i8")
    throw InputError(
        fmt::format("{}: not a .npy file tune reads (dtype must be little-endian float64 or float32)", file.string()));
  std::vector<double> out(v.count);
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (v.descr == "<f8") {
      std::memcpy(&out[i], v.bytes.data() + v.data_start + i * 8, 8);
    } else {
      float f = 0;
      std::memcpy(&f, v.bytes.data() + v.data_start + i * 4, 4);
      out[i] = f;
    }
  }
  if (shape) *shape = v.dims;
  return out;
}

std::vector<std::int64_t> read_npy_int64(const std::filesystem::path& file, std::vector<std::int64_t>* shape) {
  const NpyView v = parse_npy(file);
  if (v.descr != "<i8")
    throw InputError(fmt::format("{}: not a .npy file tune reads (dtype must be little-endian int64)", file.string()));
  std::vector<std::int64_t> out(v.count);
  if (!out.empty()) std::memcpy(out.data(), v.bytes.data() + v.data_start, v.count * 8);
  if (shape) *shape = v.dims;
  return out;
}

void set_reference_timeout(double seconds) {
  g_reference_timeout_s = checked_timeout(seconds, fmt::format("--reference-timeout {}", seconds));
}

double reference_timeout_s() {
  if (const double set = g_reference_timeout_s.load(); set > 0) return set;
  const char* env = std::getenv("TUNE_REFERENCE_TIMEOUT");
  if (!env || !*env) return kDefaultReferenceTimeoutS;
  char* end = nullptr;
  const double s = std::strtod(env, &end);
  return checked_timeout(*end ? -1 : s, fmt::format("TUNE_REFERENCE_TIMEOUT={}", env));
}

namespace {

// Finds the modules without importing them (torch takes seconds to import); a metadata version
// where the package has one.
constexpr const char* kIdentityScript = R"(import sys, importlib.util as u, importlib.metadata as m
def f(n):
    try:
        s = u.find_spec(n)
    except Exception:
        s = None
    if s is None:
        return n + " none"
    try:
        v = m.version(n)
    except Exception:
        v = "?"
    return "%s %s at %s" % (n, v, s.origin)
print("%s (Python %s, prefix %s); %s; %s" % (sys.executable, sys.version.split()[0], sys.prefix, f("numpy"), f("torch"))))";

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

}  // namespace

std::string python_identity() {
  const std::string python = env_or("TUNE_PYTHON", "python3");
  // What decides which interpreter and modules answer: the setting, where a bare name is looked up,
  // and where modules are looked up beside the interpreter's own.
  const std::string setting = python + '\n' + env_or("PATH", "") + '\n' + env_or("PYTHONPATH", "");
  static std::mutex mutex;
  static std::map<std::string, std::string> known;
  const std::lock_guard lock(mutex);
  if (const auto it = known.find(setting); it != known.end()) return it->second;
  ChildOptions o;
  o.argv = {python, "-c", kIdentityScript};
  o.deadline_s = 30;
  const ChildResult r = run_child(o);
  std::string said = last_line(r.out);
  if (r.end != ChildEnd::kExited || r.exit_code != 0 || said.empty())
    said = fmt::format("{} (cannot run: {})", python,
                       r.end == ChildEnd::kNotStarted ? std::strerror(r.error)
                       : last_line(r.err).empty()     ? "no answer"
                                                      : last_line(r.err));
  return known.emplace(setting, said).first->second;
}

OutputValues run_python_reference(const std::filesystem::path& module, const std::string& problem, const Shape& shape,
                                  const ProblemData& data, const TensorSpec& output, std::string* backend,
                                  ModuleRun module_run, std::vector<double>* module_output) {
  const double deadline_s = reference_timeout_s();
  const TempDir dir("reference");
  try {
    write_request(dir.path(), problem, shape, data, output, module_run);
  } catch (const InputError& e) {
    throw InputError(
        fmt::format("{}: cannot write the reference's input: {}{}", problem, e.what(), disk_full_note(dir.path())));
  }
  const char* env = std::getenv("TUNE_PYTHON");
  const std::string python = env && *env ? env : "python3";
  ChildOptions o;
  o.argv = {python, (dir.path() / "reference_runner.py").string(), module.string(), dir.path().string()};
  o.deadline_s = deadline_s;
  // A line every 10 s (more often for a deadline under 40 s) while it runs: a long wait is not silence.
  o.progress_every_s = std::max(1.0, std::min(10.0, std::floor(deadline_s / 4)));
  o.on_progress = [&](double s) {
    fmt::print(stderr, "{}: {} still running ({:.0f} s of the {:g} s deadline)\n", problem, module.filename().string(), s,
               deadline_s);
  };
  const ChildResult r = run_child(o);
  if (r.end != ChildEnd::kExited || r.exit_code != 0)
    throw InputError(failure(r, problem, module, python, deadline_s) + disk_full_note(dir.path(), r.err));
  if (module_output) {
    module_output->clear();
    if (module_run != ModuleRun::kNo && std::filesystem::exists(dir.path() / "module_out.npy")) {
      std::vector<std::int64_t> got;
      *module_output = read_npy(dir.path() / "module_out.npy", &got);
      if (got != output.shape)
        throw InputError(
            fmt::format("{}: {}'s module returned shape ({}) in the tensors' dtypes, the output '{}' has "
                        "shape ({})",
                        problem, module.string(), fmt::join(got, ", "), output.name, fmt::join(output.shape, ", ")));
    }
  }
  if (module_run == ModuleRun::kOnly) return {};
  if (!std::filesystem::exists(dir.path() / "out.npy"))
    throw InputError(
        fmt::format("{}: {} ended (exit code 0) without returning a result; does it call sys.exit() or "
                    "os._exit()? reference() must return the output",
                    problem, module.string()));
  std::vector<std::int64_t> got;
  std::vector<double> out = read_npy(dir.path() / "out.npy", &got);
  if (backend) *backend = backend_of(dir.path(), module);
  if (got != output.shape)
    throw InputError(fmt::format("{}: {} returned shape ({}), the output '{}' has shape ({})", problem, module.string(),
                                 fmt::join(got, ", "), output.name, fmt::join(output.shape, ", ")));
  // The runner leaves it out where the values are no integers: tune refuses those in one line.
  if (output.dtype == DType::kInt64 && std::filesystem::exists(dir.path() / "out_int64.npy")) {
    std::vector<std::int64_t> exact = read_npy_int64(dir.path() / "out_int64.npy", &got);
    if (exact.size() != out.size()) throw InputError(fmt::format("{}: out_int64.npy and out.npy differ in size", problem));
    return OutputValues::of_int64(std::move(exact));
  }
  return OutputValues::of_doubles(output.dtype, std::move(out));
}

}  // namespace tune
