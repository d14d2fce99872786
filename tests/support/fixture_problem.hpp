#pragma once
// A fixture problem folder (tests/fixtures/problems/<name>) copied to a folder of the test's own,
// its problem.json edited: each test changes one thing of a folder nobody else reads.
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

namespace tune::test {

// `dir` is replaced by the copy (its parents made); `edit` changes the parsed problem.json, which
// is written back.
inline void copy_fixture_problem(const std::string& name, const std::filesystem::path& dir,
                                 const std::function<void(nlohmann::ordered_json&)>& edit) {
  namespace fs = std::filesystem;
  fs::remove_all(dir);
  fs::create_directories(dir.parent_path());
  fs::copy(fs::path(TUNE_FIXTURES) / "problems" / name, dir, fs::copy_options::recursive);
  auto json = nlohmann::ordered_json::parse(std::ifstream(dir / "problem.json"));
  edit(json);
  std::ofstream(dir / "problem.json") << json.dump(1);
}

}  // namespace tune::test
