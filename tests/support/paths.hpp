#pragma once
// Where the repo's data is: $TUNE_REPO_DIR when set (a GPU machine runs the tests from a copy of
// the tree elsewhere), else the source tree, fixed at configure time. The golden cases live in
// the problem folders: configs/<problem>/golden/.
#include <cstdlib>
#include <filesystem>
#include <string>

namespace tune::test {

inline std::filesystem::path repo_dir() {
  const char* env = std::getenv("TUNE_REPO_DIR");
  return env && *env ? env : TUNE_REPO_DIR;
}

inline std::filesystem::path golden_dir(const std::string& problem) { return repo_dir() / "configs" / problem / "golden"; }

// A golden case by file name: "contact_B3_N5_C8_H4.json" lives in configs/contact/golden/.
inline std::filesystem::path golden_file(const std::string& name) {
  const std::string problem = name.rfind("scene_graph_", 0) == 0 ? "scene_graph" : name.substr(0, name.find('_'));
  return golden_dir(problem) / name;
}

}  // namespace tune::test
