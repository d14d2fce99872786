// Where problems come from: a path, the --problem-path folders, $TUNE_PROBLEM_PATH, then the
// built-in folder installed with tune. Each problem file is loaded once per process.
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>

#include <fmt/format.h>

#include "core/json_file.hpp"
#include "core/layout.hpp"
#include "problem/init.hpp"
#include "tune/errors.hpp"
#include "tune/problem.hpp"

namespace tune {
namespace {

std::mutex g_mutex;
std::vector<std::filesystem::path> g_user_dirs;

std::map<std::string, std::unique_ptr<Problem>>& loaded() {
  static std::map<std::string, std::unique_ptr<Problem>> problems;
  return problems;
}

std::vector<std::filesystem::path> split_path(const char* text) {
  std::vector<std::filesystem::path> out;
  if (!text) return out;
  const std::string s(text);
  for (std::size_t pos = 0; pos <= s.size();) {
    const auto colon = s.find(':', pos);
    const std::string item = s.substr(pos, colon == std::string::npos ? std::string::npos : colon - pos);
    if (!item.empty()) out.emplace_back(item);
    if (colon == std::string::npos) break;
    pos = colon + 1;
  }
  return out;
}

// The search path, in order, with where each folder came from.
std::vector<std::pair<std::filesystem::path, std::string>> search_path() {
  std::vector<std::pair<std::filesystem::path, std::string>> out;
  {
    const std::lock_guard lock(g_mutex);
    for (const auto& d : g_user_dirs) out.emplace_back(d, "--problem-path");
  }
  for (const auto& d : split_path(std::getenv("TUNE_PROBLEM_PATH"))) out.emplace_back(d, "TUNE_PROBLEM_PATH");
  for (const auto& d : builtin_problem_dirs()) out.emplace_back(d, "built-in");
  return out;
}

bool looks_like_path(std::string_view s) {
  return s.find('/') != std::string_view::npos || s.ends_with(".json") || s == "." || s == "..";
}

const Problem& load_file(const std::filesystem::path& file) {
  std::error_code ec;
  const std::string key = std::filesystem::weakly_canonical(std::filesystem::absolute(file), ec).string();
  const std::lock_guard lock(g_mutex);
  auto& map = loaded();
  if (auto it = map.find(key); it != map.end()) return *it->second;
  auto problem = Problem::load(file);
  const Problem& ref = *problem;
  map.emplace(key, std::move(problem));
  return ref;
}

// The problem a folder's problem.json names; "" when it cannot be read (--problem NAME finds the
// folder and says what is wrong with its file).
std::string named_problem(const std::filesystem::path& file) {
  try {
    const auto j = json_file::read(file);
    return j.is_object() && j.contains("problem") && j.at("problem").is_string() ? j.at("problem").get<std::string>() : "";
  } catch (const std::exception&) {
    return "";
  }
}

// The line for a name no folder has: the names --problem takes, then the folders it cannot take by
// their name (their file names another problem).
std::string unknown_problem(const std::string& spec, const std::vector<std::string>& searched) {
  std::vector<std::string> usable, misnamed;
  for (const ProblemLocation& l : list_problems()) {
    const std::string named = named_problem(l.file);
    if (named.empty() || named == l.name)
      usable.push_back(l.name);
    else
      misnamed.push_back(fmt::format("{} (names problem '{}'; make the folder's name and the file's agree)",
                                     l.file.parent_path().string(), named));
  }
  return fmt::format("unknown problem '{}'; known problems: {} (searched {}; pass a folder, or --problem-path DIR){}", spec,
                     usable.empty() ? "none" : fmt::format("{}", fmt::join(usable, ", ")),
                     searched.empty() ? "no folder" : fmt::format("{}", fmt::join(searched, ", ")),
                     misnamed.empty() ? "" : fmt::format("; not usable by name: {}", fmt::join(misnamed, ", ")));
}

}  // namespace

void set_problem_path(std::vector<std::filesystem::path> dirs) {
  // --problem-path A:B is a colon list (docs/problem-format.md), as $TUNE_PROBLEM_PATH is.
  std::vector<std::filesystem::path> split;
  for (const auto& d : dirs)
    for (auto& item : split_path(d.c_str())) split.push_back(std::move(item));
  const std::lock_guard lock(g_mutex);
  g_user_dirs = std::move(split);
}

std::vector<std::filesystem::path> builtin_problem_dirs() {
  std::error_code ec;
  if (const auto dir = own_data_dir(); dir && std::filesystem::is_directory(*dir / "configs", ec)) return {*dir / "configs"};
  return {};
}

const Problem& find_problem(std::string_view name_or_path) {
  const std::string spec(name_or_path);
  if (spec.empty()) throw InputError("--problem is empty; name a problem (tune list shows them) or a problem folder");
  auto file_of = [](const std::filesystem::path& p) {
    std::error_code ec;
    return std::filesystem::is_directory(p, ec) ? p / "problem.json" : p;
  };
  if (looks_like_path(spec)) {
    const auto file = file_of(spec);
    std::error_code ec;
    if (!std::filesystem::is_regular_file(file, ec))
      throw InputError(
          fmt::format("no problem at {} (a problem is a folder with a problem.json; see docs/problem-format.md)",
                      file.string()));
    return load_file(file);
  }
  std::vector<std::string> searched;
  for (const auto& [dir, origin] : search_path()) {
    const auto file = dir / spec / "problem.json";
    std::error_code ec;
    if (std::filesystem::is_regular_file(file, ec)) {
      const Problem& p = load_file(file);
      if (p.name() != spec)
        throw ConfigError(
            fmt::format("{}: names problem '{}' but its folder is '{}'; make the two agree", file.string(), p.name(), spec));
      return p;
    }
    searched.push_back(dir.string());
  }
  // A folder in the current directory, named without a slash.
  if (std::error_code ec; std::filesystem::is_regular_file(std::filesystem::path(spec) / "problem.json", ec))
    return load_file(std::filesystem::path(spec) / "problem.json");
  throw InputError(unknown_problem(spec, searched));
}

std::vector<ProblemLocation> list_problems() {
  std::vector<ProblemLocation> out;
  for (const auto& [dir, origin] : search_path()) {
    std::error_code ec;
    std::vector<std::filesystem::path> entries;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec))
      if (std::filesystem::is_regular_file(e.path() / "problem.json")) entries.push_back(e.path());
    std::sort(entries.begin(), entries.end());
    for (const auto& e : entries) {
      const std::string name = e.filename().string();
      if (std::any_of(out.begin(), out.end(), [&](const ProblemLocation& l) { return l.name == name; })) continue;
      out.push_back({name, e / "problem.json", origin});
    }
  }
  return out;
}

std::vector<std::string> problem_names() {
  std::vector<std::string> out;
  for (const auto& l : list_problems()) out.push_back(l.name);
  return out;
}

BuiltinReference builtin_reference(const std::string& name) {
  if (name == "contact") return &contact_reference;
  if (name == "scene_graph") return &scene_graph_reference;
  return nullptr;
}

std::vector<std::string> builtin_reference_names() { return {"contact", "scene_graph"}; }

}  // namespace tune
