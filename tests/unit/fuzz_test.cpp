// Property tests for the readers of user-supplied files (search spaces, results, golden cases):
// seeded random mutations of valid files, textual (flipped, inserted, deleted bytes, truncation)
// and structural (a node replaced by another type, a key dropped), must give tune's one-line
// InputError family or parse, never another exception or a crash. Bounded: a few thousand cases.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tune/errors.hpp"
#include "tune/io.hpp"
#include "tune/problem.hpp"
#include "tune/record.hpp"
#include "tune/space.hpp"

namespace tune {
namespace {

using Json = nlohmann::ordered_json;

std::string slurp(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::string mutate_text(std::string s, std::mt19937_64& rng) {
  if (s.empty()) return s;
  switch (rng() % 5) {
    case 0:
      s[rng() % s.size()] = static_cast<char>(rng() % 128);
      break;
    case 1:
      s.insert(rng() % s.size(), 1, "{}[],:\"0-e."[rng() % 11]);
      break;
    case 2: {
      const std::size_t a = rng() % s.size();
      s.erase(a, 1 + rng() % 16);
      break;
    }
    case 3:
      s.resize(rng() % s.size());
      break;
    default: {
      const std::size_t a = rng() % s.size();
      s.insert(rng() % s.size(), s.substr(a, 1 + rng() % 32));
    }
  }
  return s;
}

Json random_value(std::mt19937_64& rng) {
  switch (rng() % 7) {
    case 0:
      return nullptr;
    case 1:
      return -1;
    case 2:
      return 1e300;
    case 3:
      return "x";
    case 4:
      return Json::array({1, "a"});
    case 5:
      return Json::object();
    default:
      return true;
  }
}

// Replaces one random node (or drops one key) somewhere in the document.
void mutate_tree(Json& j, std::mt19937_64& rng, int depth = 0) {
  if ((j.is_object() || j.is_array()) && !j.empty() && (depth < 2 || rng() % 3 != 0)) {
    const std::size_t k = rng() % j.size();
    auto it = j.begin();
    std::advance(it, static_cast<std::ptrdiff_t>(k));
    if (j.is_object() && rng() % 4 == 0) {
      j.erase(it);
      return;
    }
    mutate_tree(*it, rng, depth + 1);
    return;
  }
  j = random_value(rng);
}

// Runs `read` on `cases` mutations of `valid` (TUNE_FUZZ_PERCENT of them: the sanitized run takes
// fewer); anything but success or an InputError fails.
void fuzz(const std::string& what, const std::string& valid, const std::function<void(const std::string&)>& read,
          int cases) {
  if (const char* percent = std::getenv("TUNE_FUZZ_PERCENT")) cases = std::max(20, cases * std::atoi(percent) / 100);
  std::mt19937_64 rng(2026);
  const Json parsed = Json::parse(valid);
  int rejected = 0;
  for (int c = 0; c < cases; ++c) {
    std::string text;
    if (c % 2 == 0) {
      text = mutate_text(valid, rng);
    } else {
      Json j = parsed;
      mutate_tree(j, rng);
      text = j.dump();
    }
    try {
      read(text);
    } catch (const InputError&) {
      ++rejected;
    } catch (const std::exception& e) {
      ADD_FAILURE() << what << ", case " << c << ": " << e.what() << "\n" << text.substr(0, 400);
      return;
    }
  }
  EXPECT_GT(rejected, cases / 4) << what << ": most mutations should be refused";
}

// A reader of text: writes it to a scratch file and calls `read` on the path, as a user's file would be read.
std::function<void(const std::string&)> from_file(const std::string& name,
                                                  std::function<void(const std::filesystem::path&)> read) {
  return [name, read](const std::string& text) {
    const auto path = std::filesystem::temp_directory_path() / name;
    std::ofstream(path) << text;
    read(path);
  };
}

TEST(Fuzz, SearchSpaceFiles) {
  for (const std::string problem : {"contact", "scene_graph"}) {
    const auto file = std::filesystem::path(TUNE_SOURCE_DIR) / "configs" / problem / "problem.json";
    // The mutated file lies in /tmp: its template is found in the problem's template folder.
    const std::vector<std::filesystem::path> templates{std::filesystem::path(TUNE_SOURCE_DIR) / "kernel_templates" /
                                                       problem};
    fuzz(file.string(), slurp(file),
         from_file("tune_fuzz_space.json", [&](const auto& p) { (void)Space::load(p, templates); }), 1500);
  }
}

// The problem keys (tensors, init, edits, edge_cases, deterministic, work, reference) through
// Problem::load, and the data a surviving file draws, its edge cases' too: a mutated problem file
// is refused with an InputError or works.
TEST(Fuzz, ProblemFiles) {
  const auto source = std::filesystem::path(TUNE_SOURCE_DIR) / "configs" / "scene_graph";
  const auto dir = std::filesystem::temp_directory_path() / "tune_fuzz_problem";
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(source / "reference.py", dir / "reference.py",
                             std::filesystem::copy_options::overwrite_existing);
  const Shape shape({{"B", 2}, {"N", 3}, {"D", 8}, {"heads", 2}, {"P", 4}});
  // Outside configs/ a folder whose tensors differ from scene_graph's may not name its built-in
  // reference (issue 34 #9): without it, a mutated tensor reaches the data draws, not that refusal.
  std::string seed = slurp(source / "problem.json");
  const std::string builtin = R"(, "builtin": "scene_graph")";
  ASSERT_NE(seed.find(builtin), std::string::npos);
  seed.erase(seed.find(builtin), builtin.size());
  fuzz((source / "problem.json").string(), seed,
       [&](const std::string& text) {
         std::ofstream(dir / "problem.json") << text;
         const auto problem = Problem::load(dir / "problem.json");
         if (problem->dims().size() != 5) return;
         try {
           problem->check_shape(shape);
         } catch (const InputError&) {
           return;
         }
         (void)problem->make_data(shape, 1, DataPurpose::kParity);
         for (const auto& name : problem->edge_cases(shape)) (void)problem->make_edge_case(shape, 1, name);
         (void)problem->deterministic();
         (void)problem->counts(shape);
       },
       1500);
}

TEST(Fuzz, ResultFiles) {
  // The result of record is kept as .json.gz (issue 23): its text as tune wrote it (to_json round-trips).
  const auto file =
      std::filesystem::path(TUNE_SOURCE_DIR) / "results" / "h200" / "scene_graph" / "B4_N24_D96_heads4_P16.json.gz";
  fuzz(file.string(), to_json(read_result(file)).dump(2) + "\n",
       from_file("tune_fuzz_result.json", [](const auto& p) { (void)read_result(p); }), 600);
}

TEST(Fuzz, GoldenFiles) {
  const auto file =
      std::filesystem::path(TUNE_SOURCE_DIR) / "configs" / "scene_graph" / "golden" / "scene_graph_B2_N6_D16_H2_P4.json";
  fuzz(file.string(), slurp(file), from_file("tune_fuzz_golden.json", [](const auto& p) { (void)read_golden(p); }), 1500);
}

}  // namespace
}  // namespace tune
