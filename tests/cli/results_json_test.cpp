// Issue 38, item 2: `tune results --json`, the results format's one reader for Python (report/results.py):
// validated records with the fields readers derive computed, and every hand-edit of
// tests/fixtures/results/mutations.json refused in one line naming the file and the field (exit 2).
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "support/cli_run.hpp"

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

const fs::path kFixtures = TUNE_FIXTURES;

std::string slurp(const fs::path& file) {
  std::ifstream f(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

fs::path scratch(const std::string& name) {
  const fs::path dir = out_dir("results_json_" + name);
  fs::create_directories(dir);
  return dir;
}

// The text of the base file with one hand-edit of the table applied (the table's "about" says how).
std::string edited(const Json& m, const std::string& base) {
  if (m.contains("raw")) {
    std::string text = base;
    const auto old = m["raw"][0].get<std::string>();
    const auto pos = text.find(old);
    EXPECT_NE(pos, std::string::npos) << old;
    if (pos != std::string::npos) text.replace(pos, old.size(), m["raw"][1].get<std::string>());
    return text + m.value("append_text", "");
  }
  if (m.contains("truncate"))
    return base.substr(0, static_cast<std::size_t>(static_cast<double>(base.size()) * m["truncate"].get<double>()));
  Json doc = Json::parse(base);
  const Json none = Json::object(), set = m.value("set", none), remove = m.value("remove", Json::array()),
             append = m.value("append", none);
  for (const auto& [path, value] : set.items()) doc[Json::json_pointer(path)] = value;
  for (const auto& path : remove) {
    const Json::json_pointer p(path.get<std::string>());
    Json& parent = doc[p.parent_pointer()];
    if (parent.is_array())
      parent.erase(std::stoul(p.back()));
    else
      parent.erase(p.back());
  }
  for (const auto& [path, value] : append.items()) {
    Json item = value;
    if (value.is_object() && value.contains("copy")) {
      item = doc[Json::json_pointer(value["copy"].get<std::string>())];
      const Json item_set = value.value("set", none);
      for (const auto& [p, v] : item_set.items()) item[Json::json_pointer(p)] = v;
    }
    doc[Json::json_pointer(path)].push_back(item);
  }
  return doc.dump(1);
}

TEST(ResultsJson, PrintsTheValidatedRecordsWithTheFieldsReadersDerive) {
  const Result r = run("results --json " + (kFixtures / "report" / "synthetic").string());
  ASSERT_EQ(r.code, 0) << r.output;
  const Json out = Json::parse(r.output);
  EXPECT_EQ(out["kind"], "tune.results");
  ASSERT_EQ(out["records"].size(), 4u) << r.output;  // torch_baseline.json beside them is no result
  for (const Json& rec : out["records"]) {
    const fs::path file = rec["file"].get<std::string>();
    const Json& run = rec["run"];
    EXPECT_EQ(Json::parse(slurp(file)), run) << file;  // the record as written
    EXPECT_EQ(rec["device_slug"], file.parent_path().parent_path().filename().string()) << file;
    std::string tag;
    for (const auto& [k, v] : run["shape"].items()) tag += (tag.empty() ? "" : "_") + k + v.dump();
    EXPECT_EQ(rec["shape_tag"], tag);
    EXPECT_EQ(rec["shape"]["T"], "float32") << "contact's T at its default, as read_problem_result reads it";
    EXPECT_FALSE(rec["measured_on_gpu"].get<bool>());
    EXPECT_NE(rec["not_measured"].get<std::string>().find("context.isolation.worker"), std::string::npos)
        << rec["not_measured"];  // the fixtures record no worker: synthetic
  }
}

TEST(ResultsJson, EveryHandEditIsRefusedInOneLineNamingTheFileAndTheField) {
  const Json table = Json::parse(slurp(kFixtures / "results" / "mutations.json"));
  const std::string base = slurp(kFixtures / "results" / table["base"].get<std::string>());
  const auto dir = scratch("mutations");
  std::size_t i = 0;
  for (const Json& m : table["mutations"]) {
    const fs::path file = dir / fmt::format("m{}.json", i++);
    std::ofstream(file) << edited(m, base);
    const Result r = run("results --json " + file.string());
    SCOPED_TRACE(m["what"].get<std::string>());
    if (m.value("valid", false)) {
      EXPECT_EQ(r.code, 0) << r.output;
      continue;
    }
    const std::string field = m["field"].get<std::string>();
    EXPECT_EQ(r.code, 2) << r.output;
    expect_error_output(r, file.string() + ": " + field + (field == "not valid JSON" ? "" : ":"));
  }
}

// A folder's results as the report finds them: <gpu>/<problem>/<shape>.json.gz read as the .json is,
// other JSON files there passed over; a hand-edit of a .json.gz refused naming the .json.gz.
TEST(ResultsJson, AFolderTakesJsonGzAndPassesOverOtherJson) {
  const Json table = Json::parse(slurp(kFixtures / "results" / "mutations.json"));
  const fs::path base = kFixtures / "results" / table["base"].get<std::string>();
  const auto dir = scratch("folder");
  fs::create_directories(dir / "gpu" / "contact");
  ASSERT_EQ(run_command("gzip -c " + base.string() + " > " + (dir / "gpu" / "contact" / "a.json.gz").string()).code, 0);
  std::ofstream(dir / "gpu" / "contact" / "bench.json") << R"({"benchmarks": []})";
  const Result r = run("results --json " + dir.string());
  ASSERT_EQ(r.code, 0) << r.output;
  const Json out = Json::parse(r.output);
  ASSERT_EQ(out["records"].size(), 1u) << r.output;
  EXPECT_EQ(out["records"][0]["run"], Json::parse(slurp(base)));
  std::ofstream(dir / "edit.json") << edited(table["mutations"][0], slurp(base));
  ASSERT_EQ(run_command("gzip -f " + (dir / "edit.json").string() + " && mv " + (dir / "edit.json.gz").string() + " " +
                        (dir / "gpu" / "contact" / "b.json.gz").string())
                .code,
            0);
  const Result bad = run("results --json " + dir.string());
  EXPECT_EQ(bad.code, 2) << bad.output;
  expect_error_output(bad, (dir / "gpu" / "contact" / "b.json.gz").string() + ": " +
                               table["mutations"][0]["field"].get<std::string>());
}

// A link named as a results file that leads nowhere, or to itself, is refused in one line naming
// it (adversarial round 4: passed over in silence, "0 valid files").
TEST(ResultsJson, AResultsLinkToNothingIsOneLineAndExit2) {
  const auto dir = scratch("dangling");
  fs::create_directories(dir / "gpu" / "contact");
  for (const std::string& target : {std::string("/nonexistent/r.json"), (dir / "gpu" / "contact" / "r.json").string()}) {
    fs::remove(dir / "gpu" / "contact" / "r.json");
    fs::create_symlink(target, dir / "gpu" / "contact" / "r.json");
    const Result r = run("results " + dir.string());
    EXPECT_EQ(r.code, 2) << target << "\n" << r.output;
    expect_error_output(r, (dir / "gpu" / "contact" / "r.json").string() + ": a link to nothing (or a loop of links)");
  }
}

// A folder of the tree that cannot be read is refused in one line naming it (adversarial round 5: the
// walk ended there, and the listing, the report and torch_baseline.py went on with the files before it).
TEST(ResultsJson, AnUnreadableFolderIsOneLineNamingItAndExit2) {
  const auto dir = scratch("unreadable");
  for (const char* problem : {"contact", "ln_linear_gelu"}) fs::create_directories(dir / "gpu" / problem);
  fs::copy_file(kFixtures / "results" /
                    Json::parse(slurp(kFixtures / "results" / "mutations.json"))["base"].get<std::string>(),
                dir / "gpu" / "contact" / "a.json");
  for (const fs::path& closed : {dir / "gpu" / "ln_linear_gelu", dir / "gpu"}) {
    const auto r = run_with_unreadable(closed, "results " + dir.string());
    if (!r) GTEST_SKIP() << "cannot make a folder unreadable here (root without setpriv)";
    EXPECT_EQ(r->code, 2) << r->output;
    expect_error_output(*r, closed.string() + ": cannot be read (Permission denied)");
  }
}

// tune merge names the folder it cannot read (adversarial round 5: "tune: : Permission denied").
TEST(ResultsJson, MergeOfAShardFolderWithAnUnreadableFolderNamesIt) {
  const auto dir = scratch("merge_unreadable");
  fs::create_directories(dir / "s1" / "fake-gpu");
  const auto r =
      run_with_unreadable(dir / "s1" / "fake-gpu", "merge " + (dir / "s1").string() + " --out " + (dir / "out").string());
  if (!r) GTEST_SKIP() << "cannot make a folder unreadable here (root without setpriv)";
  EXPECT_EQ(r->code, 2) << r->output;
  expect_error_output(*r, (dir / "s1" / "fake-gpu").string() + ": cannot be read (Permission denied)");
}

// A byte that is not UTF-8 in a results file's name, or in an argument (the record's command line),
// is refused in one line of UTF-8 text (adversarial round 5: JSON's writer threw, exit 4).
TEST(ResultsJson, APathThatIsNotUtf8IsOneLineAndExit2) {
  const auto dir = scratch("not_utf8");
  fs::create_directories(dir / "gpu" / "contact");
  const std::string odd = "a\xff.json";
  fs::copy_file(kFixtures / "results" /
                    Json::parse(slurp(kFixtures / "results" / "mutations.json"))["base"].get<std::string>(),
                dir / "gpu" / "contact" / odd);
  for (const std::string& args : {"results --json " + dir.string(), "results " + dir.string()}) {
    const Result r = run(args);
    EXPECT_EQ(r.code, 2) << r.output;
    expect_error_output(r, (dir / "gpu" / "contact").string() + "/a\uFFFD.json: the file's path is not UTF-8 text");
  }
  const Result out =
      run_with("TUNE_WORKER_FAKE=1", "--problem contact --B 4 --N 64 --budget 5 --out " + dir.string() + "/o\xff");
  EXPECT_EQ(out.code, 2) << out.output;
  expect_error_output(out, "/o\uFFFD) is not UTF-8 text");
  EXPECT_FALSE(fs::exists(dir.string() + "/o\xff"));
}

// The format's doc table is the table the validator walks: `tune results --schema-doc` prints it, and
// docs/results-format.md holds it between its markers, so the two cannot drift.
TEST(ResultsJson, TheDocPagesTableIsTheSchemaValidationWalks) {
  const Result r = run("results --schema-doc");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(r.output.rfind("| Field | Type | Required | Minor | Values | About |\n", 0), 0u) << r.output;
  EXPECT_NE(r.output.find("| `variants[].timing.median_us` |"), std::string::npos) << r.output;
  const std::string page = slurp(fs::path(TUNE_REPO_DIR) / "docs" / "results-format.md");
  const std::string begin = "<!-- schema table: tune results --schema-doc -->\n", end = "<!-- end schema table -->";
  const auto from = page.find(begin), to = page.find(end);
  ASSERT_NE(from, std::string::npos) << "docs/results-format.md has no " << begin;
  ASSERT_NE(to, std::string::npos);
  EXPECT_EQ(page.substr(from + begin.size(), to - from - begin.size()), r.output)
      << "docs/results-format.md's table differs from the schema: paste `tune results --schema-doc` between its markers";
}

TEST(ResultsJson, WithoutPathsOrSchemaDocIsOneLineAndExit2) {
  const Result r = run("results");
  EXPECT_EQ(r.code, 2) << r.output;
  expect_error_output(r, "tune: paths is required (tune results --help lists the options)");
  const Result both = run("results --schema-doc " + (kFixtures / "results").string());
  EXPECT_EQ(both.code, 2) << both.output;
  expect_error_output(both, "excludes");
}

TEST(ResultsJson, AMissingPathIsOneLineAndExit2) {
  const Result r = run("results --json /nonexistent/results");
  EXPECT_EQ(r.code, 2) << r.output;
  expect_error_output(r, "/nonexistent/results: no such file or folder");
}

// Adversarial round 7: files no tune writes, beside the results, that editors and copies leave (an
// Emacs lock link .#<shape>.json to nothing, macOS's ._<shape>.json) and other tools' JSON:
// tune results refused the folder (a link to nothing, not valid JSON) and tune merge refused the
// other JSON that tune results passes over. Each reader of a folder passes them over; a file named
// as tune names one that is not valid is still refused.
TEST(ResultsJson, HiddenFilesAndOtherJsonInAFolderArePassedOverByEveryReader) {
  const auto dir = scratch("hidden");
  const std::string affine = std::string(TUNE_FIXTURES) + "/problems/affine";
  for (int k = 0; k < 2; ++k) {
    const Result r = run(fmt::format("--problem {} --R 8 --compile-only --shard {}/2 --out {}/s{} --cache-dir {}/cache",
                                     affine, k, dir.string(), k, dir.string()));
    ASSERT_EQ(r.code, 0) << r.output;
  }
  const auto litter = [](const fs::path& folder, const std::string& stem) {
    fs::create_symlink("user@host.1234:1700000000", folder / (".#" + stem + ".json"));
    std::ofstream(folder / ("._" + stem + ".json"), std::ios::binary) << std::string("\0\5\26\7\0\2", 6);
    std::ofstream(folder / "notes.json") << R"({"kind": "notes", "text": "shards of Tuesday"})";
  };
  const fs::path shard1 = dir / "s1" / "compile-only-sm_90" / "affine";
  litter(shard1, "R8_L64.shard-1-of-2");
  const Result merged =
      run("merge " + (dir / "s0").string() + " " + (dir / "s1").string() + " --out " + (dir / "m").string());
  ASSERT_EQ(merged.code, 0) << merged.output;
  const fs::path folder = dir / "m" / "compile-only-sm_90" / "affine";
  ASSERT_TRUE(fs::exists(folder / "R8_L64.json")) << merged.output;
  litter(folder, "R8_L64");
  for (const std::string& args : {"results " + (dir / "m").string(), "results --json " + (dir / "m").string()}) {
    const Result r = run(args);
    EXPECT_EQ(r.code, 0) << args << "\n" << r.output;
  }
  const Json listed = Json::parse(run("results --json " + (dir / "m").string()).output);
  ASSERT_EQ(listed["records"].size(), 1u);
  EXPECT_EQ(listed["records"][0]["file"], (folder / "R8_L64.json").string());
  // A file of tune's naming that is no valid JSON (an empty one: a write cut short) is still refused.
  std::ofstream(folder / "R16_L64.json").flush();
  const Result empty = run("results " + (dir / "m").string());
  EXPECT_EQ(empty.code, 2) << empty.output;
  expect_error_output(empty, (folder / "R16_L64.json").string() + ": not valid JSON");
}

}  // namespace
