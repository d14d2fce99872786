// Issue 36: tune --torch times the problem's PyTorch module after the search and the gate, records
// it, caches it and compares graph against graph on the last line. The fake worker (no GPU) with a
// fake harness (tests/fixtures/torch/fake_torch_harness.py, a fixture of canned times) in place of
// report/torch_baseline.py.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "support/cli_run.hpp"
#include "tune/device.hpp"
#include "tune/problem.hpp"
#include "tune/torch_compare.hpp"

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

const std::string kHarness = std::string(TUNE_FIXTURES) + "/torch/fake_torch_harness.py";

struct TorchRun {
  Result r;
  Json results;   // the results file, null when there is none
  int calls = 0;  // --one calls of the harness
};

// A small fake tune of contact (reference.py defines make_model) into `dir`, its cache in dir/cache.
TorchRun tune_with(const fs::path& dir, const std::string& env, const std::string& extra = "",
                   const std::string& sanitize = "off") {
  const std::string args = "--problem contact --B 2 --N 8 --C 16 --H 8 --sanitize " + sanitize + " --seed 7 --config " +
                           std::string(TUNE_FIXTURES) + "/contact_small_space.json --out " + (dir / "out").string() +
                           " --cache-dir " + (dir / "cache").string() + " " + extra;
  TorchRun t;
  t.r = run_with("TUNE_WORKER_FAKE=1 FAKE_TORCH_CALLS=" + (dir / "calls").string() + " " + env, args);
  const fs::path file = dir / "out" / "fake-gpu" / "contact" / "B2_N8_C16_H8.json";
  if (fs::exists(file)) t.results = Json::parse(std::ifstream(file));
  std::ifstream calls(dir / "calls");
  for (std::string line; std::getline(calls, line);) ++t.calls;
  return t;
}

fs::path fresh(const std::string& name) {
  const fs::path dir = out_dir("torch_compare_" + name);
  fs::create_directories(dir);
  return dir;
}

bool has(const Result& r, const std::string& text) { return r.output.find(text) != std::string::npos; }

std::string last_line_of(const std::string& out) {
  std::string s = out;
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s.substr(s.rfind('\n') + 1);
}

TEST(TorchCompare, TheModuleIsTimedOnTheRunsInputsRecordedAndComparedGraphAgainstGraph) {
  const fs::path dir = fresh("measured");
  const TorchRun t =
      tune_with(dir, "TUNE_TORCH_HARNESS=" + kHarness + " FAKE_TORCH_REQUEST=" + (dir / "request.json").string());
  ASSERT_EQ(t.r.code, 0) << t.r.output;
  ASSERT_TRUE(t.results.is_object()) << t.r.output;
  EXPECT_EQ(t.calls, 1);
  EXPECT_EQ(t.results.at("schema_minor_version"), 7);
  const Json& torch = t.results.at("torch");
  EXPECT_EQ(torch.at("status"), "measured") << torch.dump(1);
  EXPECT_EQ(torch.at("torch_version"), "0.0.0+fixture");
  EXPECT_EQ(torch.at("modes"), Json({"eager", "compile"}));
  EXPECT_EQ(torch.at("tf32"), false);
  EXPECT_EQ(torch.at("compile").at("graph").at("median_us"), 25.0);
  EXPECT_EQ(torch.at("eager").at("events").at("median_us"), 60.0);
  EXPECT_EQ(torch.at("compile").at("compile_seconds"), 1.5);
  // The harness got the run's timing draw: its seed, every parameter and input of contact.
  const Json request = Json::parse(std::ifstream(dir / "request.json"));
  EXPECT_EQ(request.at("seed"), 7);
  EXPECT_EQ(request.at("shape"), t.results.at("shape"));
  EXPECT_EQ(request.at("tensors").size(), t.results.at("context").at("tensors").size() - 1);  // all but the output
  // The problem as tune reads it at the shape (tune problem show's object): the harness runs no tune.
  EXPECT_EQ(request.at("problem_show").at("kind"), "tune.problem_show");
  EXPECT_EQ(request.at("problem_show").at("shape"), t.results.at("shape"));
  EXPECT_EQ(request.at("problem_show").at("tensors").size(), t.results.at("context").at("tensors").size());
  // The last line: the winner's graph time against the module's graph median.
  const Json& winner = *std::find_if(t.results.at("variants").begin(), t.results.at("variants").end(),
                                     [&](const Json& v) { return v.at("name") == t.results.at("summary").at("winner"); });
  const double graph = winner.at("timing").at("graph_mean_us").get<double>();
  const std::string last = last_line_of(t.r.output);
  EXPECT_EQ(last.rfind("winner ", 0), 0u) << t.r.output;
  EXPECT_NE(last.find(fmt::format("{:.2f}x over torch.compile (graph 25.00 us against the winner's {:.2f} us)", 25.0 / graph,
                                  graph)),
            std::string::npos)
      << last;
  EXPECT_NE(last.find(fmt::format("{:.2f}x over PyTorch eager (graph 50.00 us", 50.0 / graph)), std::string::npos) << last;
  EXPECT_TRUE(has(t.r, "torch: eager graph 50.00 us, torch.compile graph 25.00 us (torch 0.0.0+fixture, Fixture GPU)"))
      << t.r.output;
}

TEST(TorchCompare, ARetuneTakesTheCachedTimesAndNoCacheTimesAgain) {
  const fs::path dir = fresh("cached");
  const std::string env = "TUNE_TORCH_HARNESS=" + kHarness;
  ASSERT_EQ(tune_with(dir, env).r.code, 0);
  const TorchRun again = tune_with(dir, env);
  ASSERT_EQ(again.r.code, 0) << again.r.output;
  EXPECT_EQ(again.calls, 1) << "the second run called the harness again";
  EXPECT_EQ(again.results.at("torch").at("status"), "cached");
  EXPECT_EQ(again.results.at("torch").at("compile").at("graph").at("median_us"), 25.0);
  EXPECT_TRUE(has(again.r, "cached (--no-cache times it again)")) << again.r.output;
  EXPECT_NE(last_line_of(again.r.output).find("over torch.compile"), std::string::npos) << again.r.output;
  // Another mode is another measurement; --no-cache measures again.
  EXPECT_EQ(tune_with(dir, env, "--torch eager").calls, 2);
  const TorchRun fresh_run = tune_with(dir, env, "--no-cache");
  EXPECT_EQ(fresh_run.calls, 3);
  EXPECT_EQ(fresh_run.results.at("torch").at("status"), "measured");
}

TEST(TorchCompare, WithoutTorchOneLineSaysItWasSkippedAndTheRunGoesOn) {
  for (const auto& [behaviour, why] :
       std::vector<std::pair<std::string, std::string>>{{"no-torch", "PyTorch is not installed for "},
                                                        {"no-make-model",
                                                         "defines no make_model(shape): not a PyTorch module"},
                                                        {"no-cuda", "no CUDA device is available to PyTorch"}}) {
    SCOPED_TRACE(behaviour);
    const fs::path dir = fresh("skip_" + behaviour);
    const TorchRun t = tune_with(dir, "TUNE_TORCH_HARNESS=" + kHarness + " FAKE_TORCH_BEHAVIOUR=" + behaviour);
    ASSERT_EQ(t.r.code, 0) << t.r.output;
    EXPECT_TRUE(has(t.r, "torch: skipped: ")) << t.r.output;
    EXPECT_TRUE(has(t.r, why)) << t.r.output;
    EXPECT_EQ(t.results.at("torch").at("status"), "skipped");
    EXPECT_NE(t.results.at("torch").at("reason").get<std::string>().find(why), std::string::npos);
    EXPECT_EQ(last_line_of(t.r.output).find("torch"), std::string::npos) << t.r.output;
    EXPECT_NE(t.results.at("summary").at("winner"), nullptr);
  }
  // The real harness (report/torch_baseline.py) on this machine without a GPU: skipped, whichever the
  // reason (no torch for TUNE_PYTHON, or torch without CUDA).
  const TorchRun real =
      tune_with(fresh("skip_real"), "TUNE_TORCH_HARNESS=" + std::string(TUNE_REPO_DIR) + "/report/torch_baseline.py");
  ASSERT_EQ(real.r.code, 0) << real.r.output;
  EXPECT_TRUE(has(real.r, "torch: skipped: ")) << real.r.output;
  EXPECT_EQ(real.results.at("torch").at("status"), "skipped");
}

TEST(TorchCompare, AHarnessThatFailsOrHangsIsRecordedAndTheResultsStand) {
  for (const auto& [env, why] : std::vector<std::pair<std::string, std::string>>{
           {"FAKE_TORCH_BEHAVIOUR=crash", "fake_torch_harness.py failed: RuntimeError: fixture crash in the harness"},
           {"FAKE_TORCH_BEHAVIOUR=hang TUNE_TORCH_TIMEOUT=1", "did not finish within 1 s and was stopped"}}) {
    SCOPED_TRACE(env);
    const fs::path dir = fresh("fail_" + env.substr(env.find('=') + 1, 4));
    const TorchRun baseline = tune_with(dir / "off", "TUNE_TORCH_HARNESS=" + kHarness, "--torch off");
    const TorchRun t = tune_with(dir, "TUNE_TORCH_HARNESS=" + kHarness + " " + env);
    EXPECT_EQ(t.r.code, baseline.r.code) << t.r.output;
    ASSERT_TRUE(t.results.is_object()) << t.r.output;
    EXPECT_EQ(t.results.at("torch").at("status"), "failed");
    EXPECT_NE(t.results.at("torch").at("reason").get<std::string>().find(why), std::string::npos) << t.results.at("torch");
    EXPECT_TRUE(has(t.r, "torch: failed: ")) << t.r.output;
    EXPECT_EQ(t.results.at("summary"), baseline.results.at("summary"));
    EXPECT_TRUE(fs::exists(dir / "out" / "fake-gpu" / "contact" / "B2_N8_C16_H8.hpp"));
    // A failure is not cached: the next run tries again.
    EXPECT_EQ(tune_with(dir, "TUNE_TORCH_HARNESS=" + kHarness).results.at("torch").at("status"), "measured");
  }
}

// A Ctrl-C while the module is timed (torch.compile takes a minute) stops the harness at once; the
// results of the kernels stand, the record says it was stopped.
TEST(TorchCompare, ACtrlCStopsTheHarnessAtOnceAndTheResultsStand) {
  const fs::path dir = fresh("interrupt");
  const fs::path calls = dir / "calls";
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::freopen((dir / "log").c_str(), "w", stderr);
    std::freopen((dir / "out.log").c_str(), "w", stdout);
    for (const auto& [k, v] :
         {std::pair{"TUNE_WORKER_FAKE", std::string("1")}, std::pair{"TUNE_TORCH_HARNESS", kHarness},
          std::pair{"FAKE_TORCH_BEHAVIOUR", std::string("hang")}, std::pair{"FAKE_TORCH_CALLS", calls.string()}})
      setenv(k, v.c_str(), 1);
    const std::string config = std::string(TUNE_FIXTURES) + "/contact_small_space.json";
    const std::string out = (dir / "out").string(), cache = (dir / "cache").string();
    execl(TUNE_EXE, TUNE_EXE, "--problem", "contact", "--B", "2", "--N", "8", "--C", "16", "--H", "8", "--sanitize", "off",
          "--config", config.c_str(), "--out", out.c_str(), "--cache-dir", cache.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  for (int i = 0; i < 600 && !fs::exists(calls); ++i) usleep(50 * 1000);  // the harness is running --one
  ASSERT_TRUE(fs::exists(calls));
  // It started beside the gate (issue 37): the Ctrl-C comes once the gate is over (the fake one, a moment).
  usleep(1500 * 1000);
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(kill(pid, SIGINT), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 20.0);
  const Json j = Json::parse(std::ifstream(dir / "out" / "fake-gpu" / "contact" / "B2_N8_C16_H8.json"));
  EXPECT_EQ(j.at("torch").at("status"), "failed");
  EXPECT_NE(j.at("torch").at("reason").get<std::string>().find("stopped"), std::string::npos) << j.at("torch");
  EXPECT_NE(j.at("summary").at("winner"), nullptr);
  EXPECT_EQ(j.at("complete"), true);
}

TEST(TorchCompare, TorchOffRunsNoHarnessAndABadModeIsRefused) {
  const fs::path dir = fresh("off");
  const TorchRun t = tune_with(dir, "TUNE_TORCH_HARNESS=" + kHarness, "--torch off");
  ASSERT_EQ(t.r.code, 0) << t.r.output;
  EXPECT_EQ(t.calls, 0);
  EXPECT_FALSE(has(t.r, "torch:")) << t.r.output;
  EXPECT_EQ(t.results.at("torch").at("status"), "skipped");
  EXPECT_EQ(t.results.at("torch").at("reason"), "--torch off");
  // The fake worker alone (no harness named): skipped in one line, no Python started for it.
  const TorchRun fake = tune_with(fresh("fake_only"), "");
  EXPECT_TRUE(has(fake.r, "torch: skipped: TUNE_WORKER_FAKE: a synthetic device")) << fake.r.output;
  const Result bad = run("--problem contact --torch sometimes");
  EXPECT_EQ(bad.code, 2) << bad.output;
  EXPECT_TRUE(has(bad, "--torch")) << bad.output;
}

TEST(TorchCompare, AHandEditedTorchRecordIsRefusedByTheReader) {
  const fs::path dir = fresh("edited");
  const TorchRun t = tune_with(dir, "TUNE_TORCH_HARNESS=" + kHarness);
  ASSERT_EQ(t.r.code, 0) << t.r.output;
  Json edited = t.results;
  edited["torch"]["compile"]["graph"]["median_us"] = -1;
  const fs::path file = dir / "edited.json";
  std::ofstream(file) << edited.dump(1);
  const Result r = run("header " + file.string() + " --allow-synthetic --output " + (dir / "x.hpp").string());
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_TRUE(has(r, "torch.compile.graph.median_us")) << r.output;
}

// Issue 37: the harness prepares (torch.compile's compile: minutes at a large module) while the gate
// runs and times only after the gate's last process ended; the gate's record says what it added.
std::vector<double> times_in(const fs::path& file, const std::string& word) {
  std::vector<double> out;
  std::ifstream in(file);
  for (std::string a, b; in >> a >> b;) {
    if (a + " " + b == "sanitizer done") {
      std::string t;
      in >> t;
      if (word == "sanitizer") out.push_back(std::stod(t));
    } else if (a == word) {
      out.push_back(std::stod(b));
    }
  }
  return out;
}

TorchRun beside_gate(const fs::path& dir, double prep_s) {
  const std::string env = "TUNE_TORCH_HARNESS=" + kHarness + " FAKE_TORCH_REQUEST=" + (dir / "request.json").string() +
                          " FAKE_TORCH_TIMELINE=" + (dir / "timeline").string() +
                          fmt::format(" FAKE_TORCH_PREP_S={}", prep_s) + " TUNE_SANITIZER=" + TUNE_REPO_DIR +
                          "/tests/support/fake-compute-sanitizer TUNE_TEST_SANITIZER_SLEEP_S=2 TUNE_TEST_SANITIZER_DONE=" +
                          (dir / "timeline").string();
  return tune_with(dir, env, "", "winner");
}

TEST(TorchCompare, TheModuleIsPreparedBesideTheGateAndTimedOnlyAfterItsLastProcess) {
  const fs::path dir = fresh("beside");
  const TorchRun t = beside_gate(dir, 0);
  ASSERT_EQ(t.r.code, 0) << t.r.output;
  EXPECT_EQ(t.results.at("torch").at("status"), "measured");
  const Json request = Json::parse(std::ifstream(dir / "request.json"));
  ASSERT_TRUE(request.contains("hold")) << request.dump(1);
  const std::vector<double> done = times_in(dir / "timeline", "sanitizer");
  const std::vector<double> released = times_in(dir / "timeline", "released");
  ASSERT_EQ(done.size(), 4u) << "one sanitized process per tool on the would-be winner";
  ASSERT_EQ(released.size(), 1u);
  EXPECT_GE(released[0], *std::max_element(done.begin(), done.end())) << "the module was timed while a sanitizer ran";
  // Prepared at once, it waited for the gate: the gate added its wall (less the harness's start).
  const Json& gate = t.results.at("context").at("gate");
  EXPECT_GT(gate.at("added_s").get<double>(), 1.0) << gate.dump(1);
  EXPECT_LE(gate.at("added_s").get<double>(), gate.at("wall_s").get<double>());
  EXPECT_NEAR(gate.at("added_share_of_run").get<double>(),
              gate.at("added_s").get<double>() / t.results.at("wall_seconds").at("total").get<double>(), 1e-3);
  EXPECT_FALSE(fs::exists(request.at("hold").get<std::string>())) << "the release file is left behind";
}

TEST(TorchCompare, AGateShorterThanTheModulesPreparationAddsLittleAndTheLineSaysSo) {
  const fs::path dir = fresh("beside_long_prep");
  const TorchRun t = beside_gate(dir, 6);
  ASSERT_EQ(t.r.code, 0) << t.r.output;
  const Json& gate = t.results.at("context").at("gate");
  EXPECT_GT(gate.at("wall_s").get<double>(), 2.0) << gate.dump(1);
  EXPECT_LT(gate.at("added_s").get<double>(), 1.0) << gate.dump(1);
  EXPECT_TRUE(has(t.r, "beside the PyTorch module's preparation, it added")) << t.r.output;
  // Without the module (--torch off) the gate adds all of its wall.
  const TorchRun off = tune_with(fresh("beside_off"),
                                 "TUNE_SANITIZER=" + std::string(TUNE_REPO_DIR) +
                                     "/tests/support/fake-compute-sanitizer TUNE_TEST_SANITIZER_SLEEP_S=1",
                                 "--torch off", "winner");
  ASSERT_EQ(off.r.code, 0) << off.r.output;
  const Json& g = off.results.at("context").at("gate");
  EXPECT_EQ(g.at("added_s"), g.at("wall_s"));
}

// A TorchBeside dropped without wait() (the gate threw: the run ends otherwise) stops its harness
// while it waits: nothing is timed, no harness is left waiting. In process, on the fake harness.
TEST(TorchCompare, AHarnessBesideAGateThatThrowsIsStoppedUntimed) {
  const fs::path dir = fresh("beside_dropped");
  setenv("TUNE_TORCH_HARNESS", kHarness.c_str(), 1);
  setenv("FAKE_TORCH_TIMELINE", (dir / "timeline").c_str(), 1);
  setenv("FAKE_TORCH_CALLS", (dir / "calls").c_str(), 1);
  tune::DeviceInfo device;
  device.name = "Fixture GPU";
  device.cc_major = 9;
  const auto t0 = std::chrono::steady_clock::now();
  {
    tune::TorchBeside beside(tune::find_problem("contact"), tune::Shape({{"B", 2}, {"N", 8}, {"C", 16}, {"H", 8}}), device,
                             tune::TorchCompare{.seed = 7, .fake_device = true}, [](const std::string&) {});
    beside.quiet();  // prepared: the harness waits for its release
    ASSERT_TRUE(fs::exists(dir / "calls")) << "the harness never ran --one";
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 30.0);
  EXPECT_FALSE(fs::exists(dir / "timeline")) << "the dropped harness was released and timed the module";
  for (const char* v : {"TUNE_TORCH_HARNESS", "FAKE_TORCH_TIMELINE", "FAKE_TORCH_CALLS"}) unsetenv(v);
}

}  // namespace
