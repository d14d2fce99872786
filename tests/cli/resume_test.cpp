// Interruption and resume of searches in passes, sweeps and sweeps on several devices (issue 34,
// #6 to #8), on the fake worker and the small affine fixture folder: a stop asked for once stays
// asked for the whole run, and --resume neither tunes a finished shape again nor loses the records
// of a shape that ran on another device.
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/cli_run.hpp"

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

std::string affine_args(const std::string& out, int seed = 7) {
  return "--problem " + std::string(TUNE_FIXTURES) + "/problems/affine --seed " + std::to_string(seed) + " --out " + out +
         " --cache-dir " + TUNE_BINARY_DIR + "/cli_out/resume_cache";
}

constexpr const char* kModel = " --search model --model-init 4 --model-batch 2 --model-rounds 3";

std::string slurp(const fs::path& file) {
  std::ifstream f(file);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

Json read_json(const fs::path& file) { return Json::parse(std::ifstream(file)); }

std::size_t journal_records(const fs::path& journal) {
  std::ifstream in(journal);
  std::size_t n = 0;
  for (std::string line; std::getline(in, line);) n += line.find("\"record\"") != std::string::npos;
  return n;
}

// tune with `env` ("NAME=value" words) and `args`, in a process group of its own, its output in `log`.
pid_t start(const std::string& env, const std::string& args, const std::string& log) {
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    std::freopen(log.c_str(), "w", stderr);
    std::freopen(log.c_str(), "a", stdout);
    std::istringstream vars(env);
    for (std::string v; vars >> v;) putenv(strdup(v.c_str()));
    std::vector<std::string> words = {TUNE_EXE};
    std::istringstream in(args);
    for (std::string w; in >> w;) words.push_back(w);
    std::vector<char*> argv;
    for (auto& w : words) argv.push_back(w.data());
    argv.push_back(nullptr);
    execv(TUNE_EXE, argv.data());
    _exit(127);
  }
  return pid;
}

// Waits (at most 60 s) until `ready` holds.
template <class Ready>
bool wait_until(Ready ready) {
  for (int i = 0; i < 1200; ++i) {
    if (ready()) return true;
    usleep(50 * 1000);
  }
  return false;
}

// The exit code of pid, -signal when a signal ended it.
int wait_exit(pid_t pid) {
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1000;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
}

const std::string kSlowFake = "TUNE_WORKER_FAKE=1 TUNE_WORKER_FAKE_DELAY_MS=300";

// #6: a model search stopped in its first pass stops there: exit 130, the results marked
// interrupted, no header, and no later pass (before, the last pass forgot the Ctrl-C and ran on).
TEST(Resume, ACtrlCInTheFirstPassOfAModelSearchEndsTheRunWithNoLaterPass) {
  const std::string out = out_dir("resume_model_int");
  fs::create_directories(out);
  const fs::path result = fs::path(out) / "fake-gpu" / "affine" / "R32_L64.json";
  const pid_t pid = start(kSlowFake, affine_args(out) + " --R 32" + kModel, out + ".log");
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(wait_until([&] { return journal_records(fs::path(result).replace_extension(".journal.jsonl")) >= 1; }))
      << slurp(out + ".log");
  ASSERT_EQ(kill(-pid, SIGINT), 0);
  EXPECT_EQ(wait_exit(pid), 130) << slurp(out + ".log");
  const std::string log = slurp(out + ".log");
  EXPECT_NE(log.find("interrupted by "), std::string::npos) << log;
  EXPECT_EQ(log.find("pass 2:"), std::string::npos) << "no pass after the interrupted one\n" << log;
  EXPECT_EQ(log.find("model round 1:"), std::string::npos) << log;
  const Json j = read_json(result);
  EXPECT_EQ(j.at("context").at("search").at("interrupted"), true);
  EXPECT_FALSE(fs::exists(fs::path(result).replace_extension(".hpp"))) << "no header from an interrupted run";
}

// #6 in a --transfer sweep, by SIGTERM: the first shape stops, and the later shapes are not tuned.
TEST(Resume, ASigtermInATransferSweepStopsItsShapeAndTheShapesAfterIt) {
  const std::string out = out_dir("resume_transfer_term");
  fs::create_directories(out);
  const fs::path dir = fs::path(out) / "fake-gpu" / "affine";
  const pid_t pid = start(kSlowFake, affine_args(out) + " --R 32,64,128 --transfer" + kModel, out + ".log");
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(wait_until([&] { return journal_records(dir / "R32_L64.journal.jsonl") >= 1; })) << slurp(out + ".log");
  ASSERT_EQ(kill(-pid, SIGTERM), 0);
  EXPECT_EQ(wait_exit(pid), 143) << slurp(out + ".log");
  const std::string log = slurp(out + ".log");
  EXPECT_EQ(log.find("pass 2:"), std::string::npos) << log;
  EXPECT_NE(log.find("sweep: 1 of 3 items run"), std::string::npos) << log;
  EXPECT_EQ(read_json(dir / "R32_L64.json").at("context").at("search").at("interrupted"), true);
  EXPECT_FALSE(fs::exists(dir / "R32_L64.hpp"));
  for (const char* later : {"R64_L64", "R128_L64"}) {
    EXPECT_FALSE(fs::exists(dir / (std::string(later) + ".json"))) << later << "\n" << log;
    EXPECT_FALSE(fs::exists(dir / (std::string(later) + ".journal.jsonl"))) << later << "\n" << log;
  }
}

}  // namespace
