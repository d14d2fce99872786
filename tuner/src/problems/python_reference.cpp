#include "problems/python_reference.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tune/errors.hpp"
#include "tune/tune.hpp"

extern char** environ;

namespace tune {
namespace {

std::string slurp(const std::filesystem::path& file) {
  std::ifstream f(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// The last non-empty line of a log, for a one-line error.
std::string last_line(const std::string& log) {
  std::size_t end = log.find_last_not_of("\n\r ");
  if (end == std::string::npos) return "(no output)";
  const std::size_t start = log.rfind('\n', end);
  return log.substr(start == std::string::npos ? 0 : start + 1, end - (start == std::string::npos ? 0 : start + 1) + 1);
}

// A temporary folder removed when it goes out of scope.
class TempDir {
 public:
  TempDir() {
    std::string templ = (std::filesystem::temp_directory_path() / "tune-reference-XXXXXX").string();
    if (!mkdtemp(templ.data())) throw InputError("cannot create a temporary folder for the reference; check $TMPDIR");
    path_ = templ;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Runs argv with stdout and stderr into `log`; returns the exit status (or -1: not started).
int run(const std::vector<std::string>& argv, const std::filesystem::path& log) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawn_file_actions_addclose(&actions, 0);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return -1;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

}  // namespace

void write_npy(const std::filesystem::path& file, const std::vector<std::int64_t>& shape, const std::vector<float>& data) {
  std::string dims;
  for (const auto d : shape) dims += fmt::format("{}, ", d);
  if (shape.size() > 1) dims.resize(dims.size() - 2);
  std::string header = fmt::format("{{'descr': '<f4', 'fortran_order': False, 'shape': ({}), }}", dims);
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
  f.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size() * sizeof(float)));
  if (!f) throw InputError(fmt::format("cannot write {} (disk full?)", file.string()));
}

std::vector<double> read_npy(const std::filesystem::path& file, std::vector<std::int64_t>* shape) {
  const std::string bytes = slurp(file);
  auto bad = [&](const std::string& why) { return InputError(fmt::format("{}: not a .npy file tune reads ({})", file.string(), why)); };
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
  const bool f8 = header.find("'descr': '<f8'") != std::string::npos;
  const bool f4 = header.find("'descr': '<f4'") != std::string::npos;
  if (!f8 && !f4) throw bad("dtype must be little-endian float64 or float32");
  if (header.find("'fortran_order': False") == std::string::npos) throw bad("Fortran order");
  const auto open = header.find("'shape': (");
  const auto close = header.find(')', open);
  if (open == std::string::npos || close == std::string::npos) throw bad("no shape");
  std::vector<std::int64_t> dims;
  std::int64_t count = 1;
  const std::string list = header.substr(open + 10, close - open - 10);
  for (std::size_t pos = 0; pos < list.size();) {
    const auto comma = list.find(',', pos);
    const std::string item = list.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (item.find_first_not_of(' ') != std::string::npos) {
      dims.push_back(std::stoll(item));
      count *= dims.back();
    }
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  const std::size_t width = f8 ? 8 : 4;
  const std::size_t data_start = start + len;
  if (count < 0 || bytes.size() - data_start != static_cast<std::size_t>(count) * width) throw bad("data size differs from its shape");
  std::vector<double> out(static_cast<std::size_t>(count));
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (f8) {
      std::memcpy(&out[i], bytes.data() + data_start + i * 8, 8);
    } else {
      float v = 0;
      std::memcpy(&v, bytes.data() + data_start + i * 4, 4);
      out[i] = v;
    }
  }
  if (shape) *shape = dims;
  return out;
}

std::vector<double> run_python_reference(const std::filesystem::path& module, const std::string& problem,
                                         const Shape& shape, const ProblemData& data, const TensorSpec& output,
                                         std::string* backend) {
  const TempDir dir;
  nlohmann::ordered_json request{{"problem", problem}, {"shape", nlohmann::ordered_json::object()}};
  for (const auto& [k, v] : shape.dims()) request["shape"][k] = v;
  request["tensors"] = nlohmann::ordered_json::array();
  std::size_t n = 0;
  for (const auto* group : {&data.params, &data.inputs})
    for (const HostTensor& t : *group) {
      const std::string file = fmt::format("t{}.npy", n++);
      write_npy(dir.path() / file, t.spec.shape, t.data);
      request["tensors"].push_back({{"name", t.spec.name},
                                    {"role", group == &data.params ? "parameter" : "input"},
                                    {"shape", t.spec.shape},
                                    {"file", file}});
    }
  request["output"] = {{"name", output.name}, {"shape", output.shape}, {"file", "out.npy"}};
  write_file_atomic(dir.path() / "request.json", request.dump(1));
  write_file_atomic(dir.path() / "reference_runner.py", std::string(embedded_file("reference_runner.py")));
  const char* env = std::getenv("TUNE_PYTHON");
  const std::string python = env && *env ? env : "python3";
  const auto log = dir.path() / "log.txt";
  const int rc = run({python, (dir.path() / "reference_runner.py").string(), module.string(), dir.path().string()}, log);
  if (rc == -1)
    throw InputError(fmt::format("{}: cannot run the Python reference with '{}' (set TUNE_PYTHON to a python3)", problem, python));
  if (rc != 0) throw InputError(fmt::format("{}: {} failed: {}", problem, module.string(), last_line(slurp(log))));
  std::vector<std::int64_t> got;
  std::vector<double> out = read_npy(dir.path() / "out.npy", &got);
  if (backend) {
    try {
      const auto result = nlohmann::json::parse(slurp(dir.path() / "result.json"));
      const std::string how = result.value("backend", "?");
      *backend = fmt::format("{} ({}{})", module.filename().string(), how,
                             result.contains("torch_version") ? " " + result.at("torch_version").get<std::string>() : "");
    } catch (const nlohmann::json::exception&) {
      *backend = module.filename().string();
    }
  }
  if (got != output.shape)
    throw InputError(fmt::format("{}: {} returned shape ({}), the output '{}' has shape ({})", problem, module.string(),
                                 fmt::join(got, ", "), output.name, fmt::join(output.shape, ", ")));
  return out;
}

}  // namespace tune
