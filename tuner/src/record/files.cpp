// Readers of result and golden files, validated with one-line errors that name the file.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <mutex>
#include <optional>
#include <set>
#include <string_view>

#include <fmt/format.h>
#include <zlib.h>
#include <nlohmann/json.hpp>

#include "core/json_file.hpp"
#include "tune/errors.hpp"
#include "tune/io.hpp"
#include "tune/problem_space.hpp"

namespace tune {
namespace {

using Json = nlohmann::ordered_json;

Json read_json(const std::filesystem::path& file) { return json_file::read(file); }

void brief_into(const Json& v, std::string& out, std::size_t max) {
  const auto text = [](const std::string& s, std::size_t n) {
    return Json(s.substr(0, n)).dump(-1, ' ', false, Json::error_handler_t::replace);
  };
  if (v.is_array() || v.is_object()) {
    out += v.is_array() ? '[' : '{';
    bool first = true;
    for (auto it = v.begin(); it != v.end() && out.size() <= max; ++it, first = false) {
      if (!first) out += ',';
      if (v.is_object()) out += text(it.key(), max) + ':';
      brief_into(*it, out, max);
    }
    if (out.size() <= max) out += v.is_array() ? ']' : '}';
  } else if (v.is_string()) {
    out += text(v.get_ref<const std::string&>(), max + 1);
  } else {
    out += v.dump();
  }
}

// A golden entry's "dtype" (absent in older files: float32) must be the tensor's at the golden's shape.
void check_golden_dtype(const Json& j, DType want, const std::string& where, bool output) {
  const Json given = j.contains("dtype") ? j.at("dtype") : Json("float32");
  const auto dtype = given.is_string() ? parse_dtype(given.get_ref<const std::string&>()) : std::nullopt;
  if (!dtype) throw InputError(fmt::format("{}.dtype {} is not a dtype ({})", where, given.dump(), dtype_choices()));
  if (*dtype == want || (output && *dtype == DType::kFloat64)) return;  // the output's data is the float64 reference's
  throw InputError(
      fmt::format("{} is {}{}, the problem's tensor is {} at this shape; remake the golden with "
                  "scripts/make_goldens.py",
                  where, dtype_name(*dtype), j.contains("dtype") ? "" : " (no 'dtype': float32)", dtype_name(want)));
}

// `exact`: every value must be one the tensor's dtype holds (parameters and inputs: the data a kernel gets).
HostTensor tensor_from(const Json& j, const TensorSpec& spec, const std::string& where, bool exact = false) {
  if (!j.is_object() || !j.contains("shape") || !j.contains("data")) throw InputError(where + " needs 'shape' and 'data'");
  check_golden_dtype(j, spec.dtype, where, !exact);
  std::vector<std::int64_t> shape;
  for (const Json& d : j.at("shape")) {
    if (!d.is_number_integer()) throw InputError(where + " shape must list integers");
    shape.push_back(d.get<std::int64_t>());
  }
  if (shape != spec.shape)
    throw InputError(fmt::format("{} has shape [{}], the problem expects [{}]", where, fmt::join(shape, ", "),
                                 fmt::join(spec.shape, ", ")));
  const Json& data = j.at("data");
  if (!data.is_array() || static_cast<std::int64_t>(data.size()) != spec.elements())
    throw InputError(
        fmt::format("{} has {} values, its shape needs {}", where, data.is_array() ? data.size() : 0, spec.elements()));
  HostTensor t{spec, {}};
  t.data.reserve(data.size());
  for (const Json& v : data) {
    // A bool tensor's true/false, as numpy's tolist() writes a bool array, are its 1 and 0.
    if (v.is_boolean() && spec.dtype == DType::kBool) {
      t.data.push_back(v.get<bool>() ? 1 : 0);
      continue;
    }
    if (!v.is_number())
      throw InputError(fmt::format("{}.data[{}]: {} is not a number; write each value as a number", where, t.data.size(),
                                   json_file::brief(v, 40)));
    const double x = v.get<double>();
    // An integer tensor's value written as a number no 64-bit integer holds (read as a float, e.g.
    // -9223372036854775809) rounds into range as a double: refused as written.
    const bool integer_as_written = v.is_number_integer() || is_floating(spec.dtype);
    // An int64 beyond 2^53 (9007199254740993) reads as a double of another integer (2^53): refused
    // as written (held_exactly bounds x by 2^53, so the cast back is exact).
    const bool same_integer = !v.is_number_integer() || is_floating(spec.dtype) || !held_exactly(spec.dtype, x) ||
                              (v.is_number_unsigned() ? v.get<std::uint64_t>() == static_cast<std::uint64_t>(x)
                                                      : v.get<std::int64_t>() == static_cast<std::int64_t>(x));
    if (exact && (!integer_as_written || !held_exactly(spec.dtype, x) || !same_integer))
      throw InputError(
          fmt::format("{}.data[{}]: {} is not exactly a {} value (it would become {}); a golden holds "
                      "the values the kernel gets: remake it with scripts/make_goldens.py",
                      where, t.data.size(), v.dump(), dtype_name(spec.dtype), round_to(spec.dtype, x)));
    t.data.push_back(round_to(spec.dtype, x));
  }
  return t;
}

// The golden's shape: its dims, and each dtype variable by name ("T": "bfloat16"; absent: its default).
Shape golden_shape(const Json& j, const Problem& problem) {
  Shape shape;
  for (const auto& d : problem.dims()) {
    if (!j.contains(d)) throw InputError(fmt::format("'shape' has no '{}'", d));
    // An integer as written, read wide: 3.7 is not 3, and 1e300 or 2^64 + 3 no int64.
    const Json& v = j.at(d);
    const bool positive = v.is_number_unsigned()
                              ? v.get<std::uint64_t>() >= 1 &&
                                    v.get<std::uint64_t>() <= std::uint64_t(std::numeric_limits<std::int64_t>::max())
                              : v.is_number_integer() && v.get<std::int64_t>() >= 1;
    if (!positive)
      throw InputError(
          fmt::format("shape.{}: {} is not a positive integer; a golden holds the shape its data was "
                      "drawn at: remake it with scripts/make_goldens.py",
                      d, v.dump()));
    shape.set(d, v.get<std::int64_t>());
  }
  for (const auto& var : problem.dtype_variables()) {
    if (!j.contains(var.name)) continue;
    const Json& v = j.at(var.name);
    const auto dtype = v.is_string() ? parse_dtype(v.get_ref<const std::string&>()) : std::nullopt;
    if (!dtype) throw InputError(fmt::format("shape.{}: {} is not a dtype ({})", var.name, v.dump(), dtype_choices()));
    shape.set_dtype(var.name, *dtype);
  }
  problem.add_dtype_defaults(shape);
  return shape;
}

// An integer or bool output's value `v` at `k` exactly: a JSON integer, or (goldens written before
// integer outputs were written as integers) a float that is an integer, which past 2^53 an int64
// output's double holds only to the nearest (noted in g.output_rounded_from).
std::int64_t golden_integer(const Json& v, DType t, std::size_t k, GoldenCase& g) {
  const auto refuse = [&](const std::string& why) {
    return InputError(
        fmt::format("output.data[{}]: {} {}; a golden holds a {} output's integers: remake it with "
                    "scripts/make_goldens.py",
                    k, v.dump(), why, dtype_name(t)));
  };
  std::int64_t n = 0;
  if (v.is_number_unsigned() && v.get<std::uint64_t>() > std::uint64_t(std::numeric_limits<std::int64_t>::max()))
    throw refuse("is beyond int64");
  if (v.is_boolean() && t == DType::kBool) {
    n = v.get<bool>() ? 1 : 0;  // true/false, as numpy's tolist() writes a bool array
  } else if (v.is_number_integer()) {
    n = v.get<std::int64_t>();
  } else {
    const double x = v.get<double>();
    if (!std::isfinite(x) || x != std::trunc(x)) throw refuse("is not an integer");
    if (t == DType::kInt64 && std::abs(x) > 0x1p53 && !g.output_rounded_from) g.output_rounded_from = k;
    // 2^63 is no int64; older goldens wrote INT64_MAX so (its nearest double), as the kernel's reads.
    if (x < -0x1p63 || x > 0x1p63) throw refuse("is beyond int64");
    n = x >= 0x1p63 ? std::numeric_limits<std::int64_t>::max() : static_cast<std::int64_t>(x);
  }
  if (t != DType::kInt64 && (static_cast<double>(n) < dtype_lowest(t) || static_cast<double>(n) > dtype_max(t)))
    throw refuse(fmt::format("is beyond {}'s range [{}, {}]", dtype_name(t), dtype_lowest(t), dtype_max(t)));
  return n;
}

// The golden's output: a float output's float64 values as written; an integer or bool output's
// integers exactly, so that tune verify compares them exactly (an int64 past 2^53 too).
void read_golden_output(const Json& data, DType t, GoldenCase& g) {
  if (is_floating(t)) {
    std::vector<double> values;
    values.reserve(data.size());
    for (const Json& v : data) values.push_back(v.get<double>());  // full float64 precision
    g.output = OutputValues::of_doubles(t, std::move(values));
    return;
  }
  std::vector<std::int64_t> ints;
  ints.reserve(data.size());
  for (const Json& v : data) ints.push_back(golden_integer(v, t, ints.size(), g));
  if (t == DType::kInt64) {
    g.output = OutputValues::of_int64(std::move(ints));
    return;
  }
  g.output = OutputValues::of_doubles(t, std::vector<double>(ints.begin(), ints.end()));
}

}  // namespace

namespace json_file {

std::string read_text(const std::filesystem::path& file) {
  const std::string limit = fmt::format("more than {} MiB", kMaxBytes >> 20);
  std::error_code ec;
  if (std::filesystem::is_directory(file, ec))
    throw InputError(fmt::format("{}: is a folder; pass a JSON file", file.string()));
  if (std::filesystem::is_regular_file(file, ec) && std::filesystem::file_size(file, ec) > kMaxBytes && !ec)
    throw InputError(
        fmt::format("{}: holds {}; tune's JSON files are far smaller: is it the right file?", file.string(), limit));
  gzFile in = gzopen(file.c_str(), "rb");  // reads a file that is not gzip as it is
  if (!in) throw InputError(file.string() + ": cannot be read (does it exist?)");
  std::string text;
  char buffer[1 << 16];
  int n = 0;
  while (text.size() <= kMaxBytes && (n = gzread(in, buffer, sizeof buffer)) > 0)
    text.append(buffer, static_cast<std::size_t>(n));
  int code = Z_OK;
  const std::string error = n < 0 ? gzerror(in, &code) : "";
  gzclose(in);
  if (text.size() > kMaxBytes)  // a gzip bomb, /dev/zero: stopped before it fills the memory
    throw InputError(fmt::format("{}: holds {} (decompressed); tune's JSON files are far smaller: is it the right file?",
                                 file.string(), limit));
  if (n < 0)
    throw InputError(fmt::format("{}: cannot be read ({})", file.string(), code == Z_ERRNO ? "a read error" : error));
  return text;
}

Json parse_line(const std::string& text, const std::string& name) {
  struct TooDeep {};
  // The parser and the destructor do not recurse, but copies, comparisons and dump() do.
  const Json::parser_callback_t depth_cap = [](int depth, Json::parse_event_t event, Json&) {
    if (depth >= kMaxDepth && (event == Json::parse_event_t::object_start || event == Json::parse_event_t::array_start))
      throw TooDeep{};
    return true;
  };
  try {
    return Json::parse(text, depth_cap);
  } catch (const TooDeep&) {
    throw InputError(fmt::format("{}: JSON nested deeper than {} levels; tune's files nest a few: is it the right file?",
                                 name, kMaxDepth));
  }
}

Json parse(const std::string& text, const std::string& name) {
  try {
    return parse_line(text, name);
  } catch (const Json::exception& e) {  // syntax, and numbers out of range
    throw InputError(fmt::format("{}: not valid JSON ({})", name, e.what()));
  }
}

Json read(const std::filesystem::path& file) { return parse(read_text(file), file.string()); }

std::string brief(const Json& v, std::size_t max) {
  std::string out;
  brief_into(v, out, max);
  return out.size() > max ? out.substr(0, max > 3 ? max - 3 : 0) + "..." : out;
}

bool is_utf8(const std::string& s) {
  try {
    (void)Json(s).dump();
    return true;
  } catch (const Json::type_error&) {
    return false;
  }
}

std::string printable(const std::string& s) {
  if (is_utf8(s)) return s;
  return Json::parse(Json(s).dump(-1, ' ', false, Json::error_handler_t::replace)).get<std::string>();
}

}  // namespace json_file

RunRecord read_result(const std::filesystem::path& file) { return read_result(file, read_json(file)); }

RunRecord read_result(const std::filesystem::path& file, const Json& json) {
  try {
    return run_from_json(json);
  } catch (const Json::exception& e) {
    throw InputError(fmt::format("{}: malformed results file ({})", file.string(), e.what()));
  } catch (const InputError& e) {
    const std::string what = e.what();
    if (what.rfind(file.string(), 0) == 0) throw;
    throw InputError(file.string() + ": " + what);
  }
}

void bind_recorded_dtypes(const Problem& problem, const RunRecord& run, Shape& shape, const std::filesystem::path& file) {
  std::map<std::string, std::string> recorded;  // context.tensors: each tensor's dtype as bound
  for (const TensorRecord& t : run.context.tensors) recorded.emplace(t.name, t.dtype);
  problem.add_dtype_defaults(shape, recorded);
  for (const DTypeVariable& v : problem.dtype_variables())
    if (shape.has_dtype(v.name) && std::find(v.values.begin(), v.values.end(), shape.dtype(v.name)) == v.values.end())
      throw InputError(
          fmt::format("{}: shape.{}: {} is not a dtype problem {} takes ({}); restore what tune wrote, or "
                      "re-tune",
                      file.string(), v.name, dtype_name(shape.dtype(v.name)), problem.name(),
                      fmt::join(v.values | std::views::transform(dtype_name), ", ")));
  // The kernels of the record ran in its tensors' dtypes: a shape that names another is no record of them.
  if (const std::string why = problem.recorded_dtype_conflict(shape, recorded); !why.empty())
    throw InputError(fmt::format("{}: {}; restore what tune wrote, or re-tune", file.string(), why));
}

RunRecord read_problem_result(const std::filesystem::path& file) {
  RunRecord run = read_result(file);
  bind_recorded_dtypes(find_problem(problem_spec_of(run)), run, run.shape, file);
  return run;
}

std::filesystem::path compressed_result_path(const std::filesystem::path& json) {
  return std::filesystem::path(json.string() + ".gz");
}

std::optional<std::filesystem::path> find_result_file(const std::filesystem::path& json) {
  std::error_code ec;
  const auto gz = compressed_result_path(json);
  const bool plain = std::filesystem::exists(json, ec), compressed = std::filesystem::exists(gz, ec);
  if (plain && compressed)
    throw InputError(
        fmt::format("{} and {}: two results files of one shape; keep one (a tune run that replaces the "
                    ".json.gz removes it)",
                    json.string(), gz.filename().string()));
  if (plain) return json;
  if (compressed) return gz;
  return std::nullopt;
}

void walk_tree(const std::filesystem::path& root, std::filesystem::directory_options options,
               const std::function<void(std::filesystem::recursive_directory_iterator&)>& visit) {
  std::error_code ec;
  using It = std::filesystem::recursive_directory_iterator;
  std::filesystem::path last = root;  // the folder a failed step could not open: the root, else the last entry
  for (It it(root, options, ec); !ec && it != It(); last = it->path(), it.increment(ec)) visit(it);
  if (ec)
    throw InputError(
        fmt::format("{}: cannot be read ({}); check the folder and its permissions", last.string(), ec.message()));
}

bool is_results_file_name(const std::string& name) {
  return !name.starts_with('.') && (name.ends_with(".json") || name.ends_with(".json.gz"));
}

bool is_tune_result_json(const Json& json) { return json.is_object() && json.value("kind", Json()) == "tune.result"; }

std::vector<ReportResult> read_report_results(const std::filesystem::path& root) {
  std::vector<std::filesystem::path> files;
  walk_tree(root, std::filesystem::directory_options::follow_directory_symlink, [&](auto& it) {
    if (it.depth() < 2) return;
    it.disable_recursion_pending();
    if (!is_results_file_name(it->path().filename().string())) return;
    std::error_code link;
    if (it->is_regular_file(link)) {
      files.push_back(it->path());
    } else if (it->is_symlink(link) && !std::filesystem::exists(it->path(), link)) {
      // A link to nothing, or to itself, is a results file the folder claims and cannot give.
      throw InputError(fmt::format("{}: a link to nothing (or a loop of links); remove it, or point it at a results file",
                                   it->path().string()));
    }
  });
  std::sort(files.begin(), files.end());
  for (const auto& f : files)  // <stem>.json sorts before <stem>.json.gz
    if (f.extension() == ".json" && std::binary_search(files.begin(), files.end(), compressed_result_path(f)))
      (void)find_result_file(f);  // refuses the pair in one line
  std::vector<ReportResult> out;
  for (const auto& f : files) {
    Json j = read_json(f);
    if (!is_tune_result_json(j)) continue;
    try {
      RunRecord run = run_from_json(j);
      out.push_back({f, std::move(j), std::move(run)});
    } catch (const InputError& e) {
      throw InputError(f.string() + ": " + e.what());
    }
  }
  return out;
}

std::string golden_problem(const std::filesystem::path& golden, const std::string& name) {
  std::error_code ec;
  const auto file = std::filesystem::absolute(golden, ec).parent_path().parent_path() / "problem.json";
  if (std::filesystem::is_regular_file(file, ec)) {
    try {
      if (find_problem(file.string()).name() == name) return file.string();
    } catch (const InputError&) {  // not a problem of this name: look it up by name
    }
  }
  return name;
}

GoldenCase read_golden(const std::filesystem::path& file) {
  const Json j = read_json(file);
  const std::string f = file.string();
  try {
    if (!j.is_object()) throw InputError("the top level must be a JSON object");
    for (const char* key : {"problem", "shape", "params", "inputs", "output"})
      if (!j.contains(key)) throw InputError(fmt::format("has no '{}'", key));
    GoldenCase g;
    g.problem = j.at("problem").get<std::string>();
    const Problem& problem = find_problem(golden_problem(file, g.problem));
    g.shape = golden_shape(j.at("shape"), problem);
    problem.check_shape(g.shape);
    for (const auto& spec : problem.param_specs(g.shape)) {
      if (!j.at("params").contains(spec.name)) throw InputError(fmt::format("'params' has no '{}'", spec.name));
      g.data.params.push_back(tensor_from(j.at("params").at(spec.name), spec, "params." + spec.name, true));
    }
    for (const auto& spec : problem.input_specs(g.shape)) {
      if (!j.at("inputs").contains(spec.name)) throw InputError(fmt::format("'inputs' has no '{}'", spec.name));
      g.data.inputs.push_back(tensor_from(j.at("inputs").at(spec.name), spec, "inputs." + spec.name, true));
    }
    const TensorSpec out = problem.output_spec(g.shape);
    (void)tensor_from(j.at("output"), out, "output");  // its shape, dtype and count
    read_golden_output(j.at("output").at("data"), out.dtype, g);
    return g;
  } catch (const Json::exception& e) {
    throw InputError(fmt::format("{}: malformed golden file ({})", f, e.what()));
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", f, e.what()));
  }
}

namespace {

// Writes all of text to fd, flushes it to the disk and closes fd; 0, else the errno of the first
// step that failed (ENOSPC, EDQUOT, EIO).
int write_all_and_sync(int fd, const std::string& text) {
  int error = 0;
  for (std::size_t done = 0; done < text.size() && error == 0;) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      error = n < 0 ? errno : EIO;
    else
      done += static_cast<std::size_t>(n);
  }
  if (error == 0 && ::fsync(fd) != 0 && errno != EINVAL) error = errno;  // EINVAL: a file system that keeps nothing
  if (::close(fd) != 0 && error == 0 && errno != EINTR) error = errno;
  return error;
}

// The folder's entries (a rename) on the disk; a folder that cannot be opened or synced (a file
// system without it) is left as it is.
void sync_folder(const std::string& folder) {
  const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}

void write_file_in_place(const std::filesystem::path& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw InputError(fmt::format("cannot write {} (check its permissions)", path.string()));
  f << text;
  f.flush();
  if (!f) throw InputError(fmt::format("writing {} failed (disk full?)", path.string()));
}

// write_file_atomic's temporary file of path, "<path>.tmp.<pid>.<n>" (is_atomic_write_temporary reads
// the name): one of its own per writer, since two runs (or two devices' compile threads) may write one
// path at once; each writes whole and the last rename wins.
std::string atomic_write_temporary(const std::filesystem::path& path) {
  static std::atomic<std::uint64_t> serial{0};
  return fmt::format("{}.tmp.{}.{}", path.string(), getpid(), serial++);
}

}  // namespace

std::string folder_error(const std::filesystem::path& dir, const std::error_code& ec) {
  std::error_code e;
  for (std::filesystem::path p = dir; !p.empty(); p = p.parent_path()) {
    if (std::filesystem::is_symlink(std::filesystem::symlink_status(p, e)) && !std::filesystem::exists(p, e))
      return fmt::format("{} is a link to nothing ({}) or a loop of links", p.string(),
                         std::filesystem::read_symlink(p, e).string());
    if (p == p.parent_path()) break;
  }
  return ec.message();
}

namespace {

// The writer's pid of write_file_atomic's temporary name suffix "<pid>.<n>" (what follows
// "<target>.tmp."), or nothing when it is not one.
std::optional<long long> temporary_writer(std::string_view rest) {
  const auto dot = rest.find('.');
  const auto digits = [](std::string_view v) {
    return !v.empty() && v.size() <= 18 && v.find_first_not_of("0123456789") == std::string_view::npos;
  };
  if (dot == std::string_view::npos || !digits(rest.substr(0, dot)) || !digits(rest.substr(dot + 1))) return std::nullopt;
  return std::stoll(std::string(rest.substr(0, dot)));
}

// Whether pid is a process of this host (one of another user's too: kill says EPERM).
bool process_alive(long long pid) {
  if (pid <= 0 || pid > std::numeric_limits<pid_t>::max()) return false;
  return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

}  // namespace

bool is_atomic_write_temporary(const std::string& name, const std::string& target) {
  const std::string prefix = target + ".tmp.";
  return name.starts_with(prefix) && temporary_writer(std::string_view(name).substr(prefix.size())).has_value();
}

namespace {

// remove_stale_temporaries of `dir`, of one target file's name only when `target` is given.
std::size_t remove_stale_temporaries_in(const std::filesystem::path& dir, std::chrono::seconds min_age,
                                        const std::optional<std::string>& target) {
  std::error_code ec;
  std::size_t removed = 0;
  const auto now = std::filesystem::file_time_type::clock::now();
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const auto mark = name.rfind(".tmp.");
    if (mark == std::string::npos || mark == 0 || (target && name.compare(0, mark, *target) != 0)) continue;
    const auto writer = temporary_writer(std::string_view(name).substr(mark + 5));
    std::error_code e;
    if (!writer || !it->is_regular_file(e) || process_alive(*writer)) continue;
    const auto written = std::filesystem::last_write_time(it->path(), e);
    if (e || now - written < min_age) continue;
    removed += std::filesystem::remove(it->path(), e) ? 1 : 0;
  }
  return removed;
}

}  // namespace

std::size_t remove_stale_temporaries(const std::filesystem::path& dir, std::chrono::seconds min_age) {
  return remove_stale_temporaries_in(dir, min_age, std::nullopt);
}

std::size_t remove_dead_temporaries_of(const std::filesystem::path& path) {
  const auto dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  return remove_stale_temporaries_in(dir, std::chrono::seconds(0), path.filename().string());
}

void write_output_atomic(const std::filesystem::path& path, const std::string& text) {
  remove_dead_temporaries_of(path);
  write_file_atomic(path, text);
}

void remove_stale_temporaries_once(const std::filesystem::path& dir) {
  static std::mutex mutex;
  static std::set<std::string> done;
  {
    const std::lock_guard lock(mutex);
    if (!done.insert(dir.lexically_normal().string()).second) return;
  }
  remove_stale_temporaries(dir, std::chrono::hours(1));
}

void write_file_atomic(const std::filesystem::path& path, const std::string& text) {
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  // What is wrong with the place, in the words of the path the user gave (not of the temporary file).
  if (path.has_parent_path() && !std::filesystem::is_directory(path.parent_path()))
    throw InputError(fmt::format("cannot write {}: {} is not a folder{}", path.string(), path.parent_path().string(),
                                 ec ? " (" + folder_error(path.parent_path(), ec) + ")" : std::string()));
  if (std::filesystem::is_directory(path))
    throw InputError(fmt::format("cannot write {}: it is a folder; name a file", path.string()));
  // A link, a pipe or a device (-o /dev/stdout) is written through, in place: a rename would put a
  // file where it was.
  const auto kind = std::filesystem::symlink_status(path, ec).type();
  if (!ec && kind != std::filesystem::file_type::regular && kind != std::filesystem::file_type::not_found) {
    write_file_in_place(path, text);
    return;
  }
  const std::string tmp = atomic_write_temporary(path);
  const std::string folder = path.has_parent_path() ? path.parent_path().string() : std::string(".");
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
                        0666);  // less the umask: a shared folder keeps its group write
  if (fd < 0) throw InputError(fmt::format("cannot write {} (in {}: {})", path.string(), folder, std::strerror(errno)));
  // On the disk before the rename, and the rename on the disk before the caller goes on (a run
  // removes its journal once its results are written): after a power cut the path holds the old
  // text or the new, never an empty file, and a run's records are in its results or its journal.
  if (const int error = write_all_and_sync(fd, text); error != 0) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    throw InputError(fmt::format("writing {} failed ({}); free space in {}, or write elsewhere", path.string(),
                                 std::strerror(error), folder));
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    throw InputError(fmt::format("cannot move {} to {} ({})", tmp, path.string(), ec.message()));
  }
  sync_folder(folder);
}

}  // namespace tune
