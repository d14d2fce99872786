// compute-sanitizer as a tool: where it is, its version, the --sanitize modes, and its reports read
// back from a log (tune/gate.hpp). The gate that runs it is gate.cpp.
#include <cxxabi.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <regex>
#include <sstream>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "core/enum_names.hpp"
#include "core/subprocess.hpp"
#include "tune/errors.hpp"
#include "tune/gate.hpp"

namespace tune {
namespace {

bool executable(const std::string& path) {
  std::error_code ec;
  return !path.empty() && std::filesystem::is_regular_file(path, ec) && access(path.c_str(), X_OK) == 0;
}

// compute-sanitizer --version answers at once; one that does not is not waited for.
constexpr double kVersionDeadlineS = 5;

// The "Version ..." of `path --version`: run without a shell (the path may hold any character) and
// with a deadline: {version, ""}, or {"unknown", why} when it does not say.
std::pair<std::string, std::string> sanitizer_version(const std::string& path) {
  ChildOptions o;
  o.argv = {path, "--version"};
  o.deadline_s = kVersionDeadlineS;
  o.keep_bytes = 16 * 1024;
  const ChildResult r = run_child(o);
  std::istringstream lines(r.out + "\n" + r.err);
  for (std::string line; std::getline(lines, line);)
    if (const auto at = line.find("Version "); at != std::string::npos && r.end != ChildEnd::kTimedOut)
      return {line.substr(at + 8), ""};
  return {"unknown", r.end == ChildEnd::kTimedOut
                         ? fmt::format("{} --version gave no answer within {:.0f} s (killed)", path, kVersionDeadlineS)
                     : r.end == ChildEnd::kNotStarted
                         ? fmt::format("{} --version could not start ({})", path, std::strerror(r.error))
                         : fmt::format("{} --version printed no \"Version\" line", path)};
}

const std::regex& mangled_name() {
  static const std::regex re("_Z[A-Za-z0-9_]+");
  return re;
}

}  // namespace

namespace {
constexpr EnumName<SanitizeMode> kSanitizeModeNames[] = {{SanitizeMode::kOff, "off"},
                                                         {SanitizeMode::kWinner, "winner"},
                                                         {SanitizeMode::kFinalists, "finalists"}};
}  // namespace

SanitizeMode sanitize_mode_from_string(const std::string& text) {
  if (const auto mode = enum_value(kSanitizeModeNames, text)) return *mode;
  throw InputError(fmt::format("--sanitize {}: expected off, winner or finalists", text));
}

std::string to_string(SanitizeMode mode) { return std::string(enum_name(kSanitizeModeNames, mode).value_or("off")); }

std::vector<std::string> sanitize_mode_names() {
  std::vector<std::string> out;
  for (const auto& [mode, name] : kSanitizeModeNames) out.emplace_back(name);
  return out;
}

SanitizerLocation find_sanitizer(bool fake) {
  SanitizerLocation s;
  if (const char* env = std::getenv("TUNE_SANITIZER"); env && *env) {
    if (executable(env))
      s.path = env;
    else
      s.why_not = fmt::format("TUNE_SANITIZER={} is not an executable file", env);
  } else if (fake) {
    s.why_not = "a fake run (TUNE_WORKER_FAKE) runs only the compute-sanitizer $TUNE_SANITIZER names";
  } else {
    std::vector<std::string> dirs;
    if (const char* path = std::getenv("PATH"))
      for (std::string rest = path; !rest.empty();) {
        const auto colon = rest.find(':');
        dirs.push_back(rest.substr(0, colon));
        rest = colon == std::string::npos ? "" : rest.substr(colon + 1);
      }
    for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
      if (const char* v = std::getenv(var); v && *v) dirs.push_back(std::string(v) + "/bin");
    dirs.push_back("/usr/local/cuda/bin");
    for (const auto& d : dirs)
      if (!d.empty() && executable(d + "/compute-sanitizer")) {
        s.path = d + "/compute-sanitizer";
        break;
      }
    if (s.path.empty()) s.why_not = "compute-sanitizer is not on PATH, in $CUDA_HOME/bin or in /usr/local/cuda/bin";
  }
  if (!s.path.empty()) std::tie(s.version, s.version_note) = sanitizer_version(s.path);
  return s;
}

std::string demangle_names(const std::string& text) {
  std::string out;
  auto begin = std::sregex_iterator(text.begin(), text.end(), mangled_name());
  std::size_t last = 0;
  for (auto it = begin; it != std::sregex_iterator(); ++it) {
    const std::string name = it->str();
    out += text.substr(last, static_cast<std::size_t>(it->position()) - last);
    int status = -1;
    std::unique_ptr<char, void (*)(void*)> d(abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), std::free);
    out += status == 0 && d ? std::string(d.get()) : name;
    last = static_cast<std::size_t>(it->position() + it->length());
  }
  return out + text.substr(last);
}

namespace {

// "RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning)": the errors, 0 where none are said.
int racecheck_errors(const std::string& line) {
  static const std::regex errors(R"(\((\d+) errors?)");
  std::smatch m;
  return std::regex_search(line, m, errors) ? std::atoi(m[1].str().c_str()) : 0;
}

}  // namespace

std::vector<SanitizerReport> parse_sanitizer_log(const std::string& tool, const std::string& text, int* summary_errors) {
  static constexpr std::string_view kPrefix = "=========";
  // Unindented lines that are not reports.
  static constexpr std::string_view kNotReports[] = {"COMPUTE-SANITIZER",           "ERROR SUMMARY",
                                                     "RACECHECK SUMMARY",           "LEAK SUMMARY",
                                                     "Target application returned", "Program hit",
                                                     "This tool is deprecated"};
  if (summary_errors) *summary_errors = -1;
  std::vector<SanitizerReport> out;
  std::vector<std::string> raw;  // the report in hand, prefix stripped
  bool in_report = false;
  auto close = [&] {
    if (in_report && !raw.empty()) {
      SanitizerReport r;
      r.finding.tool = tool;
      std::string joined;
      for (std::size_t i = 0; i < raw.size(); ++i) {
        joined += raw[i] + "\n";
        if (i < kSanitizerReportLines) r.finding.report.push_back(demangle_names(raw[i]));
      }
      r.finding.kind = r.finding.report.front();
      for (auto it = std::sregex_iterator(joined.begin(), joined.end(), mangled_name()); it != std::sregex_iterator(); ++it)
        if (std::find(r.kernels.begin(), r.kernels.end(), it->str()) == r.kernels.end()) r.kernels.push_back(it->str());
      out.push_back(std::move(r));
    }
    raw.clear();
    in_report = false;
  };
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.compare(0, kPrefix.size(), kPrefix) != 0) continue;  // the application's own output
    std::string body = line.substr(kPrefix.size());
    if (!body.empty() && body.front() == ' ') body.erase(0, 1);
    const bool blank = body.find_first_not_of(" \t") == std::string::npos;
    if (blank) {
      close();
      continue;
    }
    const bool indented = body.front() == ' ' || body.front() == '\t';
    if (indented) {
      if (in_report) raw.push_back(body.substr(body.find_first_not_of(" \t")));
      continue;
    }
    close();
    if (body.starts_with("ERROR SUMMARY:") && summary_errors) *summary_errors = std::atoi(body.c_str() + 14);
    // racecheck's own summary counts its errors too; an ERROR SUMMARY after it has the last word.
    if (body.starts_with("RACECHECK SUMMARY:") && summary_errors && *summary_errors < 0)
      *summary_errors = racecheck_errors(body);
    const bool report = std::none_of(std::begin(kNotReports), std::end(kNotReports),
                                     [&](std::string_view p) { return body.starts_with(p); });
    if (report) {
      in_report = true;
      raw.push_back(body);
    }
  }
  close();
  return out;
}

}  // namespace tune
