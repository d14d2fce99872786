// A problem is a folder of data: a third-party folder outside the repo (tests/fixtures/problems/
// affine copied to a temporary folder) tunes with no rebuild, `tune list` finds it, every bad
// variant of it is refused at load with its message (exit 2), the Python reference protocol runs
// (numpy), and its templates are part of the compile-cache key.
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <sstream>
#include <thread>

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

// A shell prefix that runs the command and sends it `signal` after `seconds`, its own exit code kept
// (timeout's --preserve-status; -k ends a command that ignores the signal, 20 s later). Once:
// without --foreground timeout signals its process group too, a second signal that ends tune at once.
std::string fmt_signal_after(int signal, int seconds) {
  return "timeout --foreground --preserve-status -k 20 -s " + std::to_string(signal) + " " + std::to_string(seconds);
}

std::string slurp(const fs::path& file) {
  std::ifstream f(file);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

Json read_json(const fs::path& file) { return Json::parse(std::ifstream(file)); }

// Refused at load, before anything compiles: exit 2, one line with `needle`.
void expect_refused(const fs::path& dir, const std::string& needle, const std::string& extra = "") {
  const std::string args =
      "--problem " + dir.string() + " --R 8 --compile-only --no-cache --out " + out_dir("refused") + extra;
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

// Round 7: a newcomer's folder whose template_args miss a template parameter compiled no variant;
// the compile-only check exited 0 and the fake run said only "10 compile_failed", NVRTC's error
// left in the JSON. Both now end on one line quoting the first error (with what a name-map error
// means), and exit 5.
TEST(ProblemFolder, ARunInWhichNoVariantCompilesQuotesTheFirstErrorAndExits5) {
  const fs::path dir = third_party("nothing_compiles", [](Json& j) {
    j["launches"][0]["template_args"] = Json::array({"R", "L", "block"});
  });
  const std::string out = out_dir("nothing_compiles");
  const Result c = run("--problem " + dir.string() + " --R 8 --compile-only --no-cache --out " + out);
  EXPECT_EQ(c.code, 5) << c.output;
  EXPECT_NE(c.output.find("tune: no variant of affine R=8 L=64 compiled (9 compile_failed); every variant's log is in "),
            std::string::npos)
      << c.output;
  EXPECT_NE(c.output.find(" failed to compile: __nv_name_map"), std::string::npos) << c.output;
  EXPECT_NE(c.output.find("(the launch's template_args do not instantiate the kernel template"), std::string::npos)
      << c.output;
  const Result f = run_with("TUNE_WORKER_FAKE=1", "--problem " + dir.string() + " --R 8 --no-cache --out " + out);
  EXPECT_EQ(f.code, 5) << f.output;
  EXPECT_NE(f.output.find("passed (9 compile_failed): no winner, no header; the results are in "), std::string::npos)
      << f.output;
  EXPECT_NE(f.output.find(" failed to compile: __nv_name_map"), std::string::npos) << f.output;

  // An error in the template itself is quoted with its file and line.
  const fs::path bad = third_party("template_error");
  write(bad / "common.cuh",
        "namespace fixture {\n__device__ float affine(float x, float s, float b) { return x * s + b }\n}\n");
  const Result e = run("--problem " + bad.string() + " --R 8 --compile-only --no-cache --out " + out);
  EXPECT_EQ(e.code, 5) << e.output;
  EXPECT_NE(e.output.find("failed to compile: common.cuh(2): error"), std::string::npos) << e.output;
  // One variant that compiles is enough: exit 0, no such line.
  const Result ok = run("--problem " + third_party("compiles").string() + " --R 8 --compile-only --no-cache --out " + out);
  EXPECT_EQ(ok.code, 0) << ok.output;
  EXPECT_EQ(ok.output.find("no variant of"), std::string::npos) << ok.output;
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
  expect_refused(third_party("nested", [](Json& j) { j["tensors"][0]["iniit"] = "normal"; }),
                 "unknown key 'tensors[0].iniit'");
  expect_refused(third_party("launch_key", [](Json& j) { j["launches"][0]["gird"] = Json::array({"1"}); }),
                 "unknown key 'launches[0].gird'");
  expect_refused(third_party("arg_name", [](Json& j) { j["launches"][0]["args"][0] = "xx"; }),
                 "launch 'affine_kernel' argument 'xx' is not a tensor of problem affine, 'out' or a scratch buffer "
                 "(known: out, scale, shift, x)");  // each name once: the output is named 'out' too
  expect_refused(third_party("arg_count", [](Json& j) { j["launches"][0]["args"].erase(3); }),
                 "launch 'affine_kernel' passes 3 args but the kernel takes 4 parameters");
  expect_refused(third_party("kernel", [](Json& j) { j["launches"][0]["kernel"] = "affine_kernal"; }),
                 "no __global__ function 'affine_kernal'");
  expect_refused(third_party("template", [](Json& j) { j["template"] = "missing.cuh"; }),
                 "'template': missing.cuh not found");
  expect_refused(third_party("targ", [](Json& j) { j["launches"][0]["template_args"][0] = "nope"; }),
                 "template argument \"nope\" is not a dimension, dtype variable, parameter or derived value");
  expect_refused(third_party("init", [](Json& j) { j["tensors"][2]["init"] = "gaussian"; }),
                 "tensors[2].init.kind 'gaussian'");
  expect_refused(third_party("outputs",
                             [](Json& j) {
                               j["tensors"][2]["role"] = "output";
                               j["tensors"][2].erase("init");
                             }),
                 "exactly one output");
  expect_refused(third_party("dtype", [](Json& j) { j["tensors"][0]["dtype"] = "float17"; }), "dtype 'float17' of tensor");
  expect_refused(third_party("reference", [](Json& j) { j["reference"]["python"] = "ref.py"; }), "does not exist");
  expect_refused(third_party("shape_expr", [](Json& j) { j["tensors"][0]["shape"][0] = "L * Q"; }), "tensors[0].shape[0]");
  expect_refused(third_party("edit", [](Json& j) { j["edits"][0]["tensor"] = "out"; }),
                 "edits[0].tensor 'out' is not a parameter or input");
  expect_refused(third_party("tolerance", [](Json& j) { j["tolerance"]["atol"] = -1; }), "tolerance.atol");
  expect_refused(third_party("name", [](Json& j) { j["problem"] = "my op"; }), "must be letters, digits");
  // A template argument that is not an integer is refused when the configuration is lowered.
  expect_refused(third_party("fraction",
                             [](Json& j) {
                               j["derived"].push_back({{"name", "half"}, {"expr", "block / 3"}});
                               j["launches"][0]["template_args"][2] = "half";
                             }),
                 "template argument 'half' is 21.3");
}

// Issue 35: the tolerance per dtype, the module rule and the rule; a bad key or value is refused at
// load with its path (exit 2).
TEST(ProblemFolder, BadToleranceKeysAndValuesAreRefusedWithTheirPath) {
  expect_refused(third_party("tol_dtype",
                             [](Json& j) {
                               j["tolerance"]["bfloat17"] = {{"atol", 1e-5}};
                             }),
                 "unknown key 'tolerance.bfloat17'");
  expect_refused(third_party("tol_value",
                             [](Json& j) {
                               j["tolerance"]["bfloat16"] = {{"rtol", "2e-2"}};
                             }),
                 "tolerance.bfloat16.rtol must be a finite number >= 0");
  expect_refused(third_party("tol_module",
                             [](Json& j) {
                               j["tolerance"]["module"] = {{"kk", 2}};
                             }),
                 "unknown key 'tolerance.module.kk'");
  expect_refused(third_party("tol_rule", [](Json& j) { j["tolerance"]["rule"] = "either"; }),
                 "tolerance.rule must be \"both\", \"tolerance\" or \"module\"");
}

TEST(ProblemFolder, TheReferenceRunsOutOfProcessAndItsFailuresAreOneLine) {
  const fs::path raising = third_party("raising");
  write(raising / "reference.py", "def reference(shape, params, inputs):\n    raise ValueError('no such op')\n");
  const std::string args = "--problem " + raising.string() + " --R 5 --no-cache --out " + out_dir("raising");
  const Result r = run_with("TUNE_WORKER_FAKE=1", args);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("reference.py failed: ValueError: no such op"), std::string::npos) << r.output;

  const fs::path shaped = third_party("shaped");
  write(shaped / "reference.py",
        "import numpy as np\ndef reference(shape, params, inputs):\n    return np.zeros((shape['R'], 3))\n");
  const Result s =
      run_with("TUNE_WORKER_FAKE=1", "--problem " + shaped.string() + " --R 5 --no-cache --out " + out_dir("shaped"));
  EXPECT_EQ(s.code, 2) << s.output;
  EXPECT_NE(s.output.find("the reference returned shape (5, 3), the output 'out' has shape (5, 64)"), std::string::npos)
      << s.output;

  const fs::path nan = third_party("nan");
  write(
      nan / "reference.py",
      "import numpy as np\ndef reference(shape, params, inputs):\n    y = inputs['x'] * 1.0\n    y[1, 2] = np.nan\n    return y\n");
  const Result n = run_with("TUNE_WORKER_FAKE=1", "--problem " + nan.string() + " --R 5 --no-cache --out " + out_dir("nan"));
  EXPECT_EQ(n.code, 2) << n.output;
  EXPECT_NE(n.output.find("is nan at element 66"), std::string::npos) << n.output;

  const Result p = run_with("TUNE_WORKER_FAKE=1 TUNE_PYTHON=/nonexistent/python3",
                            "--problem " + third_party("python").string() + " --R 5 --no-cache --out " + out_dir("python"));
  EXPECT_EQ(p.code, 2) << p.output;
  EXPECT_NE(p.output.find("set TUNE_PYTHON"), std::string::npos) << p.output;
}

// reference.py of `dir` wrapped to note each run in runs.log beside it (`body`: the reference as it
// was); the returned function counts the runs noted since it was last called.
std::function<std::size_t()> count_reference_runs(const fs::path& dir, const std::string& body) {
  write(dir / "reference.py", body +
                                  "\n\nimport os as _os\n_plain = reference\n\n\ndef reference(shape, params, inputs):\n"
                                  "    with open(_os.path.join(_os.path.dirname(__file__), 'runs.log'), 'a') as f:\n"
                                  "        f.write('run\\n')\n    return _plain(shape, params, inputs)\n");
  return [dir] {
    std::ifstream f(dir / "runs.log");
    std::size_t n = 0;
    for (std::string line; std::getline(f, line);) ++n;
    fs::remove(dir / "runs.log");
    return n;
  };
}

// A reference.py that draws unseeded random numbers gave another answer in each worker, and every
// variant was `incorrect` (exit 5): the search's worker runs it twice and refuses it (exit 2, one line
// naming it). A reference that repeats itself is remembered in the verdict cache: the next tune runs
// it once less (each run is counted in a file beside it); with --no-cache every tune checks.
TEST(ProblemFolder, AReferenceThatDoesNotRepeatItselfIsRefusedAndOneThatDoesIsCheckedOnce) {
  const fs::path noisy = third_party("noisy");
  write(noisy / "reference.py",
        "import numpy as np\ndef reference(shape, params, inputs):\n"
        "    return inputs['x'] + np.random.normal(size=inputs['x'].shape) * 1e-3\n");
  const Result r =
      run_with("TUNE_WORKER_FAKE=1", "--problem " + noisy.string() + " --R 5 --no-cache --out " + out_dir("noisy"));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("reference.py returned another output for the same input on a second run (the output 'out' "
                          "at element 0:"),
            std::string::npos)
      << r.output;

  const fs::path counted = third_party("counted");
  const auto runs = count_reference_runs(counted, slurp(counted / "reference.py"));
  const fs::path cache = fs::temp_directory_path() / ("tune_problem_" + std::to_string(getpid())) / "counted-cache";
  fs::remove_all(cache);
  const std::string args = "--problem " + counted.string() + " --R 5 --sanitize off --out ";
  const Result plain = run_with("TUNE_WORKER_FAKE=1", args + out_dir("counted1") + " --no-cache");
  ASSERT_EQ(plain.code, 0) << plain.output;
  const std::size_t unremembered = runs();
  const Result first = run_with("TUNE_WORKER_FAKE=1", args + out_dir("counted2") + " --cache-dir " + cache.string());
  ASSERT_EQ(first.code, 0) << first.output;
  EXPECT_EQ(runs(), unremembered) << first.output;  // the first tune with a cache checks
  // The next one remembers (its gate's verdicts, cached too, are run again to count alike).
  const Result again =
      run_with("TUNE_WORKER_FAKE=1", args + out_dir("counted3") + " --fresh-verdicts --cache-dir " + cache.string());
  ASSERT_EQ(again.code, 0) << again.output;
  EXPECT_EQ(runs(), unremembered - 1) << again.output;
}

// tune check runs the reference on its further inputs: a reference that does not repeat itself
// made every variant `incorrect` there (exit 1) rather than being named. It now runs the first
// further input's reference twice, unless the verdict cache saw this reference repeat itself.
TEST(ProblemFolder, TuneCheckRunsAReferenceTwiceUnlessItWasSeenToRepeatItself) {
  const fs::path dir = third_party("check_repeat");
  const std::string out = out_dir("check_repeat");
  const fs::path cache = fs::temp_directory_path() / ("tune_problem_" + std::to_string(getpid())) / "check-repeat-xdg";
  fs::remove_all(cache);
  const std::string env = "TUNE_WORKER_FAKE=1 XDG_CACHE_HOME=" + cache.string();
  const Result tuned =
      run_with("TUNE_WORKER_FAKE=1", "--problem " + dir.string() + " --R 5 --sanitize off --no-cache --out " + out);
  ASSERT_EQ(tuned.code, 0) << tuned.output;
  const std::string results = out + "/fake-gpu/affine/R5_L64.json";
  const std::string body = slurp(dir / "reference.py");
  write(dir / "reference.py", body +
                                  "\n\nimport numpy as _np\n_plain = reference\n\n\ndef reference(shape, params, inputs):\n"
                                  "    return _plain(shape, params, inputs) + _np.random.normal() * 1e-3\n");
  const Result noisy = run_with(env, "check " + results + " --sanitize off --problem-path " + dir.parent_path().string());
  EXPECT_EQ(noisy.code, 2) << noisy.output;
  EXPECT_NE(noisy.output.find("reference.py returned another output for the same input on a second run"), std::string::npos)
      << noisy.output;
  // A reference that repeats itself passes, and is remembered: the next check runs it once less.
  const auto runs = count_reference_runs(dir, body);
  const std::string check = "check " + results + " --sanitize off --fresh --problem-path " + dir.parent_path().string();
  const Result first = run_with(env, check);
  ASSERT_EQ(first.code, 0) << first.output;
  const std::size_t checked = runs();
  const Result second = run_with(env, check);
  ASSERT_EQ(second.code, 0) << second.output;
  EXPECT_EQ(runs(), checked - 1) << second.output;
}

// scripts/make_goldens.py on a user's folder, then tune verify on what it wrote (the CPU reference,
// no GPU needed): a reference that imports a file beside it loads there as it does in tune, and an
// edit whose value float32 cannot hold (0.1) is rounded as tune rounds it, so the golden verifies.
TEST(ProblemFolder, MakeGoldensTakesASiblingImportAndFloat32EditsAndTuneVerifiesItsGolden) {
  const fs::path dir = third_party("goldens", [](Json& j) {
    j["edits"].push_back({{"tensor", "x"}, {"index", Json::array({"1", "2"})}, {"value", "0.1"}});
  });
  write(dir / "affine_math.py", "def affine(x, scale, shift):\n    return x * scale[None, :] + shift[None, :]\n");
  write(dir / "reference.py",
        "from affine_math import affine\n\n\ndef reference(shape, params, inputs):\n"
        "    return affine(inputs['x'], params['scale'], params['shift'])\n");
  const char* python = std::getenv("TUNE_PYTHON");
  const fs::path golden = dir / "golden" / "affine_R3_L8.json";
  const Result made = run_command(std::string(python && *python ? python : "python3") + " " + TUNE_REPO_DIR +
                                  "/scripts/make_goldens.py --problem " + dir.string() +
                                  " --shape R=3,L=8 --backend numpy -o " + golden.string());
  ASSERT_EQ(made.code, 0) << made.output;
  const Json g = read_json(golden);
  EXPECT_EQ(g.at("inputs").at("x").at("data").at(10).get<double>(), static_cast<double>(0.1F)) << "x[1][2], rounded";
  const Result v = run_with("CUDA_VISIBLE_DEVICES=", "verify " + golden.string() + " --results " + out_dir("goldens"));
  EXPECT_EQ(v.code, 0) << v.output;
  EXPECT_NE(v.output.find("verify: all checks passed"), std::string::npos) << v.output;
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

// A fake-timed result of a copy of the fixture (its winner gated without sanitizers), and that copy.
struct UserResult {
  fs::path dir, file;
};
UserResult user_result(const std::string& name) {
  const fs::path dir = third_party(name);
  const std::string out = out_dir(name);
  const Result r =
      run_with("TUNE_WORKER_FAKE=1", "--problem " + dir.string() + " --R 37 --budget 2 --sanitize off --out " + out);
  EXPECT_EQ(r.code, 0) << r.output;
  return {dir, fs::path(out) / "fake-gpu" / "affine" / "R37_L64.json"};
}

// tune check passes the problem it found (--problem-path here) to the gate's workers (issue 34 #2).
TEST(ProblemFolder, CheckWithProblemPathGatesAUserFolderThatMoved) {
  const UserResult u = user_result("check_path");
  const fs::path moved = u.dir.parent_path() / "moved";
  fs::create_directories(moved);
  fs::rename(u.dir, moved / "affine");  // the path the results recorded is gone
  const Result r =
      run_with("TUNE_WORKER_FAKE=1", "check " + u.file.string() + " --sanitize off --problem-path " + moved.string());
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("check: 1 of 1 safe"), std::string::npos) << r.output;
  const Result w = run_with("TUNE_WORKER_FAKE=1",
                            "check " + u.file.string() + " --write --sanitize off --problem-path " + moved.string());
  EXPECT_EQ(w.code, 0) << w.output;
  EXPECT_EQ(read_json(u.file).at("context").at("gate").at("gated"), 1) << "the verdict written is a valid record";
}

// A results file whose recorded problem file describes another problem is refused, as tune header
// refuses it (issue 34 #20); so is --write into results whose kernel sources changed since.
TEST(ProblemFolder, CheckRefusesAMislabelledProblemAndWriteRefusesChangedSources) {
  const UserResult u = user_result("check_label");
  const std::string before = slurp(u.file);
  Json j = read_json(u.file);
  j["problem"] = "affine2";
  const fs::path mislabelled = u.file.parent_path() / "mislabelled.json";
  std::ofstream(mislabelled) << j.dump(1);
  const Result r = run_with("TUNE_WORKER_FAKE=1", "check " + mislabelled.string() + " --sanitize off");
  EXPECT_EQ(r.code, 2) << r.output;
  expect_error_output(r, "the results are problem affine2 but");
  write(u.dir / "kernel.cuh", slurp(u.dir / "kernel.cuh") + "\n// changed\n");
  const Result w = run_with("TUNE_WORKER_FAKE=1", "check " + u.file.string() + " --write --sanitize off");
  EXPECT_EQ(w.code, 2) << w.output;
  expect_error_output(w, "changed since");
  EXPECT_EQ(slurp(u.file), before);
}

// The output checks compare with today's reference: --write refuses results tuned against another
// (reference.py or a module beside it edited since, round 6: it wrote verdicts of the new reference
// into the old record, without a word); a check without --write says so in a note.
TEST(ProblemFolder, CheckWriteRefusesResultsTunedAgainstAnotherReference) {
  const UserResult u = user_result("check_reference");
  const std::string before = slurp(u.file);
  write(u.dir / "helpers.py", "OFFSET = 0.0\n");
  const Result r = run_with("TUNE_WORKER_FAKE=1", "check " + u.file.string() + " --sanitize off");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("note: " + u.file.string() + " was tuned against the reference reference.py xxh3:"),
            std::string::npos)
      << r.output;
  const Result w = run_with("TUNE_WORKER_FAKE=1", "check " + u.file.string() + " --write --sanitize off");
  EXPECT_EQ(w.code, 2) << w.output;
  expect_error_output(w, "--write would store verdicts of another reference in that record");
  EXPECT_EQ(slurp(u.file), before);
  fs::remove(u.dir / "helpers.py");
  write(u.dir / "reference.py", slurp(u.dir / "reference.py") + "# edited\n");
  EXPECT_EQ(run_with("TUNE_WORKER_FAKE=1", "check " + u.file.string() + " --write --sanitize off").code, 2);
  EXPECT_EQ(slurp(u.file), before);
}

// The reference's identity names the Python that runs it: results tuned under one are not written
// over by a check under another (a virtual environment here: another prefix, maybe another torch).
// A record from before the identity named its Python is compared without it.
TEST(ProblemFolder, CheckWriteRefusesResultsTunedUnderAnotherPython) {
  const UserResult u = user_result("check_python");
  const fs::path venv = u.dir.parent_path() / "venv";
  const char* had = std::getenv("TUNE_PYTHON");
  const std::string python = had && *had ? had : "python3";
  ASSERT_EQ(run_command(python + " -m venv --without-pip --system-site-packages " + venv.string()).code, 0);
  const std::string before = slurp(u.file);
  const Result w = run_with("TUNE_WORKER_FAKE=1 TUNE_PYTHON=" + (venv / "bin" / "python3").string(),
                            "check " + u.file.string() + " --write --sanitize off");
  EXPECT_EQ(w.code, 2) << w.output;
  expect_error_output(w, "--write would store verdicts of another reference in that record");
  EXPECT_NE(w.output.find("under " + (venv / "bin" / "python3").string()), std::string::npos) << w.output;
  EXPECT_EQ(slurp(u.file), before);
  Json old = read_json(u.file);
  std::string identity = old["context"]["reference_identity"];
  ASSERT_NE(identity.find(") under "), std::string::npos) << identity;
  old["context"]["reference_identity"] = identity.substr(0, identity.find(") under ") + 1);
  std::ofstream(u.file) << old.dump(1);
  const Result c = run_with("TUNE_WORKER_FAKE=1", "check " + u.file.string() + " --write --sanitize off");
  EXPECT_EQ(c.code, 0) << c.output;
  EXPECT_EQ(c.output.find("was tuned against the reference"), std::string::npos) << c.output;
}

// tune header and tune export nvrtc of results whose problem folder changed since the tune say so in
// a note naming the file (round 6: they shipped today's template beside the old winner in silence);
// unchanged sources get no note.
TEST(ProblemFolder, HeaderAndExportNvrtcNoteResultsTunedOnOtherSources) {
  const UserResult u = user_result("header_changed_sources");
  const std::string header = out_dir("header_changed_sources_hpp") + ".hpp";
  const std::string header_args = "header " + u.file.string() + " --allow-synthetic -o " + header;
  const Result same = run(header_args);
  ASSERT_EQ(same.code, 0) << same.output;
  EXPECT_EQ(same.output.find("note:"), std::string::npos) << same.output;
  write(u.dir / "common.cuh", slurp(u.dir / "common.cuh") + "// edited\n");
  const std::string note = "note: " + u.file.string() + " was tuned on other kernel sources (context.source_hash ";
  const Result h = run(header_args);
  EXPECT_EQ(h.code, 0) << h.output;
  EXPECT_NE(h.output.find(note), std::string::npos) << h.output;
  const Result e = run("export nvrtc " + u.file.string() + " -o " + header + ".json");
  EXPECT_EQ(e.code, 0) << e.output;
  EXPECT_NE(e.output.find(note), std::string::npos) << e.output;
}

// Issue 34 #10: a dimension named like an option of tune or of a subcommand could not be given on
// the command line; the names come from the options tune registers.
TEST(ProblemFolder, Issue34_DimensionsNamedLikeTunesOptionsAreRefusedAtLoad) {
  for (const std::string name : {"out", "seed", "budget", "devices", "help", "version", "problem", "name", "all"}) {
    const fs::path dir = third_party("reserved_" + name, [&](Json& j) {
      j["shape"]["dims"].push_back(name);
      j["shape"]["defaults"][name] = 1;
    });
    expect_refused(dir, "'shape.dims': '" + name + "' is an option of tune (--" + name + ")");
  }
}

// Issue 34 #16, #17, #24: a parameter named like a keyword, a scratch buffer named like a tensor,
// a dimension's value past int64.
TEST(ProblemFolder, Issue34_NamesAndValuesThatWouldBreakLaterAreRefusedInOneLine) {
  expect_refused(third_party("keyword",
                             [](Json& j) {
                               j["parameters"][1]["name"] = "default";
                               j["launches"][0]["template_args"][3] = "default";
                               j["derived"][0]["expr"] = "cdiv(R * L, block * default)";
                               j["baseline"] = {{"block", 128}, {"default", 1}};
                             }),
                 "'default' is a C++ keyword");
  expect_refused(third_party("scratch", [](Json& j) { j["scratch"] = Json::parse(R"([{"name": "x", "elements": "R"}])"); }),
                 "scratch buffer 'x' has the name of a tensor of problem affine");
  expect_refused(third_party("scratch_out",
                             [](Json& j) { j["scratch"] = Json::parse(R"([{"name": "out", "elements": "R"}])"); }),
                 "scratch buffer 'out' has the name of the output ('out')");
  const fs::path dir = third_party("too_large");
  expect_error("--problem " + dir.string() + " --R 99999999999999999999 --compile-only",
               "'99999999999999999999' is too large");
  EXPECT_EQ(run("--problem " + dir.string() + " --R 99999999999999999999 --compile-only").code, 2);
}

// Issue 34 #11, #32: --problem-path takes a colon list, and tune list flags a folder that
// --problem NAME would refuse.
TEST(ProblemFolder, Issue34_ProblemPathIsAColonListAndListFlagsAMisnamedFolder) {
  const fs::path good = third_party("colon_good");
  const fs::path wrong_root = fs::temp_directory_path() / ("tune_problem_" + std::to_string(getpid())) / "colon_wrong";
  fs::remove_all(wrong_root);
  fs::create_directories(wrong_root);
  fs::copy(kFixture, wrong_root / "wrongname", fs::copy_options::recursive);
  const std::string path = wrong_root.string() + ":" + good.parent_path().string();
  const Result l = run("list --problem-path " + path);
  ASSERT_EQ(l.code, 0) << l.output;
  EXPECT_NE(l.output.find("affine  (--problem-path: " + good.string() + ")"), std::string::npos) << l.output;
  EXPECT_NE(l.output.find("not usable by name: names problem 'affine' but its folder is 'wrongname'"), std::string::npos)
      << l.output;
  const Result r = run("--problem affine --problem-path " + path + " --R 4 --budget 1 --compile-only --no-cache --out " +
                       out_dir("colon_path"));
  EXPECT_EQ(r.code, 0) << r.output;
}

// Round 9: --problem-path after a subcommand took the argument after its folder for a second
// folder (`tune header --problem-path DIR results.json` said "results is required"); it takes one
// folder an occurrence, as the docs say (repeat it, or a colon list).
TEST(ProblemFolder, ProblemPathAfterASubcommandTakesOneFolderAndLeavesTheResults) {
  const std::string examples = (std::string(TUNE_REPO_DIR) + "/examples");
  const std::string record = std::string(TUNE_REPO_DIR) + "/results/h200/softmax/R8192_L4096.json";
  const std::string header = out_dir("problem_path_after_sub") + "/softmax.hpp";
  const Result r = run("header --problem-path " + examples + " " + record + " -o " + header);
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(fs::exists(header)) << r.output;
  const Result twice = run("list --problem-path " + examples + " --problem-path " + std::string(TUNE_REPO_DIR) + "/configs");
  EXPECT_EQ(twice.code, 0) << twice.output;
  EXPECT_NE(twice.output.find("softmax  (--problem-path: "), std::string::npos) << twice.output;
}

// An unknown problem's line lists the names --problem takes: a folder whose file names another
// problem is not one of them (it was listed as known, then refused by that name).
TEST(ProblemFolder, AnUnknownProblemListsOnlyTheNamesThatWork) {
  const fs::path root = fs::temp_directory_path() / ("tune_problem_" + std::to_string(getpid())) / "unknown_names";
  fs::remove_all(root);
  fs::create_directories(root);
  fs::copy(kFixture, root / "thresh", fs::copy_options::recursive);  // names problem 'affine'
  fs::copy(kFixture, root / "affine", fs::copy_options::recursive);
  const Result r = run("--problem threshold --problem-path " + root.string() + " --R 4 --compile-only");
  EXPECT_EQ(r.code, 2) << r.output;
  expect_error_output(r, "unknown problem 'threshold'; known problems: affine, contact, scene_graph (searched ");
  expect_error_output(r, "; not usable by name: " + (root / "thresh").string() +
                             " (names problem 'affine'; make the folder's name and the file's agree)");
}

// ---- Issue 34: reference.py has a deadline, its processes end with it, its output is capped ----

// Whether a process is gone (a zombie waiting for init counts as gone), waiting up to 3 s.
bool gone(pid_t pid) {
  for (int i = 0; i < 300; ++i) {
    std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
    if (!f) return true;
    const std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    const auto close = stat.rfind(')');
    if (close != std::string::npos && stat.size() > close + 2 && stat[close + 2] == 'Z') return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// The pids a reference wrote into its folder's `pids`, each gone.
void expect_pids_gone(const fs::path& dir) {
  std::istringstream in(slurp(dir / "pids"));
  int n = 0;
  for (pid_t pid = 0; in >> pid; ++n) EXPECT_TRUE(gone(pid)) << "process " << pid << " of the reference outlived the run";
  EXPECT_GE(n, 3) << slurp(dir / "pids");
}

// A reference that ignores SIGTERM and SIGINT and starts a process in its group, one in a session
// of its own and one orphaned in a session of its own (a daemon), writing their pids; then `tail`.
std::string forking_reference(const fs::path& dir, const std::string& tail) {
  return "import os, signal, subprocess, time\n"
         "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
         "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
         "def reference(shape, params, inputs):\n"
         "    a = subprocess.Popen(['sleep', '300'])\n"
         "    b = subprocess.Popen(['sleep', '300'], start_new_session=True)\n"
         "    c = subprocess.run(['sh', '-c', 'setsid sleep 300 > /dev/null 2>&1 & echo $!'], capture_output=True, text=True)\n"
         "    with open('" +
         (dir / "pids").string() +
         "', 'w') as f:\n"
         "        f.write(f'{os.getpid()} {a.pid} {b.pid} {c.stdout.strip()}\\n')\n" +
         tail;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

TEST(ReferenceProcess, AReferenceThatNeverReturnsIsStoppedAtItsDeadlineWithItsProcesses) {
  const fs::path dir = third_party("hang");
  write(dir / "reference.py", forking_reference(dir, "    while True:\n        time.sleep(1)\n"));
  const fs::path tmp = dir.parent_path() / "tmp";
  fs::create_directories(tmp);
  const auto t0 = std::chrono::steady_clock::now();
  const Result r =
      run_with("TUNE_WORKER_FAKE=1 TMPDIR=" + tmp.string(),
               "--problem " + dir.string() + " --R 5 --no-cache --reference-timeout 3 --out " + out_dir("hang"));
  EXPECT_LT(seconds_since(t0), 60.0);
  EXPECT_EQ(r.code, 2) << r.output;  // the user's reference, not a device problem
  expect_error_output(r, (dir / "reference.py").string() + " did not return within 3 s");
  EXPECT_EQ(r.output.find("did not start"), std::string::npos) << r.output;
  // A line while it runs (every 10 s, or every quarter of a shorter deadline).
  EXPECT_NE(r.output.find("reference.py still running ("), std::string::npos) << r.output;
  expect_pids_gone(dir);
  EXPECT_TRUE(fs::is_empty(tmp)) << "the reference's temporary folder is left";

  // tune verify runs the reference in its own process: the same deadline, the same line.
  fs::create_directories(dir / "golden");
  Json golden{{"problem", "affine"}, {"shape", {{"R", 1}, {"L", 64}}}};
  golden["params"] = {{"scale", {{"shape", {64}}, {"data", std::vector<double>(64, 1.0)}}},
                      {"shift", {{"shape", {64}}, {"data", std::vector<double>(64, 0.0)}}}};
  golden["inputs"] = {{"x", {{"shape", {1, 64}}, {"data", std::vector<double>(64, 0.5)}}}};
  golden["output"] = {{"shape", {1, 64}}, {"dtype", "float64"}, {"data", std::vector<double>(64, 0.5)}};
  write(dir / "golden" / "g.json", golden.dump());
  fs::remove(dir / "pids");
  const Result v =
      run_with("TMPDIR=" + tmp.string(), "verify " + (dir / "golden" / "g.json").string() + " --reference-timeout 2");
  EXPECT_EQ(v.code, 2) << v.output;
  expect_error_output(v, "reference.py did not return within 2 s");
  expect_pids_gone(dir);
  EXPECT_TRUE(fs::is_empty(tmp));
}

TEST(ReferenceProcess, WhatAReferenceStartedEndsWhenItReturnsAlsoInASessionOfItsOwn) {
  const fs::path dir = third_party("forks");
  write(dir / "reference.py",
        forking_reference(dir, "    return inputs['x'] * params['scale'][None, :] + params['shift'][None, :]\n"));
  const Result r =
      run_with("TUNE_WORKER_FAKE=1", "--problem " + dir.string() + " --R 5 --no-cache --out " + out_dir("forks"));
  EXPECT_EQ(r.code, 0) << r.output;
  expect_pids_gone(dir);
}

// A reference that ends its process at once (os._exit) skips the runner's cleanup: what it started
// in a session of its own outlived tune (reparented to init), until the runner ran it in a child.
TEST(ReferenceProcess, WhatAReferenceStartedEndsAlsoWhenItEndsItsProcessAtOnce) {
  const fs::path dir = third_party("os_exit");
  write(dir / "reference.py", forking_reference(dir, "    os._exit(0)\n"));
  const Result r =
      run_with("TUNE_WORKER_FAKE=1", "--problem " + dir.string() + " --R 5 --no-cache --out " + out_dir("os_exit"));
  EXPECT_EQ(r.code, 2) << r.output;
  expect_error_output(r, "ended (exit code 0) without returning a result");
  expect_pids_gone(dir);
}

TEST(ReferenceProcess, ABadDeadlineIsRefusedInOneLine) {
  const std::string args =
      "--problem " + third_party("deadline").string() + " --R 5 --no-cache --out " + out_dir("deadline");
  for (const char* bad : {"0", "-1", "nan", "1e9"}) {
    const Result r = run(args + " --reference-timeout " + bad);
    EXPECT_EQ(r.code, 2) << r.output;
    expect_error_output(r, "--reference-timeout");
  }
  const Result e = run_with("TUNE_REFERENCE_TIMEOUT=soon", args);
  EXPECT_EQ(e.code, 2) << e.output;
  expect_error_output(e, "TUNE_REFERENCE_TIMEOUT=soon: expected a positive number of seconds");
}

TEST(ReferenceProcess, MegabytesOfOutputGiveOneShortLine) {
  const fs::path dir = third_party("chatty");
  write(dir / "reference.py",
        "import sys\n"
        "def reference(shape, params, inputs):\n"
        "    sys.stdout.write('y' * 5000000 + '\\n')\n"
        "    sys.stderr.write('z' * 3000000 + '\\n')\n"
        "    raise ValueError('x' * 2000000)\n");
  const Result r =
      run_with("TUNE_WORKER_FAKE=1", "--problem " + dir.string() + " --R 5 --no-cache --out " + out_dir("chatty"));
  EXPECT_EQ(r.code, 2) << r.output.substr(0, 2000);
  EXPECT_LT(r.output.size(), 20000u) << r.output.substr(0, 2000);
  expect_error_output(r, "reference.py failed: ValueError: xxxxx");
  EXPECT_NE(r.output.find("xxxxx..."), std::string::npos) << r.output.substr(r.output.size() - 2000);
}

// An exception whose message has several lines is quoted by its type and first lines, on one line
// (its last line alone says neither what was raised nor why).
TEST(ReferenceProcess, AMultiLineExceptionIsQuotedByItsTypeAndFirstLines) {
  const fs::path dir = third_party("multiline");
  write(dir / "reference.py",
        "def reference(shape, params, inputs):\n"
        "    raise RuntimeError('the shapes do not match:\\n  left: (5, 64)\\n  right: (64, 5)\\n\\n  hint: a\\n  b')\n");
  const Result r =
      run_with("TUNE_WORKER_FAKE=1", "--problem " + dir.string() + " --R 5 --no-cache --out " + out_dir("multiline"));
  EXPECT_EQ(r.code, 2) << r.output;
  expect_error_output(r,
                      "reference.py failed: RuntimeError: the shapes do not match: / left: (5, 64) / right: (64, 5) / ...");
}

TEST(ReferenceProcess, AResultOfAnotherShapeOrNotRealIsRefused) {
  const std::map<std::string, std::pair<std::string, std::string>> cases = {
      {"flat", {"(inputs['x'] * 2).reshape(-1)", "the reference returned shape (320,), the output 'out' has shape (5, 64)"}},
      {"transposed", {"(inputs['x'] * 2).T", "the reference returned shape (64, 5), the output 'out' has shape (5, 64)"}},
      {"column", {"(inputs['x'] * 2).reshape(-1, 1).tolist()", "the reference returned shape (320, 1)"}},
      {"complex", {"inputs['x'] * (1 + 2j)", "the reference returned complex values (complex128)"}},
      {"objects", {"np.array([object()] * 320, dtype=object).reshape(5, 64)", "the reference returned an array of object"}},
      {"none", {"None", "the reference returned None; return a float array of the output 'out', shape (5, 64)"}},
      // Adversarial round 7: a dict was reported as "an array of object (ndarray)", a tuple of the
      // output and more as a shape, a masked array's masked elements were read as their hidden data,
      // and a float16 reference of a float32 output (off by 5e-4) would fail every correct kernel.
      {"dict", {"{'out': inputs['x'] * 2}", "the reference returned a dict, not an array; return the output 'out' alone"}},
      {"tuple", {"(inputs['x'] * 2, 1.0)", "the reference returned a tuple of 2 item(s), not an array"}},
      {"masked", {"np.ma.masked_where(inputs['x'] > 0, inputs['x'] * 2)", "the reference returned a masked array with "}},
      {"float16",
       {"(inputs['x'] * 2).astype(np.float16)",
        "the reference returned float16 values, coarser than the output 'out' (float32) they judge; compute and "
        "return it in float64"}},
      {"string", {"'out'", "the reference returned an array of <U3 (str)"}},
      {"exits", {"sys.exit(0)", "called sys.exit(0) in reference()"}},
      {"quits", {"os._exit(0)", "ended (exit code 0) without returning a result"}},
  };
  for (const auto& [name, c] : cases) {
    const fs::path dir = third_party("result_" + name);
    write(dir / "reference.py",
          "import os, sys\nimport numpy as np\ndef reference(shape, params, inputs):\n    return " + c.first + "\n");
    const Result r =
        run_with("TUNE_WORKER_FAKE=1", "--problem " + dir.string() + " --R 5 --no-cache --out " + out_dir(name));
    EXPECT_EQ(r.code, 2) << name << ": " << r.output;
    SCOPED_TRACE(name);
    expect_error_output(r, c.second);
    EXPECT_EQ(r.output.find("out.npy"), std::string::npos) << r.output;
    // The module is named once (adversarial round 4: "<module> failed: <module>: the reference ...").
    const std::string module = (dir / "reference.py").string();
    EXPECT_EQ(r.output.find(module, r.output.find(module) + module.size()), std::string::npos) << r.output;
  }
  expect_refused(third_party("ref_folder", [](Json& j) { j["reference"]["python"] = "."; }),
                 "is a folder; name the Python file");
}

// Adversarial round 7: a result tune can read as it is (a list, a float32 or integer array, Fortran
// order, a strided view, np.matrix, a masked array with nothing masked, a tuple of the rows) runs.
TEST(ReferenceProcess, AResultThatReadsAsTheOutputRuns) {
  for (const char* expr :
       {"out.tolist()", "out.astype(np.float32)", "np.asfortranarray(out)", "np.repeat(out, 2, axis=1)[:, ::2]",
        "np.matrix(out)", "np.ma.masked_array(out, mask=False)", "tuple(out)", "np.round(out).astype(np.int64)"}) {
    const fs::path dir = third_party("readable");
    write(dir / "reference.py",
          "import numpy as np\ndef reference(shape, params, inputs):\n"
          "    out = inputs['x'] * params['scale'][None, :] + params['shift'][None, :]\n    return " +
              std::string(expr) + "\n");
    const Result r =
        run_with("TUNE_WORKER_FAKE=1", "--problem " + dir.string() + " --R 5 --no-cache --out " + out_dir("readable"));
    EXPECT_EQ(r.code, 0) << expr << ": " << r.output;
  }
}

// Adversarial round 7: the fake worker's gate ran no reference on its further inputs, so a reference
// that fails on an edge case alone (NaN on rows of zeros) passed a fake run and `tune check` with
// "further inputs passed", where a device's gate stops with exit 2.
TEST(ReferenceProcess, AReferenceThatFailsOnAnEdgeCaseStopsAFakeRunAndCheck) {
  const fs::path dir = third_party("edge_nan", [](Json& j) {
    j["edge_cases"] = Json::array({{{"name", "zero rows"}, {"set", {{"x", {{"fill", 0}}}}}}});
  });
  write(dir / "reference.py",
        "import numpy as np\ndef reference(shape, params, inputs):\n"
        "    x = inputs['x']\n    return x / np.abs(x).max(axis=1, keepdims=True) * params['scale'][None, :]\n");
  const std::string out = out_dir("edge_nan");
  const Result r = run_with("TUNE_WORKER_FAKE=1", "--problem " + dir.string() + " --R 5 --no-cache --out " + out);
  EXPECT_EQ(r.code, 2) << r.output;
  expect_error_output(r, (dir / "reference.py").string() + ": the reference output 'out' is ");
  EXPECT_NE(r.output.find("a reference must be finite"), std::string::npos) << r.output;
  const Result c =
      run_with("TUNE_WORKER_FAKE=1", "check " + out + "/fake-gpu/affine/R5_L64.json --all-finalists --fresh --sanitize off");
  EXPECT_EQ(c.code, 2) << c.output;
  EXPECT_NE(c.output.find("a reference must be finite"), std::string::npos) << c.output;
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
  for (const auto& v : compiled.at("variants")) EXPECT_EQ(v.at("status"), "compiled") << v.dump();

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

// Round 8: a space raised past --max-space's default (10^12 configurations here) takes hours to
// enumerate; the first Ctrl-C or SIGTERM ended nothing (the enumeration never asked), so the run
// went on until memory ran out. It now ends within the next 65536 configurations: exit 128 + the
// signal, one line saying what it was doing, nothing written.
TEST(ProblemFolder, ASignalWhileAHugeSpaceIsEnumeratedEndsTheRunAtOnce) {
  const fs::path dir = third_party("huge_space", [](Json& j) {
    // Names as literals: GCC 12 misreads a name built by "p" + std::to_string(i) here as an
    // overlapping memcpy (-Werror=restrict), depending on what it inlines.
    for (const char* name : {"p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8", "p9", "p10", "p11"}) {
      Json values = Json::array();
      for (int v = 1; v <= 10; ++v) values.push_back(v);
      j["parameters"].push_back({{"name", name}, {"values", values}});
      j["baseline"][name] = 1;
    }
    // None valid: nothing is held, and no valid count passes --max-variants before the signal.
    j["constraints"].push_back("p11 == 0");
  });
  const std::string out = out_dir("huge_space_interrupt");
  for (const int signal : {SIGINT, SIGTERM}) {
    const auto start = std::chrono::steady_clock::now();
    const Result r = run_command(fmt_signal_after(signal, 2) + " " + std::string(TUNE_EXE) + " --problem " + dir.string() +
                                 " --R 8 --compile-only --no-cache --max-space 100000000000000 --out " + out);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(r.code, 128 + signal) << r.output;
    EXPECT_LT(seconds, 30) << "the enumeration went on after the signal";
    EXPECT_NE(r.output.find("while enumerating the space of"), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(fs::path(out) / "compile-only-sm_90" / "affine")) << "nothing was written";
  }
}

// Round 8: results files are named by the shape (every dimension's name and value): a problem of
// long dimension names made a name past the file system's 255 bytes, refused at the results lock as
// "the results' folder must be writable" (it was), or, some bytes shorter, at the first snapshot
// (.json.partial), depending on the process id. It is refused before anything runs, saying why.
TEST(ProblemFolder, AShapeWhoseResultsFileNameIsTooLongIsRefusedBeforeAnythingRuns) {
  const fs::path dir = third_party("long_dims", [](Json& j) {
    for (int i = 0; i < 12; ++i) {
      const std::string name = "dimension_number_" + std::to_string(10 + i);
      j["shape"]["dims"].push_back(name);
      j["shape"]["defaults"][name] = 1;
    }
  });
  const std::string out = out_dir("long_dims");
  for (const std::string env : {"", "TUNE_WORKER_FAKE=1"}) {
    const Result r = run_with(env, "--problem " + dir.string() + " --R 8 --no-cache --out " + out +
                                       (env.empty() ? " --compile-only" : ""));
    EXPECT_EQ(r.code, 2) << r.output;
    expect_error_output(r,
                        "bytes: with the suffixes tune adds (.json.partial and a temporary's) it passes the 255 "
                        "bytes a file name may have; give the problem shorter dimension names");
    EXPECT_EQ(r.output.find("must be writable"), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(out)) << r.output;
  }
}
