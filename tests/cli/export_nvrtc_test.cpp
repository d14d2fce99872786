// Issue 38, item 2: `tune export nvrtc`, the one reader bench/ uses for its NVRTC build: the sources
// as tune hands them to NVRTC, each results file's options and finalists (in tune's interleave
// order, kernels named as tune lowers them now), the files read; refusals in one line (exit 2); and
// bench/embed_nvrtc.py writing the header from it.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/cli_run.hpp"

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

const fs::path kFixtures = TUNE_FIXTURES;
const fs::path kResults = kFixtures / "merge" / "affine_typed";

std::string slurp(const fs::path& file) {
  std::ifstream f(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

void write(const fs::path& file, const std::string& text) {
  fs::create_directories(file.parent_path());
  std::ofstream(file, std::ios::binary) << text;
}

std::string python() {
  const char* p = std::getenv("TUNE_PYTHON");
  return p && *p ? p : "python3";
}

// A copy of the affine_typed fixture whose kernel includes a header that includes its neighbour by
// a name relative to itself: NVRTC gets that #include rewritten to the name it knows the file by.
fs::path typed_problem(const std::string& name) {
  const fs::path dir = fs::path(out_dir("export_nvrtc_" + name)) / "affine_typed";
  fs::create_directories(dir);
  fs::copy(kFixtures / "problems" / "affine_typed", dir, fs::copy_options::recursive);
  write(dir / "detail" / "types.cuh", "#pragma once\nusing fixture_index = long long;\n");
  write(dir / "detail" / "convert.cuh", "#pragma once\n#include \"types.cuh\"\n");
  write(dir / "kernel.cuh", "#include \"detail/convert.cuh\"\n" + slurp(dir / "kernel.cuh"));
  return dir;
}

std::string results_args() {
  std::string s;
  for (const char* f : {"fixture_h200_R64_L64_bfloat16.json", "fixture_h200_R64_L64.json", "fixture_h200_R256_L64.json"})
    s.append(1, ' ').append((kResults / f).string());
  return s;
}

// tune's stdout alone: the JSON. Its notes go to stderr (a record tuned on other sources than the
// copy's, as these fixtures' are: the copy's kernel includes a header of its own).
Result run_stdout(const std::string& args) {
  return run_command("{ " + std::string(TUNE_EXE) + " " + args + " 2>/dev/null; }");
}

std::vector<std::string> names(const Json& list, const char* key) {
  std::vector<std::string> out;
  for (const Json& x : list) out.push_back(x.at(key).get<std::string>());
  return out;
}

TEST(ExportNvrtc, PrintsTheSourcesAsNvrtcGetsThemAndEachRecordsFinalists) {
  const fs::path problem = typed_problem("print");
  const Result r = run_stdout("export nvrtc --problem " + problem.string() + results_args());
  ASSERT_EQ(r.code, 0) << r.output;
  const Json out = Json::parse(r.output);
  EXPECT_EQ(out["kind"], "tune.export_nvrtc");
  EXPECT_EQ(out["problem"], "affine_typed");
  EXPECT_EQ(out["template"]["name"], "kernel.cuh");
  EXPECT_EQ(out["template"]["text"], slurp(problem / "kernel.cuh"));
  EXPECT_EQ(names(out["headers"], "name"), (std::vector<std::string>{"detail/convert.cuh", "detail/types.cuh"}));
  EXPECT_EQ(out["headers"][0]["text"], "#pragma once\n#include \"detail/types.cuh\"\n");  // as NVRTC knows it

  // By shape stem; the finalists (a search and a strict timing) by search median, the baseline among them.
  ASSERT_EQ(out["records"].size(), 3u);
  EXPECT_EQ(names(out["records"], "shape_name"),
            (std::vector<std::string>{"fixture_h200_R256_L64", "fixture_h200_R64_L64", "fixture_h200_R64_L64_bfloat16"}));
  const Json& rec = out["records"][1];
  EXPECT_EQ(rec["compile_options"],
            Json::parse(slurp(kResults / "fixture_h200_R64_L64.json"))["context"]["compile_options"]);
  EXPECT_EQ(names(rec["finalists"], "name"), (std::vector<std::string>{"block=64,per_thread=4", "block=128,per_thread=4",
                                                                       "block=128,per_thread=2", "block=128,per_thread=1"}));
  const Json& first = rec["finalists"][0];
  EXPECT_EQ(first["baseline"], false);
  EXPECT_EQ(rec["finalists"][3]["baseline"], true);
  EXPECT_DOUBLE_EQ(first["search_median_us"].get<double>(), 20.1);
  EXPECT_DOUBLE_EQ(first["strict_median_us"].get<double>(), 20.1);
  EXPECT_EQ(first["launches"], Json::parse(R"([{"name_expression": "affine_kernel<float,64,64,64,4>", "grid": [16, 1, 1],
                                                "block": [64, 1, 1], "dynamic_smem_bytes": 0}])"));
  EXPECT_EQ(out["records"][2]["finalists"][0]["launches"][0]["name_expression"].get<std::string>().rfind(
                "affine_kernel<__nv_bfloat16,", 0),
            0u);

  // The files read, for a depfile: the problem file, the template, its headers, the results.
  const std::vector<std::string> read = out["files_read"].get<std::vector<std::string>>();
  for (const fs::path& f : {problem / "problem.json", problem / "kernel.cuh", problem / "detail" / "convert.cuh",
                            problem / "detail" / "types.cuh", kResults / "fixture_h200_R64_L64.json"})
    EXPECT_NE(std::find(read.begin(), read.end(), fs::weakly_canonical(f).string()), read.end()) << f << "\n" << r.output;
}

// A record older than the dtype variable T (no T in its shape, kernels named without it) was tuned in
// T's default: its finalists' kernels are named with float, as tune lowers them now.
TEST(ExportNvrtc, NamesTheKernelsOfARecordOlderThanADtypeVariableWithItsDefault) {
  const fs::path problem = typed_problem("older");
  Json old = Json::parse(slurp(kResults / "fixture_h200_R64_L64.json"));
  old["shape"].erase("T");
  for (Json& v : old["variants"])
    for (Json& l : v["launches"]) {
      const std::string k = l["kernel"].get<std::string>();
      const std::size_t at = k.find("<float,");
      ASSERT_NE(at, std::string::npos) << k;
      l["kernel"] = k.substr(0, at + 1) + k.substr(at + 7);
    }
  const fs::path file = fs::path(out_dir("export_nvrtc_older_results")) / "fixture_h200_R64_L64.json";
  write(file, old.dump(1));
  const Result now =
      run_stdout("export nvrtc --problem " + problem.string() + " " + (kResults / "fixture_h200_R64_L64.json").string());
  const Result before = run_stdout("export nvrtc --problem " + problem.string() + " " + file.string());
  ASSERT_EQ(now.code, 0) << now.output;
  ASSERT_EQ(before.code, 0) << before.output;
  EXPECT_EQ(Json::parse(before.output)["records"][0]["finalists"], Json::parse(now.output)["records"][0]["finalists"]);
}

// --all-variants (tools/cubin_identity.py's sample): every variant of each record, in its order, with
// its status and its kernels named as tune lowers its configuration now: a record older than T with
// T's default; a variant that recorded no launches lists none. Without it, the finalists only.
TEST(ExportNvrtc, AllVariantsListsEveryVariantLoweredNow) {
  const fs::path problem = typed_problem("all_variants");
  Json old = Json::parse(slurp(kResults / "fixture_h200_R64_L64.json"));
  old["shape"].erase("T");
  for (Json& v : old["variants"])
    for (Json& l : v["launches"]) l["kernel"] = "affine_kernel<64,64>";  // no T, and not what tune lowers now
  old["variants"][1]["status"] = "compile_failed";
  old["variants"][1]["reason"] = "compile failed: fixture";
  old["variants"][1]["launches"] = Json::array();
  const fs::path file = fs::path(out_dir("export_nvrtc_all_variants_results")) / "fixture_h200_R64_L64.json";
  write(file, old.dump(1));

  const Result r = run_stdout("export nvrtc --all-variants --problem " + problem.string() + " " + file.string());
  ASSERT_EQ(r.code, 0) << r.output;
  const Json out = Json::parse(r.output);
  const Json& rec = out["records"][0];
  ASSERT_EQ(rec["variants"].size(), old["variants"].size()) << r.output;
  EXPECT_EQ(names(rec["variants"], "name"), names(old["variants"], "name"));
  EXPECT_EQ(rec["variants"][0]["status"], "passed");
  EXPECT_EQ(rec["variants"][3]["baseline"], true);
  EXPECT_EQ(rec["variants"][0]["launches"][0]["name_expression"], "affine_kernel<float,64,64,64,1>");
  EXPECT_EQ(rec["variants"][8]["launches"][0]["name_expression"], "affine_kernel<float,64,64,256,4>");
  EXPECT_EQ(rec["variants"][1]["status"], "compile_failed");
  EXPECT_EQ(rec["variants"][1]["reason"], "compile failed: fixture");
  EXPECT_EQ(rec["variants"][1]["launches"], Json::array());
  EXPECT_EQ(rec["finalists"].size(), 4u);

  const Result plain = run_stdout("export nvrtc --problem " + problem.string() + " " + file.string());
  ASSERT_EQ(plain.code, 0) << plain.output;
  EXPECT_FALSE(Json::parse(plain.output)["records"][0].contains("variants"));
}

TEST(ExportNvrtc, WithoutResultsPrintsTheSourcesAloneAndWritesOut) {
  const fs::path problem = typed_problem("alone");
  const fs::path file = fs::path(out_dir("export_nvrtc_alone_out")) / "export.json";
  const Result r = run("export nvrtc --problem " + problem.string() + " -o " + file.string());
  ASSERT_EQ(r.code, 0) << r.output;
  const Json out = Json::parse(slurp(file));
  EXPECT_EQ(out["records"], Json::array());
  EXPECT_EQ(out["headers"].size(), 2u);
}

TEST(ExportNvrtc, RefusesABadResultsFileAnotherProblemAndNothingToRead) {
  const fs::path problem = typed_problem("refuse");
  const fs::path bad = fs::path(out_dir("export_nvrtc_bad")) / "fixture_h200_R64_L64.json";
  const std::string text = slurp(kResults / "fixture_h200_R64_L64.json");
  write(bad, text.substr(0, text.size() / 2));
  Result r = run("export nvrtc --problem " + problem.string() + " " + bad.string());
  EXPECT_EQ(r.code, 2) << r.output;
  expect_error_output(r, bad.string());

  const fs::path contact = kFixtures / "results" / "contact_B4_N64_C64_H32.json";
  r = run("export nvrtc --problem " + problem.string() + results_args() + " " + contact.string());
  EXPECT_EQ(r.code, 2) << r.output;
  expect_error_output(r, contact.string() + ": results of problem contact, not affine_typed");

  r = run("export nvrtc");
  EXPECT_EQ(r.code, 2) << r.output;
  expect_error_output(r, "no results files and no --problem");
}

// A record of an older space, whose parameter has since been renamed (as scene_graph's outmma and
// outbfly became out): one line naming the file, the variant and the space, exit 2, with or without
// --all-variants; nothing is lowered under another configuration.
TEST(ExportNvrtc, RefusesARecordWhoseVariantsNoLongerFitTheSpaceInOneLine) {
  const fs::path problem = typed_problem("old_space");
  std::string space = slurp(problem / "problem.json");
  for (std::size_t at = space.find("per_thread"); at != std::string::npos; at = space.find("per_thread", at))
    space.replace(at, std::string("per_thread").size(), "lanes_per");
  write(problem / "problem.json", space);
  const std::string file = (kResults / "fixture_h200_R64_L64.json").string();
  for (const std::string extra : {"", " --all-variants"}) {
    const Result r = run("export nvrtc" + extra + " --problem " + problem.string() + " " + file);
    EXPECT_EQ(r.code, 2) << r.output;
    expect_error_output(r, file + ": variant block=64,per_thread=4 does not fit " + (problem / "problem.json").string() +
                               ": unknown parameter 'per_thread'");
  }
}

// Adversarial round 4: export nvrtc checked less than tune header: a finalist's hand-edited grid
// was exported (and launched by bench/), and so was a record whose shape the problem now refuses.
// Both readers refuse both, in one line naming the file (exit 2).
TEST(ExportNvrtc, RefusesAFinalistsEditedGeometryAndAShapeTheProblemRefusesAsTuneHeaderDoes) {
  const fs::path problem = typed_problem("geometry");
  const fs::path dir = out_dir("export_nvrtc_geometry_records");
  Json record = Json::parse(slurp(kResults / "fixture_h200_R64_L64.json"));
  const std::string winner = record.at("summary").at("winner").get<std::string>();
  for (Json& v : record.at("variants"))
    if (v.at("name") == winner) v.at("launches").at(0).at("grid") = Json::array({999, 1, 1});
  const fs::path edited = dir / "edited" / "fixture_h200_R64_L64.json";
  write(edited, record.dump());
  for (const std::string& command :
       {"export nvrtc --problem " + problem.string(),
        "header --config " + (problem / "problem.json").string() + " -o " + (dir / "edited.hpp").string()}) {
    const Result r = run_with("TUNE_PROBLEM_PATH=" + problem.parent_path().string(), command + " " + edited.string());
    EXPECT_EQ(r.code, 2) << command << "\n" << r.output;
    expect_error_output(r, edited.string() + ": variant " + winner + " launch 0 recorded grid [999,1,1]");
  }

  std::string text = slurp(problem / "problem.json");
  const std::string limit = R"J({"expr": "R <= 32", "message": "R must be at most 32 (pass --R 32 or less)"}, )J";
  text.insert(text.find('{', text.find("\"constraints\"")), limit);
  write(problem / "problem.json", text);
  const std::string file = (kResults / "fixture_h200_R64_L64.json").string();
  for (const std::string& command :
       {"export nvrtc --problem " + problem.string(),
        "header --config " + (problem / "problem.json").string() + " -o " + (dir / "limit.hpp").string()}) {
    const Result r = run_with("TUNE_PROBLEM_PATH=" + problem.parent_path().string(), command + " " + file);
    EXPECT_EQ(r.code, 2) << command << "\n" << r.output;
    EXPECT_NE(r.output.find("R must be at most 32"), std::string::npos) << command << "\n" << r.output;
    EXPECT_NE(r.output.find("the record does not fit " + (problem / "problem.json").string()), std::string::npos)
        << command << "\n"
        << r.output;
  }
}

// bench/embed_nvrtc.py writes the header from tune's export: the finalists of the stems it is told
// to interleave, the depfile from the files tune read; tune's refusal passes through (exit 2).
TEST(ExportNvrtc, EmbedScriptWritesTheBenchHeaderFromTunesExport) {
  const fs::path problem = typed_problem("embed");
  const fs::path out = fs::path(out_dir("export_nvrtc_embed_out")) / "affine_typed_nvrtc.hpp";
  const std::string script = python() + " " + (fs::path(TUNE_REPO_DIR) / "bench" / "embed_nvrtc.py").string() + " --tune " +
                             TUNE_EXE + " --problem " + problem.string() + " --out " + out.string();
  Result r = run_command(script + " --depfile " + out.string() + ".d --interleave fixture_h200_R64_L64" + results_args());
  ASSERT_EQ(r.code, 0) << r.output;
  const std::string h = slurp(out);
  EXPECT_NE(h.find("inline constexpr const char* kHeaderNames[2] = {\"detail/convert.cuh\", \"detail/types.cuh\"};"),
            std::string::npos)
      << h;
  EXPECT_NE(h.find("  {\"fixture_h200_R64_L64\", 4, {\"-arch=sm_90\", \"-std=c++17\", \"--ptxas-options=-v\", "
                   "\"-lineinfo\"}, 4, {\n    {\"block=64,per_thread=4\", false, 20.1000, 20.1000, 1, "
                   "{{\"affine_kernel<float,64,64,64,4>\", {16, 1, 1}, {64, 1, 1}, 0}}},"),
            std::string::npos)
      << h;
  EXPECT_NE(h.find("  {\"fixture_h200_R256_L64\", 4, {\"-arch=sm_90\", \"-std=c++17\", \"--ptxas-options=-v\", "
                   "\"-lineinfo\"}, 0, {\n}}"),
            std::string::npos)
      << h;  // not interleaved: no finalists
  EXPECT_NE(slurp(out.string() + ".d").find(fs::weakly_canonical(problem / "detail" / "types.cuh").string()),
            std::string::npos);

  r = run_command(script + " " + (kFixtures / "results" / "contact_B4_N64_C64_H32.json").string());
  EXPECT_EQ(r.code, 2) << r.output;
  expect_error_output(r, "results of problem contact, not affine_typed");
}

}  // namespace
