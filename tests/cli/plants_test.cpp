// The planted defects (tests/plants/*.json, tools/plant.py): copies of a shipped template with one
// known bug each, for showing that the correctness gate catches what parity on one launch lets
// through. Without a GPU: every plant's `find` text occurs exactly once in the shipped file, the
// folder plant.py builds from it compiles its variants with the defect (NVRTC, at the plant's
// shape), and plant.py refuses a plant whose text is not there, exit 2 with one line.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/cli_run.hpp"
#include "support/paths.hpp"

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

const fs::path kRepo = tune::test::repo_dir();
const fs::path kPlants = kRepo / "tests" / "plants";

std::string slurp(const fs::path& file) {
  std::ifstream f(file);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

Json read_json(const fs::path& file) { return Json::parse(std::ifstream(file)); }

std::vector<fs::path> plant_files() {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(kPlants))
    if (e.path().extension() == ".json") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

// The shipped file a plant edits: `file` in the folder of its problem's template.
fs::path shipped_file(const Json& plant) {
  const fs::path problem_dir = kRepo / "configs" / plant.at("problem").get<std::string>();
  const Json problem = read_json(problem_dir / "problem.json");
  return (problem_dir / problem.at("template").get<std::string>()).parent_path() / plant.at("file").get<std::string>();
}

std::size_t occurrences(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

Result run_plant(const std::string& plant, const fs::path& out) {
  return run_command(std::string(TUNE_PYTHON) + " " + (kRepo / "tools" / "plant.py").string() + " " + plant + " " +
                     out.string());
}

TEST(Plants, EachFindTextOccursExactlyOnceInTheShippedFile) {
  const std::set<std::string> tools{"racecheck", "memcheck", "synccheck", "initcheck", "determinism", "parity"};
  const auto files = plant_files();
  ASSERT_GE(files.size(), 3u);
  for (const fs::path& f : files) {
    SCOPED_TRACE(f.string());
    const Json plant = read_json(f);
    for (const char* key : {"problem", "description", "kind", "caught_by", "file", "find", "replace", "affects"})
      ASSERT_TRUE(plant.contains(key) && plant.at(key).is_string()) << key;
    EXPECT_TRUE(tools.count(plant.at("caught_by").get<std::string>())) << plant.at("caught_by");
    ASSERT_TRUE(plant.contains("shape") && plant.at("shape").is_object());
    const fs::path shipped = shipped_file(plant);
    ASSERT_TRUE(fs::is_regular_file(shipped)) << shipped;
    EXPECT_EQ(occurrences(slurp(shipped), plant.at("find").get<std::string>()), 1u) << shipped;
  }
}

// The variants with the defect (the plant's `affects`, through the folder's affected.json) compile
// at the plant's shape; the rest of the space compiles the shipped code.
TEST(Plants, EachPlantedFolderCompilesItsVariantsWithTheDefect) {
  const std::string root = out_dir("plants");
  for (const fs::path& f : plant_files()) {
    const std::string name = f.stem().string();
    SCOPED_TRACE(name);
    const Json plant = read_json(f);
    const fs::path dir = fs::path(root) / name;
    const Result p = run_plant(name, dir);
    ASSERT_EQ(p.code, 0) << p.output;
    for (const char* file : {"problem.json", "affected.json", "reference.py", "PLANTED.md"})
      EXPECT_TRUE(fs::is_regular_file(dir / file)) << file;
    const std::string planted = slurp(dir / plant.at("file").get<std::string>());
    EXPECT_EQ(occurrences(planted, plant.at("replace").get<std::string>()), 1u);
    EXPECT_EQ(occurrences(planted, plant.at("find").get<std::string>()), 0u);
    EXPECT_NE(slurp(dir / "PLANTED.md").find("PLANTED DEFECT"), std::string::npos);
    const Json problem = read_json(dir / "problem.json");
    EXPECT_EQ(problem.at("problem"), name);
    EXPECT_FALSE(problem.contains("golden"));

    std::string shape_args, shape_name;
    for (const auto& [dim, value] : plant.at("shape").items()) {
      shape_args += " --" + dim + " " + std::to_string(value.get<int>());
      shape_name += (shape_name.empty() ? "" : "_") + dim + std::to_string(value.get<int>());
    }
    const std::string out = root + "/out_" + name;
    const Result c = run("--problem " + dir.string() + " --config " + (dir / "affected.json").string() + shape_args +
                         " --compile-only --budget 3 --cache-dir " + root + "/cache --out " + out);
    ASSERT_EQ(c.code, 0) << c.output;
    const fs::path result_dir = fs::path(out) / "compile-only-sm_90" / name;
    ASSERT_TRUE(fs::is_directory(result_dir)) << c.output;
    std::vector<fs::path> results;  // <shape>_C64_H32.json: the plant's dims, then the defaults
    for (const auto& e : fs::directory_iterator(result_dir)) {
      const std::string file = e.path().filename().string();
      if (e.path().extension() == ".json" && file.rfind(shape_name + "_", 0) == 0) results.push_back(e.path());
    }
    ASSERT_EQ(results.size(), 1u) << c.output;
    const Json j = read_json(results[0]);
    ASSERT_GE(j.at("variants").size(), 3u) << c.output;  // and the baseline, where it has the defect
    ASSERT_LE(j.at("variants").size(), 4u) << c.output;
    for (const auto& v : j.at("variants")) EXPECT_EQ(v.at("status"), "compiled") << v.dump();
  }
}

TEST(Plants, PlantPyRefusesAFindTextThatIsNotThereExactlyOnce) {
  const std::string root = out_dir("plants_refused");
  fs::create_directories(root);
  Json plant = read_json(kPlants / "contact_copy_wait_race.json");
  auto refused = [&](const std::string& find, const std::string& count) {
    plant["find"] = find;
    const fs::path file = fs::path(root) / "bad_plant.json";
    std::ofstream(file) << plant.dump(1);
    const fs::path dir = fs::path(root) / "folder";
    const Result r = run_plant(file.string(), dir);
    EXPECT_EQ(r.code, 2) << r.output;
    EXPECT_EQ(occurrences(r.output, "\n"), 1u) << r.output;
    EXPECT_EQ(r.output.rfind("plant.py: ", 0), 0u) << r.output;
    EXPECT_NE(r.output.find("'find' occurs " + count + " times"), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(dir)) << "nothing is written";
  };
  refused("no such text in the template", "0");
  const std::string repeated = "copy_commit();";
  refused(repeated, std::to_string(occurrences(slurp(shipped_file(plant)), repeated)));
}

}  // namespace
