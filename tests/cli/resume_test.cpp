// Interruption and resume of searches in passes, sweeps and sweeps on several devices (issue 34,
// #6 to #8), on the fake worker and the small affine fixture folder: a stop asked for once stays
// asked for the whole run, and --resume neither tunes a finished shape again nor loses the records
// of a shape that ran on another device.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/cli_run.hpp"
#include "support/fixture_problem.hpp"
#include "support/held_lock.hpp"

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
  // Its best so far is no winner (adversarial round 4: it was printed as one).
  EXPECT_EQ(log.find("[winner]"), std::string::npos) << log;
  EXPECT_EQ(log.find("\nwinner "), std::string::npos) << log;
  EXPECT_NE(log.find("  [best so far]"), std::string::npos) << log;
  EXPECT_NE(log.find("\nbest so far "), std::string::npos) << log;
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
  const std::string item = std::string(TUNE_FIXTURES) + "/problems/affine R=";
  EXPECT_NE(log.find("\nsweep interrupted (SIGTERM) after "), std::string::npos) << log;
  EXPECT_NE(log.find(" s: 0 of 3 items complete; cut short, partial results written: " + item + "32 (" +
                     (dir / "R32_L64.json").string() + "); not run, nothing written: " + item + "64, " + item +
                     "128; run the same command with --resume to finish the sweep\n"),
            std::string::npos)
      << log;
  EXPECT_EQ(read_json(dir / "R32_L64.json").at("context").at("search").at("interrupted"), true);
  EXPECT_FALSE(fs::exists(dir / "R32_L64.hpp"));
  for (const char* later : {"R64_L64", "R128_L64"}) {
    EXPECT_FALSE(fs::exists(dir / (std::string(later) + ".json"))) << later << "\n" << log;
    EXPECT_FALSE(fs::exists(dir / (std::string(later) + ".journal.jsonl"))) << later << "\n" << log;
  }
}

// A problem like affine whose space takes hours to enumerate (10^12 configurations, none valid):
// a signal sent while its shape is in a sweep lands before the shape has any variant.
fs::path huge_space_problem(const std::string& out) {
  const fs::path dir = fs::path(out) / "problems" / "huge_space";
  tune::test::copy_fixture_problem("affine", dir, [](Json& j) {
    j["problem"] = "huge_space";
    for (const char* name : {"p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8", "p9", "p10", "p11"}) {
      j["parameters"].push_back({{"name", name}, {"values", Json::array({1, 2, 3, 4, 5, 6, 7, 8, 9, 10})}});
      j["baseline"][name] = 1;
    }
    j["constraints"].push_back("p11 == 0");
  });
  return dir;
}

// A sweep file of `items` ({problem folder, R}), written beside the out folder.
std::string sweep_file(const std::string& out, const std::vector<std::pair<fs::path, int>>& items) {
  Json j{{"items", Json::array()}};
  for (const auto& [problem, r] : items) j["items"].push_back({{"problem", problem.string()}, {"R", r}});
  const std::string file = out + ".sweep.json";
  std::ofstream(file) << j.dump();
  return file;
}

// Round 9: a stop while a later shape of a sweep was enumerating its space ended the sweep with that
// shape's error line (in one process) and no sweep line; the earlier shapes' summaries had scrolled
// past. It now ends as an interrupted sweep: its last line names what was written and what was not.
TEST(Resume, ASweepStoppedWhileALaterShapeEnumeratesEndsWithTheSweepsLastLine) {
  const std::string out = out_dir("resume_sweep_enumerating");
  fs::create_directories(out);
  fs::remove(out + ".log");  // a last run's log would answer the wait below at once
  const fs::path affine = fs::path(TUNE_FIXTURES) / "problems" / "affine", huge = huge_space_problem(out);
  const std::string file = sweep_file(out, {{affine, 8}, {huge, 8}, {affine, 16}});
  const pid_t pid = start("TUNE_WORKER_FAKE=1",
                          "--sweep " + file + " --max-space 100000000000000 --out " + out + " --cache-dir " +
                              TUNE_BINARY_DIR + "/cli_out/resume_cache",
                          out + ".log");
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(wait_until([&] { return slurp(out + ".log").find("space: configurations checked") != std::string::npos; }))
      << slurp(out + ".log");
  ASSERT_EQ(kill(-pid, SIGINT), 0);
  EXPECT_EQ(wait_exit(pid), 130) << slurp(out + ".log");
  const std::string log = slurp(out + ".log");
  EXPECT_NE(log.find(huge.string() + " R=8: interrupted (Ctrl-C) while enumerating the space of "), std::string::npos)
      << log;
  EXPECT_NE(log.find(" s: 1 of 3 items complete; not run, nothing written: " + huge.string() + " R=8, " + affine.string() +
                     " R=16; run the same command with --resume to finish the sweep\n"),
            std::string::npos)
      << log;
  EXPECT_EQ(log.rfind("\nsweep interrupted (Ctrl-C) after "), log.rfind("\n", log.size() - 2)) << "the last line\n" << log;
  EXPECT_TRUE(read_json(fs::path(out) / "fake-gpu" / "affine" / "R8_L64.json").at("complete").get<bool>());
  EXPECT_FALSE(fs::exists(fs::path(out) / "fake-gpu" / "affine" / "R16_L64.json"));
  EXPECT_FALSE(fs::exists(fs::path(out) / "fake-gpu" / "huge_space"));
}

// Round 9: a Ctrl-C while the first worker ran reference.py (which may take minutes) was not seen
// until the reference had run, and then one more variant was measured. The wait for the worker
// now sees the stop: the worker and its reference end at once, the shape's run ends with one line
// and 130, and the journal and snapshot it had just made are gone (it measured nothing).
TEST(Resume, ACtrlCWhileTheFirstWorkerRunsTheReferenceEndsTheRunAtOnce) {
  const std::string out = out_dir("resume_slow_reference");
  fs::create_directories(out);
  fs::remove(out + ".log");
  const fs::path dir = fs::path(out) / "problems" / "affine";
  tune::test::copy_fixture_problem("affine", dir, [](Json&) {});
  const std::string reference = slurp(dir / "reference.py");
  std::ofstream(dir / "reference.py") << "import time\ntime.sleep(60)\n" << reference;
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = start("TUNE_WORKER_FAKE=1",
                          "--problem " + dir.string() + " --R 8 --out " + out + " --cache-dir " + TUNE_BINARY_DIR +
                              "/cli_out/resume_cache",
                          out + ".log");
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(wait_until([&] { return slurp(out + ".log").find("compile jobs") != std::string::npos; }))
      << slurp(out + ".log");
  usleep(1500 * 1000);  // the compiles are done; the worker waits for its reference
  ASSERT_EQ(kill(-pid, SIGINT), 0);
  EXPECT_EQ(wait_exit(pid), 130) << slurp(out + ".log");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30)) << "the run waited for the reference";
  const std::string log = slurp(out + ".log");
  EXPECT_NE(log.find("tune: interrupted (Ctrl-C) while starting the worker (it runs the problem's reference.py "
                     "first); this shape's run measured and wrote nothing"),
            std::string::npos)
      << log;
  const fs::path shape = fs::path(out) / "fake-gpu" / "affine" / "R8_L64.json";
  EXPECT_FALSE(fs::exists(fs::path(shape).replace_extension(".journal.jsonl"))) << log;
  EXPECT_FALSE(fs::exists(fs::path(shape).concat(".partial"))) << log;
  EXPECT_FALSE(fs::exists(shape)) << log;
}

// The same on two devices: the stop that came while one device enumerated was rethrown as the
// sweep's error once the other ended, with no sweep line (round 8). Every device stops after its
// item in hand, the finished shapes stay whole, and the last line says what is left.
TEST(Resume, ASweepOnDevicesStoppedWhileOneEnumeratesEndsAsAnInterruptedSweep) {
  const std::string out = out_dir("resume_devices_enumerating");
  fs::create_directories(out);
  fs::remove(out + ".log");  // a last run's log would answer the wait below at once
  const fs::path affine = fs::path(TUNE_FIXTURES) / "problems" / "affine", huge = huge_space_problem(out);
  const std::string file = sweep_file(out, {{huge, 8}, {affine, 8}, {affine, 16}, {affine, 32}});
  const pid_t pid = start("TUNE_WORKER_FAKE=1 TUNE_WORKER_FAKE_DEVICES=2",
                          "--sweep " + file + " --devices all --max-space 100000000000000 --out " + out + " --cache-dir " +
                              TUNE_BINARY_DIR + "/cli_out/resume_cache",
                          out + ".log");
  ASSERT_GT(pid, 0);
  const auto finished = [&] {
    for (const char* d : {"fake-gpu-fa4e0000", "fake-gpu-fa4e0001"})
      if (fs::exists(fs::path(out) / d / "affine" / "R8_L64.hpp")) return true;
    return false;
  };
  ASSERT_TRUE(wait_until([&] {
    return finished() && slurp(out + ".log").find("space: configurations checked") != std::string::npos;
  })) << slurp(out + ".log");
  ASSERT_EQ(kill(-pid, SIGINT), 0);
  EXPECT_EQ(wait_exit(pid), 130) << slurp(out + ".log");
  const std::string log = slurp(out + ".log");
  EXPECT_EQ(log.find("internal error"), std::string::npos) << log;
  const auto last = log.rfind("\nsweep interrupted (Ctrl-C) after ");
  ASSERT_NE(last, std::string::npos) << log;
  EXPECT_EQ(last, log.rfind("\n", log.size() - 2)) << "the last line\n" << log;
  const std::string line = log.substr(last);
  EXPECT_NE(line.find(" of 4 items complete"), std::string::npos) << line;
  EXPECT_NE(line.find("not run, nothing written: " + huge.string() + " R=8"), std::string::npos) << line;
  EXPECT_NE(line.find("; run the same command with --resume to finish the sweep\n"), std::string::npos) << line;
  for (const char* d : {"fake-gpu-fa4e0000", "fake-gpu-fa4e0001"})
    EXPECT_FALSE(fs::exists(fs::path(out) / d / "huge_space")) << d;
}

// Round 9: a stop while the gate ran let its round end (every finalist re-measured and gated), and
// then the torch step took the stop as the run's: the run was written interrupted, with no header,
// its best "not gated" though it was. It is complete now; a sweep stops after it.
TEST(Resume, AStopWhileTheGateRunsLeavesTheGatedRunComplete) {
  const std::string out = out_dir("resume_stop_in_gate");
  fs::create_directories(out);
  fs::remove(out + ".log");
  const fs::path dir = fs::path(out) / "fake-gpu" / "affine";
  const std::string env = std::string("TUNE_WORKER_FAKE=1 TUNE_SANITIZER=") + TUNE_REPO_DIR +
                          "/tests/support/fake-compute-sanitizer TUNE_TEST_SANITIZER_SLEEP_S=3";
  const pid_t pid = start(env, affine_args(out) + " --R 32,64 --fresh-verdicts", out + ".log");
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(wait_until([&] { return slurp(out + ".log").find(" under compute-sanitizer") != std::string::npos; }))
      << slurp(out + ".log");
  // The sanitizers start just after that line and then sleep 3 s: the stop lands while they run,
  // not in the instant one is spawned (a signal to the group then can reach the child before it has
  // a group of its own, and kill it: a race of the spawn itself, not what this test is about).
  usleep(1000 * 1000);
  ASSERT_EQ(kill(-pid, SIGINT), 0);
  EXPECT_EQ(wait_exit(pid), 130) << slurp(out + ".log");
  const std::string log = slurp(out + ".log");
  const Json j = read_json(dir / "R32_L64.json");
  EXPECT_TRUE(j.at("complete").get<bool>());
  EXPECT_FALSE(j.at("context").at("search").value("interrupted", false)) << log;
  EXPECT_NE(j.at("summary").at("winner"), nullptr);
  EXPECT_TRUE(fs::exists(dir / "R32_L64.hpp")) << log;
  EXPECT_EQ(log.find("not gated"), std::string::npos) << log;
  EXPECT_NE(log.find(" s: 1 of 2 items complete; not run, nothing written: "), std::string::npos) << log;
  EXPECT_FALSE(fs::exists(dir / "R64_L64.json"));
}

// Round 9: a shape that no variant can take (found as its space is enumerated, at its turn) ended
// the whole sweep with that shape's line (exit 2): the shapes after it were never run, and no sweep
// line said so. It is skipped as a shape another tune writes is: one line, the sweep goes on, the
// last line names it (exit 2), on one device and on several.
TEST(Resume, ASweepSkipsAShapeNoVariantCanTakeAndRunsTheOthers) {
  const std::string out = out_dir("resume_sweep_unrunnable");
  const fs::path problem = fs::path(out) / "problems" / "affine";
  tune::test::copy_fixture_problem("affine", problem, [](Json& j) { j["constraints"].push_back("R != 16"); });
  const std::string args =
      "--problem " + problem.string() + " --R 8,16,32 --cache-dir " + TUNE_BINARY_DIR + "/cli_out/resume_cache --out " + out;
  for (const std::string devices : {"", " --devices all"}) {
    const Result r = run_with("TUNE_WORKER_FAKE=1 TUNE_WORKER_FAKE_DEVICES=2", args + devices);
    EXPECT_EQ(r.code, 2) << r.output;
    EXPECT_NE(r.output.find(problem.string() + " R=16: no configuration of "), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("; skipped, the sweep goes on"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("tune: 1 shape(s) skipped because no variant of their space can take them (each said why "
                            "above): " +
                            problem.string() + " R=16; change or leave them out"),
              std::string::npos)
        << r.output;
    std::set<std::string> written;
    for (const auto& entry : fs::recursive_directory_iterator(out))
      if (entry.path().extension() == ".hpp") written.insert(entry.path().stem().string());
    EXPECT_EQ(written, (std::set<std::string>{"R8_L64", "R32_L64"})) << devices << "\n" << r.output;
    fs::remove_all(fs::path(out) / (devices.empty() ? "fake-gpu" : "fake-gpu-fa4e0000"));
    fs::remove_all(fs::path(out) / "fake-gpu-fa4e0001");
  }
}

// Round 9: a reader of tune's output that went away (`tune ... | head -c 1`) ended the run by
// SIGPIPE at its next line: mid-variant, the sweep's later shapes never run, its lock left behind.
// The run goes on, its output to nowhere, and every shape is written whole (exit 0).
TEST(Resume, ASweepWhoseOutputIsClosedRunsToTheEnd) {
  const std::string out = out_dir("resume_closed_output");
  fs::create_directories(out);
  const fs::path dir = fs::path(out) / "fake-gpu" / "affine";
  for (const std::string streams : {"", " 2>&1"}) {
    fs::remove_all(dir);
    const Result r =
        run_command("(TUNE_WORKER_FAKE=1 TUNE_WORKER_FAKE_DELAY_MS=20 " + std::string(TUNE_EXE) + " " + affine_args(out) +
                    " --R 32,64,128" + streams + "; echo $? > " + out + "/code) | head -c 1 > /dev/null");
    EXPECT_EQ(r.code, 0) << r.output;
    EXPECT_EQ(slurp(out + "/code"), "0\n") << streams << "\n" << r.output;
    for (const char* shape : {"R32_L64", "R64_L64", "R128_L64"}) {
      EXPECT_TRUE(fs::exists(dir / (std::string(shape) + ".hpp"))) << shape << streams;
      EXPECT_FALSE(fs::exists(dir / (std::string(shape) + ".lock"))) << shape << streams;
    }
  }
}

// Round 9: a hangup (the terminal closed, an ssh session lost) ended the run mid-variant, as kill -9
// would: its snapshot not marked interrupted, its lock left behind. It stops the run as SIGTERM does
// (exit 129), unless the run began with it ignored (nohup): then the run goes on to its end.
TEST(Resume, AHangupStopsTheRunAsSigtermDoesUnlessIgnoredAsItBegan) {
  const std::string out = out_dir("resume_hangup");
  fs::create_directories(out);
  const fs::path dir = fs::path(out) / "fake-gpu" / "affine";
  const pid_t pid = start(kSlowFake, affine_args(out) + " --R 32,64", out + ".log");
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(wait_until([&] { return journal_records(dir / "R32_L64.journal.jsonl") >= 1; })) << slurp(out + ".log");
  ASSERT_EQ(kill(-pid, SIGHUP), 0);
  EXPECT_EQ(wait_exit(pid), 129) << slurp(out + ".log");
  EXPECT_TRUE(read_json(dir / "R32_L64.json").at("context").at("search").at("interrupted").get<bool>());
  EXPECT_NE(slurp(out + ".log").find("\nsweep interrupted (SIGHUP) after "), std::string::npos) << slurp(out + ".log");
  EXPECT_FALSE(fs::exists(dir / "R32_L64.lock"));

  fs::remove_all(dir);
  const auto previous = std::signal(SIGHUP, SIG_IGN);  // as nohup starts it
  const pid_t ignoring = start(kSlowFake, affine_args(out) + " --R 32", out + ".log");
  std::signal(SIGHUP, previous);
  ASSERT_GT(ignoring, 0);
  ASSERT_TRUE(wait_until([&] { return journal_records(dir / "R32_L64.journal.jsonl") >= 1; })) << slurp(out + ".log");
  ASSERT_EQ(kill(-ignoring, SIGHUP), 0);
  EXPECT_EQ(wait_exit(ignoring), 0) << slurp(out + ".log");
  EXPECT_TRUE(fs::exists(dir / "R32_L64.hpp")) << slurp(out + ".log");
}

// What a run decided, without what differs between runs (wall times, dates, the journal).
std::map<std::string, Json> decisions(const fs::path& file) {
  const Json j = read_json(file);
  std::map<std::string, Json> out{{"(winner)", j.at("summary").value("winner", Json())}};
  for (const auto& v : j.at("variants"))
    out[v.at("name").get<std::string>()] = {v.at("status"), v.contains("timing") ? v.at("timing").at("median_us") : Json()};
  return out;
}

// #7: --resume of a sweep killed after its first shape finished takes that shape's results as they
// are (not measured again), finishes the second from its journal, and ends as the run that was
// never killed; a complete file of another identity (another seed) is tuned again.
TEST(Resume, AResumedSweepSkipsTheShapesItFinishedAndEndsAsAnUnbrokenRun) {
  const std::string out = out_dir("resume_sweep_kill");
  fs::create_directories(out);
  const std::string args = affine_args(out + "/k") + " --R 32,64";
  const fs::path dir = fs::path(out) / "k" / "fake-gpu" / "affine";
  const pid_t pid = start("TUNE_WORKER_FAKE=1 TUNE_WORKER_FAKE_DELAY_MS=150", args, out + ".log");
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(wait_until([&] { return journal_records(dir / "R64_L64.journal.jsonl") >= 1; })) << slurp(out + ".log");
  ASSERT_EQ(kill(-pid, SIGKILL), 0);
  ASSERT_EQ(wait_exit(pid), -SIGKILL);
  const std::string finished = slurp(dir / "R32_L64.json");
  ASSERT_FALSE(finished.empty()) << slurp(out + ".log");

  const Result r = run_with("TUNE_WORKER_FAKE=1", args + " --resume");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("R32_L64: already complete in " + (dir / "R32_L64.json").string() + "; skipped"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("no journal at"), std::string::npos) << r.output;
  EXPECT_EQ(slurp(dir / "R32_L64.json"), finished) << "the finished shape is neither measured nor written again";
  EXPECT_NE(r.output.find("--resume: "), std::string::npos) << r.output;
  EXPECT_GE(read_json(dir / "R64_L64.json").at("context").at("journal").at("resumed_variants").get<int>(), 1);

  const Result unbroken = run_with("TUNE_WORKER_FAKE=1", affine_args(out + "/u") + " --R 32,64");
  ASSERT_EQ(unbroken.code, 0) << unbroken.output;
  for (const char* tag : {"R32_L64.json", "R64_L64.json"})
    EXPECT_EQ(decisions(dir / tag), decisions(fs::path(out) / "u" / "fake-gpu" / "affine" / tag)) << tag;

  const Result other = run_with("TUNE_WORKER_FAKE=1", affine_args(out + "/k", 8) + " --R 32 --resume");
  ASSERT_EQ(other.code, 0) << other.output;
  EXPECT_NE(other.output.find("is complete, but not for this run (its seed differs)"), std::string::npos) << other.output;
  EXPECT_EQ(other.output.find("already complete"), std::string::npos) << other.output;
  EXPECT_EQ(read_json(dir / "R32_L64.json").at("seed"), 8);
}

// A run that its --time-budget stopped left variants unreached: it keeps its journal, and --resume
// (here without the budget) measures the rest instead of skipping the shape as complete
// (adversarial round 3: "already complete; skipped", the rest never measured).
TEST(Resume, ARunStoppedByItsTimeBudgetIsContinuedByResume) {
  const std::string out = out_dir("resume_time_budget");
  const std::string args = affine_args(out + "/t") + " --R 32";
  const fs::path dir = fs::path(out) / "t" / "fake-gpu" / "affine";
  const Result cut = run_with("TUNE_WORKER_FAKE=1 TUNE_WORKER_FAKE_DELAY_MS=100", args + " --time-budget 0.5");
  ASSERT_EQ(cut.code, 0) << cut.output;
  const Json first = read_json(dir / "R32_L64.json");
  ASSERT_TRUE(first.at("context").at("search").at("stopped_by_time_budget").get<bool>());
  const auto skipped = [](const Json& run) {
    const Json& by = run.at("summary").at("by_status");
    return by.contains("skipped") ? by.at("skipped").get<int>() : 0;
  };
  ASSERT_GT(skipped(first), 0) << first.at("summary").dump();
  EXPECT_TRUE(fs::exists(dir / "R32_L64.journal.jsonl"));
  const Result resumed = run_with("TUNE_WORKER_FAKE=1", args + " --resume");
  ASSERT_EQ(resumed.code, 0) << resumed.output;
  EXPECT_EQ(resumed.output.find("already complete"), std::string::npos) << resumed.output;
  const Json after = read_json(dir / "R32_L64.json");
  EXPECT_EQ(skipped(after), 0) << after.at("summary").dump();
  EXPECT_GE(after.at("context").at("journal").at("resumed_variants").get<int>(), 1);
}

// #8: a shape killed on one of two devices and resumed on the other (the first one fails at once)
// continues from the journal in the first device's folder, which keeps nothing of it afterwards.
TEST(Resume, AShapeResumedOnAnotherDeviceTakesItsJournalFromTheFirstDevicesFolder) {
  const std::string out = out_dir("resume_devices");
  fs::create_directories(out);
  const std::string args = affine_args(out + "/d") + " --R 32 --devices all";
  const std::vector<fs::path> dirs = {fs::path(out) / "d" / "fake-gpu-fa4e0000" / "affine",
                                      fs::path(out) / "d" / "fake-gpu-fa4e0001" / "affine"};
  const pid_t pid = start(kSlowFake + " TUNE_WORKER_FAKE_DEVICES=2", args, out + ".log");
  ASSERT_GT(pid, 0);
  int first = -1;  // the device that ran the shape
  ASSERT_TRUE(wait_until([&] {
    for (int k = 0; k < 2; ++k)
      if (journal_records(dirs[k] / "R32_L64.journal.jsonl") >= 2) first = k;
    return first >= 0;
  })) << slurp(out + ".log");
  ASSERT_EQ(kill(-pid, SIGKILL), 0);
  ASSERT_EQ(wait_exit(pid), -SIGKILL);

  // The first device fails whenever it takes the shape: the other one runs it.
  const Result r =
      run_with("TUNE_WORKER_FAKE=1 TUNE_WORKER_FAKE_DEVICES=2 TUNE_WORKER_FAKE_FAIL_DEVICE=" + std::to_string(first),
               args + " --resume");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find(" records of R32_L64 moved from " + (dirs[first] / "R32_L64.journal.jsonl").string()),
            std::string::npos)
      << r.output;
  const fs::path result = dirs[1 - first] / "R32_L64.json";
  const Json j = read_json(result);
  EXPECT_EQ(j.at("complete"), true);
  EXPECT_GE(j.at("context").at("journal").at("resumed_variants").get<int>(), 2) << r.output;
  for (const char* left : {"R32_L64.journal.jsonl", "R32_L64.json.partial", "R32_L64.json", "R32_L64.lock"})
    EXPECT_FALSE(fs::exists(dirs[first] / left)) << left << " left behind\n" << r.output;
  EXPECT_FALSE(fs::exists(dirs[1 - first] / "R32_L64.journal.jsonl")) << "a finished run removes its journal";
}

// A card's folder name depends on the cards beside it (fake-gpu alone, fake-gpu-fa4e0000 beside a
// second of its model): a shape finished by a run on one card is found by a --resume on two, and
// one finished on two by a --resume on one (adversarial round 3: tuned again, and then two files of
// one card and shape made tune report refuse the folder).
TEST(Resume, AFinishedShapeIsFoundUnderEachOfItsCardsFolderNames) {
  const std::string out = out_dir("resume_folder_names");
  const fs::path alone = fs::path(out) / "a" / "fake-gpu" / "affine";
  const Result one = run_with("TUNE_WORKER_FAKE=1", affine_args(out + "/a") + " --R 32");
  ASSERT_EQ(one.code, 0) << one.output;
  const Result two =
      run_with("TUNE_WORKER_FAKE=1 TUNE_WORKER_FAKE_DEVICES=2", affine_args(out + "/a") + " --R 32 --devices all --resume");
  ASSERT_EQ(two.code, 0) << two.output;
  EXPECT_NE(two.output.find("R32_L64: already complete in " + (alone / "R32_L64.json").string()), std::string::npos)
      << two.output;
  for (const char* card : {"fake-gpu-fa4e0000", "fake-gpu-fa4e0001"})
    EXPECT_FALSE(fs::exists(fs::path(out) / "a" / card / "affine" / "R32_L64.json")) << card;

  const fs::path beside = fs::path(out) / "b" / "fake-gpu-fa4e0000" / "affine";
  const Result pair = run_with("TUNE_WORKER_FAKE=1 TUNE_WORKER_FAKE_DEVICES=2",
                               affine_args(out + "/b") + " --R 32 --devices all --replicate");
  ASSERT_EQ(pair.code, 0) << pair.output;
  ASSERT_TRUE(fs::exists(beside / "R32_L64.json")) << pair.output;
  const Result single = run_with("TUNE_WORKER_FAKE=1", affine_args(out + "/b") + " --R 32 --resume");
  ASSERT_EQ(single.code, 0) << single.output;
  EXPECT_NE(single.output.find("already complete in " + (beside / "R32_L64.json").string()), std::string::npos)
      << single.output;
}

// A shape finished by a card the resumed run no longer includes is found in that card's folder
// (adversarial round 3, left open then: tuned again). Here only the second card finished it, the
// first failing; a --resume on the first card alone skips it. A replica takes only its own card's.
TEST(Resume, AShapeFinishedByACardNoLongerInTheRunIsNotTunedAgain) {
  const std::string out = out_dir("resume_other_card");
  const fs::path second = fs::path(out) / "fake-gpu-fa4e0001" / "affine";
  const Result pair = run_with("TUNE_WORKER_FAKE=1 TUNE_WORKER_FAKE_DEVICES=2 TUNE_WORKER_FAKE_FAIL_DEVICE=0",
                               affine_args(out) + " --R 32 --devices all --replicate");
  ASSERT_TRUE(fs::exists(second / "R32_L64.json")) << pair.output;
  ASSERT_FALSE(fs::exists(fs::path(out) / "fake-gpu-fa4e0000" / "affine" / "R32_L64.json")) << pair.output;

  const Result replica = run_with("TUNE_WORKER_FAKE=1 TUNE_WORKER_FAKE_DEVICES=2",
                                  affine_args(out) + " --R 32 --devices all --replicate --resume");
  ASSERT_EQ(replica.code, 0) << replica.output;
  EXPECT_TRUE(fs::exists(fs::path(out) / "fake-gpu-fa4e0000" / "affine" / "R32_L64.json"))
      << "the first card's replica is its own\n"
      << replica.output;
  fs::remove_all(fs::path(out) / "fake-gpu-fa4e0000");

  const Result single = run_with("TUNE_WORKER_FAKE=1", affine_args(out) + " --R 32 --resume");
  ASSERT_EQ(single.code, 0) << single.output;
  EXPECT_NE(single.output.find("R32_L64: already complete in " + (second / "R32_L64.json").string()), std::string::npos)
      << single.output;
  EXPECT_FALSE(fs::exists(fs::path(out) / "fake-gpu" / "affine" / "R32_L64.json")) << single.output;
}

// A --replicate replica runs every shape on its own card: a result of another card, even under this
// card's other folder name, is no result of it (adversarial round 4: both cards skipped the shape
// that one card alone had finished, and the second card measured nothing).
TEST(Resume, AReplicaTakesOnlyItsOwnCardsResults) {
  const std::string out = out_dir("resume_replica");
  const Result one = run_with("TUNE_WORKER_FAKE=1", affine_args(out) + " --R 32");
  ASSERT_EQ(one.code, 0) << one.output;
  const Result pair = run_with("TUNE_WORKER_FAKE=1 TUNE_WORKER_FAKE_DEVICES=2",
                               affine_args(out) + " --R 32 --devices all --replicate --resume");
  ASSERT_EQ(pair.code, 0) << pair.output;
  EXPECT_NE(pair.output.find("[gpu 0] R32_L64: already complete in "), std::string::npos) << pair.output;
  EXPECT_EQ(pair.output.find("[gpu 1] R32_L64: already complete"), std::string::npos) << pair.output;
  EXPECT_TRUE(fs::exists(fs::path(out) / "fake-gpu-fa4e0001" / "affine" / "R32_L64.json")) << pair.output;
}

// A finished result gated otherwise than this run asks (--sanitize, --allow-unchecked) is not this
// run's: --resume tunes the shape again (adversarial round 4: it was taken, and a winner unchecked
// by consent stood in a run that gave none).
TEST(Resume, AResultGatedOtherwiseIsTunedAgain) {
  const std::string out = out_dir("resume_gated_otherwise");
  const Result off = run_with("TUNE_WORKER_FAKE=1", affine_args(out) + " --R 32 --sanitize off");
  ASSERT_EQ(off.code, 0) << off.output;
  const Result again = run_with("TUNE_WORKER_FAKE=1", affine_args(out) + " --R 32 --sanitize finalists --resume");
  ASSERT_EQ(again.code, 0) << again.output;
  EXPECT_NE(again.output.find("is complete, but gated otherwise (--sanitize off, this run's finalists); R32_L64 is "
                              "tuned again"),
            std::string::npos)
      << again.output;
  EXPECT_EQ(read_json(fs::path(out) / "fake-gpu" / "affine" / "R32_L64.json").at("context").at("gate").at("mode"),
            "finalists");
  const Result same = run_with("TUNE_WORKER_FAKE=1", affine_args(out) + " --R 32 --sanitize finalists --resume");
  EXPECT_NE(same.output.find("R32_L64: already complete in "), std::string::npos) << same.output;
}

// A journal cut short as it was created (0 bytes, or its identity line torn: kill -9 or a power cut
// before it reached the disk) holds nothing measured: a sweep resumed with --resume tunes that shape
// afresh and goes on. It was refused (exit 2, "run without --resume", which re-tunes every finished
// shape), so every resubmission of the sweep stopped there (round 6).
TEST(Resume, AJournalCutShortAsItWasCreatedIsAFreshRun) {
  for (const char* torn : {"", R"({"kind":"tune.jou)"}) {
    const std::string out = out_dir("resume_empty_journal");
    const fs::path dir = fs::path(out) / "fake-gpu" / "affine";
    fs::create_directories(dir);
    std::ofstream(dir / "R32_L64.journal.jsonl") << torn;
    const Result r = run_with("TUNE_WORKER_FAKE=1", affine_args(out) + " --R 32,48 --resume");
    ASSERT_EQ(r.code, 0) << r.output;
    EXPECT_NE(r.output.find("R32_L64.journal.jsonl holds no record (cut short as it was created); removed"),
              std::string::npos)
        << r.output;
    EXPECT_TRUE(read_json(dir / "R32_L64.json").at("complete").get<bool>());
    EXPECT_TRUE(fs::exists(dir / "R48_L64.json")) << "the sweep goes on";
    EXPECT_FALSE(fs::exists(dir / "R32_L64.journal.jsonl"));
  }
}

// A sweep that comes to a shape another tune is writing goes on with its other shapes, and its last
// line names the one it skipped (exit 2, as a lone run of that shape is refused): it stopped there
// with exit 2, and the shapes after it were left to --resume (round 8). The other tune's results
// are its own, whole; --resume then finds every shape complete.
TEST(Resume, ASweepSkipsAShapeAnotherTuneIsWritingAndNamesItAtTheEnd) {
  const std::string out = out_dir("resume_sweep_held");
  fs::create_directories(out);
  const fs::path dir = fs::path(out) / "fake-gpu" / "affine";
  const pid_t first = start(kSlowFake, affine_args(out) + " --R 64", out + ".log");
  ASSERT_GT(first, 0);
  ASSERT_TRUE(wait_until([&] { return journal_records(dir / "R64_L64.journal.jsonl") >= 1; })) << slurp(out + ".log");
  const Result sweep = run_with("TUNE_WORKER_FAKE=1", affine_args(out) + " --R 32,64,128");
  EXPECT_EQ(sweep.code, 2) << sweep.output;
  const std::string item = std::string(TUNE_FIXTURES) + "/problems/affine R=64";
  EXPECT_NE(sweep.output.find(item + ": another tune (pid " + std::to_string(first) + ") is writing " +
                              (dir / "R64_L64.json").string() + "; skipped, the sweep goes on"),
            std::string::npos)
      << sweep.output;
  EXPECT_NE(sweep.output.find("tune: 1 shape(s) skipped because another tune was writing them: " + item + " (pid " +
                              std::to_string(first) + "); wait for it to finish, then run the same command with --resume"),
            std::string::npos)
      << sweep.output;
  EXPECT_NE(sweep.output.find("sweep: 2 of 3 items run"), std::string::npos) << sweep.output;
  for (const char* shape : {"R32_L64", "R128_L64"})
    EXPECT_TRUE(read_json(dir / (std::string(shape) + ".json")).at("complete").get<bool>()) << shape;
  ASSERT_EQ(wait_exit(first), 0) << slurp(out + ".log");
  const Json held = read_json(dir / "R64_L64.json");
  EXPECT_TRUE(held.at("complete").get<bool>());
  EXPECT_EQ(held.at("context").at("command_line").get<std::string>().find("R 32,64,128"), std::string::npos)
      << "the shape's results are the other tune's";
  const Result resumed = run_with("TUNE_WORKER_FAKE=1", affine_args(out) + " --R 32,64,128 --resume");
  ASSERT_EQ(resumed.code, 0) << resumed.output;
  for (const char* shape : {"R32_L64", "R64_L64", "R128_L64"})
    EXPECT_NE(resumed.output.find(std::string(shape) + ": already complete in "), std::string::npos) << resumed.output;
}

using tune::test::HeldLock;

// The same on several devices: the held shape is skipped (no other device would fare better), the
// others run, and the last line names it.
TEST(Resume, ASweepOnDevicesSkipsAShapeAnotherTuneIsWriting) {
  const std::string out = out_dir("resume_devices_held");
  const HeldLock held0(fs::path(out) / "fake-gpu-fa4e0000" / "affine" / "R64_L64.json");
  const HeldLock held1(fs::path(out) / "fake-gpu-fa4e0001" / "affine" / "R64_L64.json");
  const Result sweep =
      run_with("TUNE_WORKER_FAKE=1 TUNE_WORKER_FAKE_DEVICES=2", affine_args(out) + " --R 32,64,128 --devices all");
  EXPECT_EQ(sweep.code, 2) << sweep.output;
  EXPECT_NE(sweep.output.find("tune: 1 shape(s) skipped because another tune was writing them: " +
                              std::string(TUNE_FIXTURES) + "/problems/affine R=64 (pid " + std::to_string(getpid()) + ")"),
            std::string::npos)
      << sweep.output;
  std::set<std::string> written;
  for (const char* d : {"fake-gpu-fa4e0000", "fake-gpu-fa4e0001"})
    for (const char* shape : {"R32_L64", "R64_L64", "R128_L64"})
      if (fs::exists(fs::path(out) / d / "affine" / (std::string(shape) + ".json"))) written.insert(shape);
  EXPECT_EQ(written, (std::set<std::string>{"R32_L64", "R128_L64"})) << sweep.output;
}

// A search in passes (--search model) holds its results' lock from its first pass to its last: it
// was released between two passes, and another tune of the shape that came then took the shape,
// removed the journal the next pass resumes, or left the first run refused at its next pass (round 8).
TEST(Resume, ASearchInPassesHoldsItsLockFromTheFirstPassToTheLast) {
  const std::string out = out_dir("resume_model_lock");
  fs::create_directories(out);
  const fs::path result = fs::path(out) / "fake-gpu" / "affine" / "R32_L64.json";
  const fs::path lock = fs::path(result).replace_extension(".lock");
  const pid_t pid = start(kSlowFake, affine_args(out) + " --R 32" + kModel, out + ".log");
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(wait_until([&] { return journal_records(fs::path(result).replace_extension(".journal.jsonl")) >= 1; }))
      << slurp(out + ".log");
  // From the first record until the run ends, one lock file: each taking of the lock makes a new
  // one, and the run removes it as it ends (a lock file seen again after that is a second taking).
  int status = 0, retaken = 0;
  bool gone = false;
  struct stat first {};
  ASSERT_EQ(stat(lock.c_str(), &first), 0);
  while (waitpid(pid, &status, WNOHANG) == 0) {
    struct stat now {};
    const bool there = stat(lock.c_str(), &now) == 0;
    if (there && (gone || now.st_ino != first.st_ino)) ++retaken;
    gone = !there;
    usleep(1000);
  }
  ASSERT_TRUE(WIFEXITED(status)) << slurp(out + ".log");
  EXPECT_EQ(WEXITSTATUS(status), 0) << slurp(out + ".log");
  EXPECT_NE(slurp(out + ".log").find("pass 2:"), std::string::npos) << "a search in passes\n" << slurp(out + ".log");
  EXPECT_EQ(retaken, 0) << "the lock was let go between passes\n" << slurp(out + ".log");
}

// The options that decide a run's variants or its finalists are part of its identity: a complete
// result of --top 1 (one finalist re-measured strictly) is no result of --top 5, nor one of
// --model-rounds 1 a result of --model-rounds 3. --resume took them as complete (round 8).
TEST(Resume, ACompleteResultOfOtherFinalistsOrModelOptionsIsTunedAgain) {
  const std::string out = out_dir("resume_identity_options");
  const std::string args = affine_args(out) + " --R 32";
  ASSERT_EQ(run_with("TUNE_WORKER_FAKE=1", args + " --top 1").code, 0);
  const Result top = run_with("TUNE_WORKER_FAKE=1", args + " --top 5 --resume");
  ASSERT_EQ(top.code, 0) << top.output;
  EXPECT_NE(top.output.find("is complete, but not for this run (its top differs); R32_L64 is tuned again"),
            std::string::npos)
      << top.output;
  EXPECT_NE(top.output.find("re-measuring the top 5 strictly"), std::string::npos) << top.output;
  const Result same = run_with("TUNE_WORKER_FAKE=1", args + " --top 5 --resume");
  EXPECT_NE(same.output.find("R32_L64: already complete in "), std::string::npos) << same.output;

  const std::string model = " --search model --model-init 4 --model-batch 2";
  ASSERT_EQ(run_with("TUNE_WORKER_FAKE=1", args + model + " --model-rounds 1").code, 0);
  const Result rounds = run_with("TUNE_WORKER_FAKE=1", args + model + " --model-rounds 3 --resume");
  ASSERT_EQ(rounds.code, 0) << rounds.output;
  EXPECT_NE(rounds.output.find("(its model_rounds differs); R32_L64 is tuned again"), std::string::npos) << rounds.output;
}

// Round 9: --variant-timeout decides which variants time out, and --torch what the winner is
// compared with, but neither was part of the run's identity: --resume took a complete result of
// another deadline or comparison as complete, and continued a journal of another deadline, its
// `timed_out` verdicts mixed with this run's. A journal still serves another --torch (the comparison
// is redone at the end).
TEST(Resume, AResultOrJournalOfAnotherVariantTimeoutIsNotThisRuns) {
  const std::string out = out_dir("resume_identity_timeout");
  const std::string args = affine_args(out) + " --R 32";
  ASSERT_EQ(run_with("TUNE_WORKER_FAKE=1", args + " --variant-timeout 30").code, 0);
  const Result longer = run_with("TUNE_WORKER_FAKE=1", args + " --variant-timeout 60 --resume");
  ASSERT_EQ(longer.code, 0) << longer.output;
  EXPECT_NE(longer.output.find("is complete, but not for this run (its variant_timeout_s differs); R32_L64 is tuned again"),
            std::string::npos)
      << longer.output;
  const Result torch = run_with("TUNE_WORKER_FAKE=1", args + " --variant-timeout 60 --torch off --resume");
  EXPECT_NE(torch.output.find("(its torch differs); R32_L64 is tuned again"), std::string::npos) << torch.output;

  const Result cut =
      run_with("TUNE_WORKER_FAKE=1 TUNE_WORKER_FAKE_DELAY_MS=100", args + " --variant-timeout 30 --time-budget 0.5");
  ASSERT_EQ(cut.code, 0) << cut.output;
  const Result other = run_with("TUNE_WORKER_FAKE=1", args + " --variant-timeout 60 --resume");
  EXPECT_EQ(other.code, 2) << other.output;
  expect_error_output(other, "its variant_timeout_s is 30.0, this run's is 60.0; run without --resume to start over");
  const Result compared = run_with("TUNE_WORKER_FAKE=1", args + " --variant-timeout 30 --torch off --resume");
  ASSERT_EQ(compared.code, 0) << compared.output;
  EXPECT_NE(compared.output.find("variants taken from"), std::string::npos) << compared.output;
}

// A journal serves any --top: the strict re-measure of the finalists is redone on resume anyway.
TEST(Resume, AJournalIsResumedWithAnotherTop) {
  const std::string out = out_dir("resume_journal_top");
  const std::string args = affine_args(out) + " --R 32";
  const Result cut = run_with("TUNE_WORKER_FAKE=1 TUNE_WORKER_FAKE_DELAY_MS=100", args + " --time-budget 0.5");
  ASSERT_EQ(cut.code, 0) << cut.output;
  const Result resumed = run_with("TUNE_WORKER_FAKE=1", args + " --top 1 --resume");
  ASSERT_EQ(resumed.code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("variants taken from"), std::string::npos) << resumed.output;
  EXPECT_NE(resumed.output.find("re-measuring the top 1"), std::string::npos) << resumed.output;
}

}  // namespace
