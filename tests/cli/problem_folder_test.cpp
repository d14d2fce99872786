// A problem is a folder of data: a third-party folder outside the repo (tests/fixtures/problems/
// affine copied to a temporary folder) tunes with no rebuild, `tune list` finds it, every bad
// variant of it is refused at load with its message (exit 2), the Python reference protocol runs
// (numpy), and its templates are part of the compile-cache key.
#include <unistd.h>

#include <fstream>
#include <functional>
#include <iterator>
#include <map>

#include <nlohmann/json.hpp>

#include "support/cli_run.hpp"

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

const fs::path kFixture = fs::path(TUNE_FIXTURES) / "problems" / "affine";

// A copy of the fixture under /tmp (outside the repo), its problem.json edited by `edit`.
fs::path third_party(const std::string& name, const std::function<void(Json&)>& edit = {}) {
  const auto root = fs::temp_directory_path() / ("tune_problem_" + std::to_string(getpid())) / name;
  fs::remove_all(root);
  fs::create_directories(root);
  const auto dir = root / "affine";
  fs::copy(kFixture, dir, fs::copy_options::recursive);
  if (edit) {
    Json j = Json::parse(std::ifstream(dir / "problem.json"));
    edit(j);
    std::ofstream(dir / "problem.json") << j.dump(1);
  }
  return dir;
}

void write(const fs::path& file, const std::string& text) { std::ofstream(file) << text; }

std::string slurp(const fs::path& file) {
  std::ifstream f(file);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

Json read_json(const fs::path& file) { return Json::parse(std::ifstream(file)); }

// Refused at load, before anything compiles: exit 2, one line with `needle`.
void expect_refused(const fs::path& dir, const std::string& needle, const std::string& extra = "") {
  const std::string args = "--problem " + dir.string() + " --R 8 --compile-only --no-cache --out " + out_dir("refused") + extra;
  expect_error(args, needle);
  EXPECT_EQ(run(args).code, 2) << args;
}

TEST(ProblemFolder, AThirdPartyFolderOutsideTheRepoTunesCompileOnlyAndOnTheFakeWorker) {
  const fs::path dir = third_party("tunes");
  const std::string out = out_dir("third_party");
  const Result c = run("--problem " + dir.string() + " --R 37 --compile-only --no-cache --out " + out);
  ASSERT_EQ(c.code, 0) << c.output;
  const Json compiled = read_json(fs::path(out) / "compile-only-sm_90" / "affine" / "R37_L64.json");
  EXPECT_EQ(compiled.at("problem"), "affine");
  ASSERT_EQ(compiled.at("variants").size(), 9u);
  for (const auto& v : compiled.at("variants")) EXPECT_EQ(v.at("status"), "compiled") << v.dump();
  EXPECT_NE(compiled.at("context").at("config_file").get<std::string>().find(dir.string()), std::string::npos);

  // The fake worker draws the data and runs reference.py (numpy) before it makes up timings.
  const Result f = run_with("TUNE_WORKER_FAKE=1", "--problem " + dir.string() + " --R 37 --L 48 --no-cache --out " + out);
  ASSERT_EQ(f.code, 0) << f.output;
  const fs::path result = fs::path(out) / "fake-gpu" / "affine" / "R37_L48.json";
  const Json timed = read_json(result);
  EXPECT_TRUE(timed.at("summary").contains("winner")) << timed.dump();
  // The reference that ran: the folder's reference.py (numpy here; PyTorch where it imports).
  EXPECT_EQ(timed.at("context").at("reference").get<std::string>().rfind("reference.py (", 0), 0u) << timed.at("context");
  // The problem's own tolerance (1e-5), not the default.
  EXPECT_EQ(timed.at("variants").at(0).at("parity").at("atol"), 1e-5);
  EXPECT_TRUE(fs::exists(fs::path(out) / "fake-gpu" / "affine" / "R37_L48.hpp"));
}

// The third problem of the repo (examples/ln_linear_gelu), as a user's folder: it loads, a sample of
// its space compiles at a ragged shape, and its reference runs (numpy here) on the fake worker.
TEST(ProblemFolder, TheExampleFolderCompilesAndItsReferenceRuns) {
  const fs::path dir = fs::path(TUNE_FIXTURES) / ".." / ".." / "examples" / "ln_linear_gelu";
  const std::string out = out_dir("example_folder");
  const std::string args = "--problem " + dir.string() + " --M 37 --K 64 --N 200 --budget 4 --no-cache --out " + out;
  const Result c = run(args + " --compile-only");
  ASSERT_EQ(c.code, 0) << c.output;
  const Json j = read_json(fs::path(out) / "compile-only-sm_90" / "ln_linear_gelu" / "M37_K64_N200.json");
  for (const auto& v : j.at("variants")) EXPECT_EQ(v.at("status"), "compiled") << v.dump();
  const Result f = run_with("TUNE_WORKER_FAKE=1", args);
  EXPECT_EQ(f.code, 0) << f.output;
}

TEST(ProblemFolder, AnyDimensionNameIsAShapeOptionAndCommaListsSweep) {
  const fs::path dir = third_party("dims");
  const std::string out = out_dir("third_party_dims");
  const Result r = run("--problem " + dir.string() + " --R 3,5 --L=32 --compile-only --no-cache --out " + out);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(fs::exists(fs::path(out) / "compile-only-sm_90" / "affine" / "R3_L32.json")) << r.output;
  EXPECT_TRUE(fs::exists(fs::path(out) / "compile-only-sm_90" / "affine" / "R5_L32.json")) << r.output;
  expect_error("--problem " + dir.string() + " --R 3 --Q 4 --compile-only", "--Q is not a dimension of problem affine");
  expect_error("--problem " + dir.string() + " --R x3 --compile-only", "'x3' is not an integer");
  expect_error("--problem " + dir.string() + " --compile-only", "needs --R");
}

TEST(ProblemFolder, ListShowsWhereEachProblemComesFromWithItsDims) {
  const fs::path dir = third_party("list");
  const Result r = run("list --problem-path " + dir.parent_path().string());
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("affine  (--problem-path: " + dir.string() + ")"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("dims: --R N --L 64"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("contact  (built-in: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("dims: --B N --N N --C 64 --H 32"), std::string::npos) << r.output;
  // The same folder through $TUNE_PROBLEM_PATH, and a run by name.
  const Result e = run_with("TUNE_PROBLEM_PATH=" + dir.parent_path().string(), "list");
  EXPECT_NE(e.output.find("affine  (TUNE_PROBLEM_PATH: "), std::string::npos) << e.output;
  const Result n = run_with("TUNE_PROBLEM_PATH=" + dir.parent_path().string(),
                            "--problem affine --R 4 --compile-only --no-cache --out " + out_dir("by_name"));
  EXPECT_EQ(n.code, 0) << n.output;
}

TEST(ProblemFolder, EveryBadFolderIsRefusedAtLoadWithItsPath) {
  expect_refused(third_party("key", [](Json& j) { j["tensorz"] = Json::array(); }), "unknown key 'tensorz'");
  expect_refused(third_party("nested", [](Json& j) { j["tensors"][0]["iniit"] = "normal"; }), "unknown key 'tensors[0].iniit'");
  expect_refused(third_party("launch_key", [](Json& j) { j["launches"][0]["gird"] = Json::array({"1"}); }),
                 "unknown key 'launches[0].gird'");
  expect_refused(third_party("arg_name", [](Json& j) { j["launches"][0]["args"][0] = "xx"; }),
                 "launch 'affine_kernel' argument 'xx' is not a tensor of problem affine");
  expect_refused(third_party("arg_count", [](Json& j) { j["launches"][0]["args"].erase(3); }),
                 "launch 'affine_kernel' passes 3 args but the kernel takes 4 parameters");
  expect_refused(third_party("kernel", [](Json& j) { j["launches"][0]["kernel"] = "affine_kernal"; }),
                 "no __global__ function 'affine_kernal'");
  expect_refused(third_party("template", [](Json& j) { j["template"] = "missing.cuh"; }), "'template': missing.cuh not found");
  expect_refused(third_party("targ", [](Json& j) { j["launches"][0]["template_args"][0] = "nope"; }),
                 "template argument \"nope\" is not a dimension, parameter or derived value");
  expect_refused(third_party("init", [](Json& j) { j["tensors"][2]["init"] = "gaussian"; }), "tensors[2].init.kind 'gaussian'");
  expect_refused(third_party("outputs", [](Json& j) { j["tensors"][2]["role"] = "output"; j["tensors"][2].erase("init"); }),
                 "exactly one output");
  expect_refused(third_party("dtype", [](Json& j) { j["tensors"][0]["dtype"] = "float16"; }), "dtype 'float16' is not supported");
  expect_refused(third_party("reference", [](Json& j) { j["reference"]["python"] = "ref.py"; }), "does not exist");
  expect_refused(third_party("shape_expr", [](Json& j) { j["tensors"][0]["shape"][0] = "L * Q"; }), "tensors[0].shape[0]");
  expect_refused(third_party("edit", [](Json& j) { j["edits"][0]["tensor"] = "out"; }),
                 "edits[0].tensor 'out' is not a parameter or input");
  expect_refused(third_party("tolerance", [](Json& j) { j["tolerance"]["atol"] = -1; }), "tolerance.atol");
  expect_refused(third_party("name", [](Json& j) { j["problem"] = "my op"; }), "must be letters, digits");
  // A template argument that is not an integer is refused when the configuration is lowered.
  expect_refused(third_party("fraction", [](Json& j) {
                   j["derived"].push_back({{"name", "half"}, {"expr", "block / 3"}});
                   j["launches"][0]["template_args"][2] = "half";
                 }),
                 "template argument 'half' is 21.3");
}

TEST(ProblemFolder, TheReferenceRunsOutOfProcessAndItsFailuresAreOneLine) {
  const fs::path raising = third_party("raising");
  write(raising / "reference.py", "def reference(shape, params, inputs):\n    raise ValueError('no such op')\n");
  const std::string args = "--problem " + raising.string() + " --R 5 --no-cache --out " + out_dir("raising");
  const Result r = run_with("TUNE_WORKER_FAKE=1", args);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("reference failed: ValueError: no such op"), std::string::npos) << r.output;

  const fs::path shaped = third_party("shaped");
  write(shaped / "reference.py",
        "import numpy as np\ndef reference(shape, params, inputs):\n    return np.zeros((shape['R'], 3))\n");
  const Result s = run_with("TUNE_WORKER_FAKE=1", "--problem " + shaped.string() + " --R 5 --no-cache --out " + out_dir("shaped"));
  EXPECT_EQ(s.code, 2) << s.output;
  EXPECT_NE(s.output.find("the reference returned shape (5, 3), the output 'out' has shape (5, 64)"), std::string::npos)
      << s.output;

  const fs::path nan = third_party("nan");
  write(nan / "reference.py",
        "import numpy as np\ndef reference(shape, params, inputs):\n    y = inputs['x'] * 1.0\n    y[1, 2] = np.nan\n    return y\n");
  const Result n = run_with("TUNE_WORKER_FAKE=1", "--problem " + nan.string() + " --R 5 --no-cache --out " + out_dir("nan"));
  EXPECT_EQ(n.code, 2) << n.output;
  EXPECT_NE(n.output.find("is nan at element 66"), std::string::npos) << n.output;

  const Result p = run_with("TUNE_WORKER_FAKE=1 TUNE_PYTHON=/nonexistent/python3",
                            "--problem " + third_party("python").string() + " --R 5 --no-cache --out " + out_dir("python"));
  EXPECT_EQ(p.code, 2) << p.output;
  EXPECT_NE(p.output.find("set TUNE_PYTHON"), std::string::npos) << p.output;
}

TEST(ProblemFolder, EveryTemplateFileIsPartOfTheCompileCacheKey) {
  const fs::path dir = third_party("cache");
  const std::string out = out_dir("cache_key");
  const std::string args = "--problem " + dir.string() + " --R 16 --compile-only --cache-dir " + out + "/cache --out " + out;
  const fs::path result = fs::path(out) / "compile-only-sm_90" / "affine" / "R16_L64.json";
  auto cached = [&] {
    std::size_t n = 0;
    const Json j = read_json(result);
    for (const auto& v : j.at("variants")) n += v.value("compile_cached", false) ? 1 : 0;
    return n;
  };
  ASSERT_EQ(run(args).code, 0);
  EXPECT_EQ(cached(), 0u);
  const Result again = run(args);
  ASSERT_EQ(again.code, 0) << again.output;
  EXPECT_EQ(cached(), 9u) << again.output;
  // An edit to a header the template includes is a new kernel: nothing comes from the cache.
  write(dir / "common.cuh", slurp(dir / "common.cuh") + "// edited\n");
  const Result r = run(args);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(cached(), 0u);
}

// Issue 34 #3: NVRTC reads only the headers tune passes and hashes. A header outside the folder is
// refused with the include_dirs advice; listed in include_dirs it is in the compile-cache key, and
// a relative include resolves against the including file from any working directory.
TEST(ProblemFolder, AHeaderOutsideTheFolderIsRefusedOrPartOfTheCacheKeyThroughIncludeDirs) {
  const fs::path dir = third_party("outside");
  const fs::path outside = dir.parent_path() / "outside";
  fs::create_directories(outside);
  write(outside / "val.cuh", "#define TUNE_TEST_VAL 1\n");
  write(dir / "kernel.cuh", "#include \"../outside/val.cuh\"\n" + slurp(dir / "kernel.cuh"));
  expect_refused(dir, "add its folder to 'include_dirs'");

  Json problem = read_json(dir / "problem.json");
  problem["include_dirs"] = Json::array({"../outside"});
  write(dir / "problem.json", problem.dump());
  const std::string out = out_dir("outside_header");
  const fs::path result = fs::path(out) / "compile-only-sm_90" / "affine" / "R16_L64.json";
  // From the outside folder as the working directory: the include still means dir/../outside.
  auto compile = [&] {
    return run_command("cd " + outside.string() + " && " + TUNE_EXE + " --problem " + dir.string() +
                       " --R 16 --budget 2 --compile-only --cache-dir " + out + "/cache --out " + out);
  };
  auto statuses = [&] {
    std::map<std::string, std::size_t> n;
    const Json j = read_json(result);
    for (const auto& v : j.at("variants"))
      ++n[v.at("status").get<std::string>() + (v.value("compile_cached", false) ? " cached" : "")];
    return n;
  };
  const Result first = compile();
  ASSERT_EQ(first.code, 0) << first.output;
  const std::size_t variants = read_json(result).at("variants").size();
  EXPECT_EQ(statuses()["compiled"], variants) << first.output;
  ASSERT_EQ(compile().code, 0);
  EXPECT_EQ(statuses()["compiled cached"], variants);
  // The outside header changed: compiled again, and it fails as it now must.
  write(outside / "val.cuh", "#error the shared header changed\n");
  const Result changed = compile();
  EXPECT_EQ(statuses()["compile_failed"], variants) << changed.output;
}

// Issue 34 #23, #31, #35: what the template's folder holds is checked when it loads.
TEST(ProblemFolder, BomsBadBytesSymlinksAndAnIncludeDirOfRootAreHandledAtLoad) {
  const fs::path bom = third_party("bom");
  write(bom / "kernel.cuh", "\xEF\xBB\xBF" + slurp(bom / "kernel.cuh"));
  const std::string out = out_dir("bom");
  const Result b = run("--problem " + bom.string() + " --R 8 --budget 1 --compile-only --no-cache --out " + out);
  ASSERT_EQ(b.code, 0) << b.output;
  const Json compiled = read_json(fs::path(out) / "compile-only-sm_90" / "affine" / "R8_L64.json");
  for (const auto& v : compiled.at("variants"))
    EXPECT_EQ(v.at("status"), "compiled") << v.dump();

  const fs::path ff = third_party("ff");
  write(ff / "common.cuh", slurp(ff / "common.cuh") + "// \xFF\n");
  expect_refused(ff, "byte 0xFF: NVRTC stops reading the file there");

  expect_refused(third_party("root", [](Json& j) { j["include_dirs"] = Json::array({"/"}); }),
                 "the folder / holds more than 256 headers");

  const fs::path link = third_party("symlink");
  write(link.parent_path() / "secret.h", "#define SECRET 1\n");
  fs::create_symlink("../secret.h", link / "secret.h");
  write(link / "kernel.cuh", "#include \"secret.h\"\n" + slurp(link / "kernel.cuh"));
  expect_refused(link, "secret.h is a symlink to ");
}

}  // namespace
