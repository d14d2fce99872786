// The worker process and the journal, end to end, without a GPU: TUNE_WORKER_FAKE makes the worker
// return synthetic results (a timing from a hash of the variant's name), TUNE_WORKER_FAULT makes
// chosen variants crash, hang or report a sticky CUDA error.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <unistd.h>

#include <sys/wait.h>
#include <algorithm>
#include <array>
#include <cctype>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/held_lock.hpp"

namespace {

using Json = nlohmann::ordered_json;

struct Result {
  int code = -1;
  std::string output;
};

Result run(const std::string& env, const std::string& args) {
  const std::string cmd = env + " " + std::string(TUNE_EXE) + " " + args + " 2>&1";
  Result r;
  FILE* p = popen(cmd.c_str(), "r");
  std::array<char, 4096> buf{};
  while (p && fgets(buf.data(), buf.size(), p)) r.output += buf.data();
  const int status = p ? pclose(p) : -1;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string fresh_dir(const std::string& name) {
  const auto dir = std::filesystem::path(TUNE_BINARY_DIR) / "isolation_out" / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

// A few variants of the small fixture space; the compile cache is shared by the tests.
// The gate's tests sanitize every finalist (--sanitize finalists; the default is the winner only).
std::string small_run_args(const std::string& out) {
  return "--problem contact --B 2 --N 8 --C 16 --H 8 --config " + std::string(TUNE_FIXTURES) +
         "/contact_small_space.json --sanitize finalists --out " + out + " --cache-dir " + TUNE_BINARY_DIR +
         "/isolation_out/cache";
}

std::filesystem::path result_path(const std::string& out) {
  return std::filesystem::path(out) / "fake-gpu" / "contact" / "B2_N8_C16_H8.json";
}
std::filesystem::path journal_path(const std::string& out) {
  return std::filesystem::path(out) / "fake-gpu" / "contact" / "B2_N8_C16_H8.journal.jsonl";
}

Json read_json(const std::filesystem::path& p) { return Json::parse(std::ifstream(p)); }

std::string read_text(const std::filesystem::path& p) {
  std::ifstream f(p);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// The header without the lines that name the run itself (time, command line, device UUID).
std::string header_body(const std::filesystem::path& p) {
  std::istringstream in(read_text(p));
  std::string line, out;
  while (std::getline(in, line))
    if (line.find("Command:") == std::string::npos && line.find("tuned on") == std::string::npos) out += line + "\n";
  return out;
}

const Json& variant(const Json& result, const std::string& name) {
  for (const auto& v : result.at("variants"))
    if (v.at("name") == name) return v;
  throw std::runtime_error("no variant " + name);
}

// Names by their cold median, fastest first.
std::vector<std::string> by_median(const Json& result) {
  std::vector<std::pair<double, std::string>> v;
  for (const auto& r : result.at("variants"))
    v.emplace_back(r.at("timing").at("median_us").get<double>(), r.at("name").get<std::string>());
  std::sort(v.begin(), v.end());
  std::vector<std::string> out;
  for (auto& [m, n] : v) out.push_back(n);
  return out;
}

std::size_t journal_records(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::string line;
  std::size_t n = 0;
  while (std::getline(in, line)) {
    try {
      if (Json::parse(line).contains("record")) ++n;
    } catch (const Json::parse_error&) {}
  }
  return n;
}

// Starts tune (in its own process group) with TUNE_WORKER_FAKE and a slow fake worker; returns
// once the journal holds `records` records.
pid_t start_slow_run(const std::string& out, const std::vector<std::string>& extra, std::size_t records) {
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    std::freopen((out + ".log").c_str(), "w", stderr);
    setenv("TUNE_WORKER_FAKE", "1", 1);
    setenv("TUNE_WORKER_FAKE_DELAY_MS", "400", 1);
    std::vector<std::string> args = {TUNE_EXE};
    std::istringstream words(small_run_args(out));
    for (std::string w; words >> w;) args.push_back(w);
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(TUNE_EXE, argv.data());
    _exit(127);
  }
  for (int i = 0; pid > 0 && i < 1200 && journal_records(journal_path(out)) < records; ++i) usleep(50 * 1000);
  return pid;
}

// The same, then SIGKILL.
void run_and_kill(const std::string& out, const std::vector<std::string>& extra, std::size_t records) {
  const pid_t pid = start_slow_run(out, extra, records);
  ASSERT_GT(pid, 0);
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << read_text(out + ".log");
  ASSERT_GE(journal_records(journal_path(out)), records) << read_text(out + ".log");
  // Its worker dies with it (PR_SET_PDEATHSIG): no `tune __worker <pid>` is left.
  const std::string needle = std::string("__worker") + '\0' + std::to_string(pid);
  for (int i = 0; i < 100; ++i) {
    bool found = false;
    for (const auto& e : std::filesystem::directory_iterator("/proc")) {
      if (!std::isdigit(static_cast<unsigned char>(e.path().filename().string()[0]))) continue;
      if (read_text(e.path() / "cmdline").find(needle) != std::string::npos) found = true;
    }
    if (!found) return;
    usleep(20 * 1000);
  }
  ADD_FAILURE() << "the worker of the killed tune is still running";
}

constexpr const char* kFake = "TUNE_WORKER_FAKE=1";

TEST(Isolation, CrashedAndHungVariantsAreRecordedAndTheWinnerStands) {
  const std::string clean = fresh_dir("clean");
  const Result a = run(kFake, small_run_args(clean));
  ASSERT_EQ(a.code, 0) << a.output;
  const Json ref = read_json(result_path(clean));
  EXPECT_EQ(ref.at("timed"), true);
  EXPECT_EQ(ref.at("context").at("isolation").at("test_hooks"), Json::array({"TUNE_WORKER_FAKE=1"}));
  EXPECT_FALSE(std::filesystem::exists(journal_path(clean))) << "a finished run removes its journal";
  const std::string winner = ref.at("summary").at("winner").get<std::string>();
  const std::string baseline = ref.at("summary").at("baseline").get<std::string>();
  const auto order = by_median(ref);
  ASSERT_EQ(order.front(), winner);
  ASSERT_GE(order.size(), 6u);
  // The runner-up dies in the strict re-measure; three others crash or hang in the search.
  const std::string runner_up = order[1] == baseline ? order[2] : order[1];
  std::vector<std::string> victims;
  for (const auto& n : order)
    if (n != winner && n != baseline && n != runner_up) victims.push_back(n);
  ASSERT_GE(victims.size(), 3u);
  const std::string faults = "TUNE_WORKER_FAULT='" + victims[0] + "=segv;" + victims[1] + "=hang;" + victims[2] + "=cuda;" +
                             runner_up + "=abort@remeasure'";

  const std::string faulty = fresh_dir("faulty");
  const Result b = run(std::string(kFake) + " " + faults, small_run_args(faulty) + " --variant-timeout 1");
  ASSERT_EQ(b.code, 0) << b.output;
  const Json got = read_json(result_path(faulty));
  const Json& segv = variant(got, victims[0]);
  EXPECT_EQ(segv.at("status"), "crashed") << segv.dump();
  EXPECT_EQ(segv.at("fault").at("kind"), "signal");
  EXPECT_EQ(segv.at("fault").at("signal"), "SIGSEGV");
  EXPECT_EQ(segv.at("fault").at("phase"), "parity");
  EXPECT_NE(segv.at("reason").get<std::string>().find("SIGSEGV during parity"), std::string::npos) << segv.dump();
  const Json& hang = variant(got, victims[1]);
  EXPECT_EQ(hang.at("status"), "timeout") << hang.dump();
  EXPECT_EQ(hang.at("fault").at("kind"), "timeout");
  EXPECT_EQ(hang.at("fault").at("phase"), "parity");
  EXPECT_EQ(hang.at("fault").at("deadline_s"), 1.0);
  const Json& cuda = variant(got, victims[2]);
  EXPECT_EQ(cuda.at("status"), "crashed") << cuda.dump();
  EXPECT_EQ(cuda.at("fault").at("cuda_error"), "CUDA_ERROR_ILLEGAL_ADDRESS");
  const Json& up = variant(got, runner_up);
  EXPECT_EQ(up.at("status"), "crashed") << up.dump();
  EXPECT_EQ(up.at("fault").at("signal"), "SIGABRT");
  EXPECT_NE(up.at("reason").get<std::string>().find("strict re-measure"), std::string::npos) << up.dump();
  // Everything else passed, the winner and the header are those of the run without faults.
  for (const auto& v : got.at("variants")) {
    const bool victim = std::find(victims.begin(), victims.begin() + 3, v.at("name")) != victims.begin() + 3;
    if (!victim && v.at("name") != runner_up) {
      EXPECT_EQ(v.at("status"), "passed") << v.dump();
    }
  }
  EXPECT_EQ(got.at("summary").at("winner"), winner);
  EXPECT_EQ(variant(got, winner).at("timing").at("profile"), "strict-rounds");
  const auto& iso = got.at("context").at("isolation");
  EXPECT_EQ(iso.at("worker_starts"), 5) << "one worker, then a fresh one after each of the four losses";
  EXPECT_EQ(iso.at("variant_timeout_s"), 1.0);
  EXPECT_EQ(iso.at("test_hooks").size(), 2u);
  EXPECT_EQ(got.at("schema_minor_version"), 7);
  EXPECT_EQ(got.at("context").at("reference"), "built-in C++ (contact)");
  EXPECT_EQ(header_body(result_path(faulty).replace_extension(".hpp")),
            header_body(result_path(clean).replace_extension(".hpp")));
}

// Every variant of the small space has "mapping=linear" in its name.
constexpr const char* kEveryVariant = "mapping=linear";

std::size_t count_of(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t pos = 0; (pos = text.find(needle, pos)) != std::string::npos; ++pos) ++n;
  return n;
}

TEST(Isolation, ATimedRunInWhichNothingPassedSaysSoAndExits5) {
  const std::string out = fresh_dir("nothing_passed");
  const std::string faults = std::string("TUNE_WORKER_FAULT='") + kEveryVariant + "=cuda'";
  const Result r = run(std::string(kFake) + " " + faults, small_run_args(out));
  EXPECT_EQ(r.code, 5) << r.output;
  EXPECT_EQ(count_of(r.output, "tune: "), 1u) << r.output;
  EXPECT_NE(r.output.find("tune: no variant of contact B=2 N=8 C=16 H=8 T=float32 passed ("), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(" crashed): no winner, no header; the results are in " + result_path(out).string()),
            std::string::npos)
      << r.output;
  const Json got = read_json(result_path(out));
  EXPECT_EQ(got.at("complete"), true);
  EXPECT_TRUE(got.at("summary").at("winner").is_null());
  for (const auto& v : got.at("variants")) EXPECT_EQ(v.at("status"), "crashed") << v.dump();
  EXPECT_FALSE(std::filesystem::exists(result_path(out).replace_extension(".hpp")));

  // A --shard part leaves the verdict to the merge (a Slurm merge queued afterok still runs): it
  // says so and exits 0; tune merge exits 5.
  std::string shards;
  for (int k = 0; k < 2; ++k) {
    const std::string dir = fresh_dir("nothing_passed_shard" + std::to_string(k));
    const Result s = run(std::string(kFake) + " " + faults, small_run_args(dir) + " --shard " + std::to_string(k) + "/2");
    EXPECT_EQ(s.code, 0) << s.output;
    EXPECT_NE(s.output.find("(a --shard part exits 0: tune merge exits 5 if the merged run has no winner)"),
              std::string::npos)
        << s.output;
    shards += " " + dir;
  }
  const std::string merged = fresh_dir("nothing_passed_merged");
  const Result m = run("", "merge" + shards + " --out " + merged);
  EXPECT_EQ(m.code, 5) << m.output;
  EXPECT_EQ(count_of(m.output, "tune: "), 1u) << m.output;
  EXPECT_NE(m.output.find("tune: no variant of contact B=2 N=8 C=16 H=8 T=float32 passed"), std::string::npos) << m.output;
  EXPECT_TRUE(std::filesystem::exists(result_path(merged)));

  // A run in which something passed still exits 0.
  const Result ok = run(kFake, small_run_args(fresh_dir("something_passed")));
  EXPECT_EQ(ok.code, 0) << ok.output;
  EXPECT_EQ(ok.output.find("no variant of"), std::string::npos) << ok.output;
}

// A deadline shorter than the worker's first answer passes between two of its lines (a phase
// line, then the reply): that is a timeout, never a wait without end.
TEST(Isolation, ADeadlineThatHasPassedIsATimeoutNeverAnEndlessWait) {
  const std::string out = fresh_dir("expired_deadline");
  const std::string faults = std::string("TUNE_WORKER_FAULT='") + kEveryVariant + "=hang'";
  // `timeout` ends a hung run (exit 124) instead of the test's own timeout.
  const Result r =
      run(std::string(kFake) + " " + faults + " timeout -s KILL 60", small_run_args(out) + " --variant-timeout 0.0001");
  ASSERT_EQ(r.code, 5) << "every variant times out, none hangs the run\n" << r.output;
  const Json got = read_json(result_path(out));
  for (const auto& v : got.at("variants")) {
    EXPECT_EQ(v.at("status"), "timeout") << v.dump();
    EXPECT_EQ(v.at("fault").at("kind"), "timeout") << v.dump();
    EXPECT_EQ(v.at("fault").at("deadline_s"), 0.0001) << v.dump();
    // Issue 34 #24: the deadline as given, not rounded to "0.0 s".
    EXPECT_NE(v.value("reason", "").find("no answer within 0.0001 s"), std::string::npos) << v.dump();
  }
  EXPECT_EQ(variant(got, got.at("summary").at("baseline").get<std::string>()).at("status"), "timeout");
}

TEST(Isolation, ResumeAfterKillMeasuresOnlyWhatTheJournalLacks) {
  const std::string clean = fresh_dir("resume_clean");
  ASSERT_EQ(run(kFake, small_run_args(clean)).code, 0);
  const Json ref = read_json(result_path(clean));

  const std::string out = fresh_dir("resume");
  run_and_kill(out, {}, 2);
  std::map<std::string, Json> journaled;
  {
    std::ifstream in(journal_path(out));
    for (std::string line; std::getline(in, line);) {
      try {
        const Json j = Json::parse(line);
        if (j.contains("record")) journaled[j.at("record").at("name").get<std::string>()] = j.at("record");
      } catch (const Json::parse_error&) {}
    }
  }
  const std::size_t n = ref.at("variants").size();
  ASSERT_LT(journaled.size(), n) << "killed mid-run";

  const Result r = run(kFake, small_run_args(out) + " --resume");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("--resume: " + std::to_string(journaled.size()) + " of " + std::to_string(n) +
                          " variants taken from"),
            std::string::npos)
      << r.output;
  // Only the variants the journal lacks went through the worker: one progress line each.
  std::size_t progress = 0;
  std::istringstream lines(r.output);
  const std::regex progress_line(R"(^\[\s*\d+/\d+\] .*)");
  for (std::string line; std::getline(lines, line);) progress += std::regex_match(line, progress_line) ? 1 : 0;
  EXPECT_EQ(progress, n - journaled.size()) << r.output;
  const Json got = read_json(result_path(out));
  EXPECT_EQ(got.at("context").at("journal").at("resumed_variants"), journaled.size());
  EXPECT_FALSE(std::filesystem::exists(journal_path(out)));
  // Journaled records are kept as they were (the strict re-measure alone re-times the top few).
  for (const auto& [name, rec] : journaled) {
    const Json& v = variant(got, name);
    EXPECT_EQ(v.at("status"), rec.at("status"));
    if (v.at("timing").at("profile") == "search") {
      EXPECT_EQ(v.at("timing"), rec.at("timing")) << name;
    } else {
      EXPECT_EQ(v.at("search_timing"), rec.at("timing")) << name;
    }
  }
  // The same set of variants, statuses and winner as the run never interrupted.
  ASSERT_EQ(got.at("variants").size(), n);
  for (const auto& v : ref.at("variants")) EXPECT_EQ(variant(got, v.at("name")).at("status"), v.at("status"));
  EXPECT_EQ(got.at("summary").at("winner"), ref.at("summary").at("winner"));
  EXPECT_EQ(got.at("complete"), true);
}

// Issue 34 #15: the reference is part of the run's identity: a run checked against the built-in
// C++ reference is not resumed against reference.py (TUNE_REFERENCE=python).
TEST(Isolation, ResumeRefusesAJournalCheckedAgainstAnotherReference) {
  const std::string out = fresh_dir("resume_reference");
  run_and_kill(out, {}, 1);
  const Result r = run(std::string(kFake) + " TUNE_REFERENCE=python", small_run_args(out) + " --resume");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("its reference is built-in C++ (contact), this run's is reference.py xxh3:"), std::string::npos)
      << r.output;
  EXPECT_TRUE(std::filesystem::exists(journal_path(out))) << "a refused resume leaves the journal alone";
}

TEST(Isolation, ResumeRefusesAnotherRunsJournalAndNamesTheField) {
  const std::string out = fresh_dir("resume_mismatch");
  run_and_kill(out, {"--seed", "42"}, 1);
  const Result r = run(kFake, small_run_args(out) + " --seed 7 --resume");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("its seed is 42, this run's is 7"), std::string::npos) << r.output;
  std::size_t error_lines = 0;
  for (std::size_t pos = 0; (pos = r.output.find("tune: ", pos)) != std::string::npos; ++pos) ++error_lines;
  EXPECT_EQ(error_lines, 1u) << r.output;
  EXPECT_TRUE(std::filesystem::exists(journal_path(out))) << "a refused resume leaves the journal alone";
}

TEST(Isolation, CtrlCToTheProcessGroupFinishesTheVariantInHandAndTheJournalResumes) {
  const std::string out = fresh_dir("interrupt");
  const pid_t pid = start_slow_run(out, {}, 2);
  ASSERT_GT(pid, 0);
  ASSERT_EQ(kill(-pid, SIGINT), 0);  // as a terminal's Ctrl-C: the whole foreground group
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << read_text(out + ".log");
  EXPECT_EQ(WEXITSTATUS(status), 130) << read_text(out + ".log");
  const Json partial = read_json(result_path(out));
  EXPECT_EQ(partial.at("context").at("search").at("interrupted"), true);
  for (const auto& v : partial.at("variants")) {
    EXPECT_TRUE(v.at("status") == "passed" || v.at("status") == "skipped") << "the worker must not see the Ctrl-C\n"
                                                                           << v.dump();
  }
  ASSERT_TRUE(std::filesystem::exists(journal_path(out))) << "an interrupted run keeps its journal";
  const Result r = run(kFake, small_run_args(out) + " --resume");
  ASSERT_EQ(r.code, 0) << r.output;
  const Json done = read_json(result_path(out));
  EXPECT_EQ(done.at("context").at("search").at("interrupted"), false);
  for (const auto& v : done.at("variants")) EXPECT_EQ(v.at("status"), "passed") << v.dump();
}

// Slurm's scancel (and its time limit) sends SIGTERM to every process of the job: it stops the run
// as the first Ctrl-C does (the variant in hand finishes, the rest is skipped, the results written,
// the journal kept), exit 143; the worker does not die of it.
TEST(Isolation, SigtermToTheProcessGroupStopsTheRunLikeCtrlCAndExits143) {
  const std::string out = fresh_dir("sigterm");
  const pid_t pid = start_slow_run(out, {}, 2);
  ASSERT_GT(pid, 0);
  ASSERT_EQ(kill(-pid, SIGTERM), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "the first SIGTERM must not kill the process\n" << read_text(out + ".log");
  EXPECT_EQ(WEXITSTATUS(status), 143) << read_text(out + ".log");
  const std::string log = read_text(out + ".log");
  EXPECT_NE(log.find("interrupted by SIGTERM: "), std::string::npos) << log;
  const Json partial = read_json(result_path(out));
  EXPECT_EQ(partial.at("complete"), true);
  EXPECT_EQ(partial.at("context").at("search").at("interrupted"), true);
  std::size_t skipped = 0;
  for (const auto& v : partial.at("variants")) {
    EXPECT_TRUE(v.at("status") == "passed" || v.at("status") == "skipped") << "the worker must not die of it\n" << v.dump();
    if (v.at("status") == "skipped") {
      ++skipped;
      EXPECT_EQ(v.at("reason"), "not reached: the run was interrupted (SIGTERM)") << v.dump();
    }
  }
  EXPECT_GE(skipped, 1u);
  EXPECT_EQ(partial.at("context").at("isolation").at("worker_starts"), 1) << "the worker was not lost";
  EXPECT_FALSE(std::filesystem::exists(result_path(out).replace_extension(".hpp"))) << "no header";
  ASSERT_TRUE(std::filesystem::exists(journal_path(out))) << "an interrupted run keeps its journal";
  const Result r = run(kFake, small_run_args(out) + " --resume");
  ASSERT_EQ(r.code, 0) << r.output;
  for (const auto& v : read_json(result_path(out)).at("variants")) EXPECT_EQ(v.at("status"), "passed") << v.dump();
}

TEST(Isolation, ResumeWithoutAJournalStartsAFreshRun) {
  const std::string out = fresh_dir("resume_none");
  const Result r = run(kFake, small_run_args(out) + " --resume");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("no journal at"), std::string::npos) << r.output;
  EXPECT_EQ(read_json(result_path(out)).at("complete"), true);
}

}  // namespace

// ---- One writer per results file (issue 22, item 1) -------------------------------------------

namespace {

std::vector<std::string> read_lines(const std::filesystem::path& path) {
  std::vector<std::string> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

void write_lines(const std::filesystem::path& path, const std::vector<std::string>& lines) {
  std::ofstream f(path, std::ios::trunc);
  for (const auto& l : lines) f << l << "\n";
}

TEST(Isolation, ResumeTakesOnlyFinalRecordsOfThisRunsVariants) {
  const std::string out = fresh_dir("resume_final_only");
  run_and_kill(out, {}, 3);
  // Rewrite the journal: one record left pending, one whose baseline flag disagrees with the run's
  // variant of that name, one of a variant this run does not have. Each must be measured again (the
  // last is ignored). (A record whose params disagree with its name is a hand-edit, refused:
  // ResumeRefusesAHandEditedJournalRecordNamingTheLineAndField.)
  std::vector<std::string> lines = read_lines(journal_path(out));
  std::vector<std::size_t> records;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    try {
      if (Json::parse(lines[i]).contains("record")) records.push_back(i);
    } catch (const Json::parse_error&) {
      lines.resize(i);  // a torn last line
      break;
    }
  }
  ASSERT_GE(records.size(), 3u);
  Json pending = Json::parse(lines[records[0]]);
  pending["record"]["status"] = "pending";
  pending["record"]["timing"] = nullptr;
  lines[records[0]] = pending.dump();
  Json forged = Json::parse(lines[records[1]]);
  forged["record"]["baseline"] = !forged["record"]["baseline"].get<bool>();
  lines[records[1]] = forged.dump();
  Json stranger = Json::parse(lines[records[2]]);
  stranger["record"]["name"] = "strategy=none";
  stranger["record"]["params"] = {{"strategy", "none"}};
  lines.push_back(stranger.dump());
  write_lines(journal_path(out), lines);
  const std::string pending_name = pending.at("record").at("name").get<std::string>();
  const std::string forged_name = forged.at("record").at("name").get<std::string>();
  const Result r = run(kFake, small_run_args(out) + " --resume");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("(3 journal records not taken: not final, or not this run's variants)"), std::string::npos)
      << r.output;
  const Json got = read_json(result_path(out));
  EXPECT_EQ(variant(got, pending_name).at("status"), "passed") << "measured again";
  EXPECT_TRUE(variant(got, pending_name).at("timing").is_object());
  EXPECT_NE(variant(got, forged_name).at("baseline"), forged.at("record").at("baseline"))
      << "the run's own flag, measured again";
  EXPECT_EQ(variant(got, forged_name).at("status"), "passed");
  for (const auto& v : got.at("variants")) EXPECT_NE(v.at("name"), "strategy=none");
}

// A journal record --resume would take is validated as a results file's records are (issue 22,
// item 11): a hand-edited median is refused in one line naming the journal, the line and the field.
TEST(Isolation, ResumeRefusesAHandEditedJournalRecordNamingTheLineAndField) {
  const std::string out = fresh_dir("resume_hand_edited");
  run_and_kill(out, {}, 2);
  std::vector<std::string> lines = read_lines(journal_path(out));
  std::size_t edited = 0;
  for (std::size_t i = 0; i < lines.size() && !edited; ++i) {
    Json j;
    try {
      j = Json::parse(lines[i]);
    } catch (const Json::parse_error&) {
      continue;
    }
    if (!j.contains("record") || j.at("record").at("status") != "passed") continue;
    j["record"]["timing"]["median_us"] = -1.0;
    lines[i] = j.dump();
    edited = i + 1;
  }
  ASSERT_GT(edited, 0u);
  write_lines(journal_path(out), lines);
  const Result r = run(kFake, small_run_args(out) + " --resume");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("tune: " + journal_path(out).string() + ": line " + std::to_string(edited) +
                          ": record.timing.median_us: -1.0 is not a positive number; remove that line (its variant is "
                          "measured again), or run without --resume"),
            std::string::npos)
      << r.output;
  EXPECT_TRUE(std::filesystem::exists(journal_path(out))) << "a refused resume leaves the journal alone";
}

TEST(Isolation, ASecondRunOnTheSameResultsIsRefusedAndTheFirstIsUntouched) {
  const std::string out = fresh_dir("lock");
  const pid_t first = start_slow_run(out, {}, 2);
  ASSERT_GT(first, 0);
  const Result second = run(kFake, small_run_args(out));
  EXPECT_EQ(second.code, 2) << second.output;
  EXPECT_NE(second.output.find("another tune (pid " + std::to_string(first) + ") is writing"), std::string::npos)
      << second.output;
  int status = 0;
  ASSERT_EQ(waitpid(first, &status, 0), first);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << read_text(out + ".log");
  const Json got = read_json(result_path(out));
  EXPECT_EQ(got.at("complete"), true);
  for (const auto& v : got.at("variants")) EXPECT_NE(v.at("status"), "pending") << v.dump();
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::path(result_path(out)).replace_extension(".lock")))
      << "the lock file goes with the run";
  // Once the first is done, the same run goes ahead.
  EXPECT_EQ(run(kFake, small_run_args(out)).code, 0);
}

TEST(Isolation, AFaultInjectedAtTheStrictReMeasureIsRecordedInItsPhase) {
  const std::string clean = fresh_dir("remeasure_phase_clean");
  ASSERT_EQ(run(kFake, small_run_args(clean)).code, 0);
  const std::string winner = read_json(result_path(clean)).at("summary").at("winner").get<std::string>();
  const std::string out = fresh_dir("remeasure_phase");
  const Result r = run(std::string(kFake) + " TUNE_WORKER_FAULT='" + winner + "=cuda@remeasure'", small_run_args(out));
  ASSERT_EQ(r.code, 0) << r.output;
  const Json got = read_json(result_path(out));
  const Json& v = variant(got, winner);
  EXPECT_EQ(v.at("status"), "crashed") << v.dump();
  EXPECT_EQ(v.at("fault").at("phase"), "load") << v.dump();
  EXPECT_NE(v.at("reason").get<std::string>().find("during load"), std::string::npos) << v.dump();
}

}  // namespace

// ---- The correctness gate (issue 20) with the fake worker and a fake compute-sanitizer ----------

namespace {

std::string fake_sanitizer() {
  return std::string("TUNE_SANITIZER=") + TUNE_REPO_DIR + "/tests/support/fake-compute-sanitizer";
}

// A clean gated run: the winner, the order, and the run's JSON.
struct Clean {
  Json json;
  std::string winner, baseline;
  std::vector<std::string> order;
};
const Clean& clean_gated_run() {
  static const Clean c = [] {
    // A folder of this process's: ctest runs the tests that share this run side by side.
    const std::string out = fresh_dir("gate_clean_" + std::to_string(getpid()));
    const Result r = run(std::string(kFake) + " " + fake_sanitizer(), small_run_args(out));
    EXPECT_EQ(r.code, 0) << r.output;
    Clean x;
    x.json = read_json(result_path(out));
    x.winner = x.json.at("summary").at("winner").get<std::string>();
    x.baseline = x.json.at("summary").at("baseline").get<std::string>();
    x.order = by_median(x.json);
    return x;
  }();
  return c;
}

TEST(Gate, TheFinalistsAreGatedAndTheContextSaysHow) {
  const Clean& c = clean_gated_run();
  const Json& g = c.json.at("context").at("gate");
  EXPECT_EQ(g.at("mode"), "finalists");
  EXPECT_EQ(g.at("tools"), Json::array({"memcheck", "racecheck", "synccheck", "initcheck"}));
  EXPECT_NE(g.at("sanitizer_version").get<std::string>().find("2099.1.0"), std::string::npos) << g.dump();
  const std::size_t finalists = std::find(c.order.begin(), c.order.begin() + 3, c.baseline) != c.order.begin() + 3 ? 3 : 4;
  EXPECT_EQ(g.at("gated"), finalists) << "the top 3 and the baseline";
  EXPECT_EQ(g.at("unsafe"), 0);
  EXPECT_EQ(g.at("rounds"), 1);
  EXPECT_GE(g.at("inputs").size(), 2u) << g.dump();
  EXPECT_GT(g.at("wall_s").get<double>(), 0.0);
  EXPECT_EQ(c.json.at("schema_minor_version"), 7);
  const Json& w = variant(c.json, c.winner);
  EXPECT_EQ(w.at("gate").at("verdict"), "safe") << w.dump();
  EXPECT_EQ(w.at("gate").at("tools").size(), 4u);
  EXPECT_TRUE(w.at("gate").at("deterministic").get<bool>());
  EXPECT_TRUE(variant(c.json, c.baseline).at("gate").is_object()) << "the baseline is a finalist";
  // Variants that are not finalists are not gated.
  std::size_t gated = 0;
  for (const auto& v : c.json.at("variants")) gated += v.at("gate").is_object();
  EXPECT_EQ(gated, finalists);
}

TEST(Gate, ARacecheckReportMakesTheWinnerUnsafeAndTheNextFinalistWins) {
  const Clean& c = clean_gated_run();
  const std::string out = fresh_dir("gate_race");
  const Result r = run(std::string(kFake) + " " + fake_sanitizer() + " TUNE_WORKER_FAULT='" + c.winner + "=racecheck'",
                       small_run_args(out));
  ASSERT_EQ(r.code, 0) << r.output;
  const Json got = read_json(result_path(out));
  const Json& w = variant(got, c.winner);
  EXPECT_EQ(w.at("status"), "unsafe") << w.dump();
  EXPECT_EQ(w.at("gate").at("verdict"), "unsafe");
  ASSERT_EQ(w.at("gate").at("findings").size(), 1u) << w.dump();
  const Json& f = w.at("gate").at("findings")[0];
  EXPECT_EQ(f.at("tool"), "racecheck");
  EXPECT_EQ(f.at("kind").get<std::string>().rfind("Error: Race reported between Write access at ", 0), 0u) << f.dump();
  // The report names the kernel demangled, with the line.
  EXPECT_EQ(f.at("kind").get<std::string>().find("_Z"), std::string::npos) << f.dump();
  EXPECT_NE(f.at("kind").get<std::string>().find("contact.cuh:412"), std::string::npos) << f.dump();
  EXPECT_NE(w.at("reason").get<std::string>().find("racecheck"), std::string::npos);
  // The next finalist wins, safe; the timing of the unsafe one is kept but it never ranks.
  const std::string winner = got.at("summary").at("winner").get<std::string>();
  EXPECT_NE(winner, c.winner);
  EXPECT_EQ(variant(got, winner).at("gate").at("verdict"), "safe");
  EXPECT_TRUE(w.at("timing").is_object());
  EXPECT_EQ(got.at("context").at("gate").at("unsafe"), 1);
  EXPECT_NE(r.output.find("gate: unsafe " + c.winner), std::string::npos) << r.output;
  EXPECT_NE(read_text(result_path(out).replace_extension(".hpp")).find(winner), std::string::npos)
      << "the header names the safe winner";
}

TEST(Gate, AnOutputThatChangesIsUnsafeAndAFailedEdgeCaseIsIncorrect) {
  const Clean& c = clean_gated_run();
  std::string second = c.order[1] == c.baseline ? c.order[2] : c.order[1];
  const std::string out = fresh_dir("gate_flaky");
  const Result r =
      run(std::string(kFake) + " " + fake_sanitizer() + " TUNE_WORKER_FAULT='" + c.winner + "=flaky;" + second + "=edge'",
          small_run_args(out));
  ASSERT_EQ(r.code, 0) << r.output;
  const Json got = read_json(result_path(out));
  const Json& w = variant(got, c.winner);
  EXPECT_EQ(w.at("status"), "unsafe") << w.dump();
  EXPECT_FALSE(w.at("gate").at("deterministic").get<bool>());
  EXPECT_NE(w.at("reason").get<std::string>().find("changed between launches"), std::string::npos) << w.dump();
  EXPECT_EQ(w.at("gate").at("tools").size(), 4u) << "sanitized too, so that a report could say why";
  const Json& s = variant(got, second);
  EXPECT_EQ(s.at("status"), "incorrect") << s.dump();
  EXPECT_EQ(s.at("gate").at("verdict"), "incorrect");
  EXPECT_NE(s.at("reason").get<std::string>().find("parity failed on input"), std::string::npos) << s.dump();
  const std::string winner = got.at("summary").at("winner").get<std::string>();
  EXPECT_NE(winner, c.winner);
  EXPECT_NE(winner, second);
}

TEST(Gate, WhenEveryFinalistFailsTheNextAreGatedInTurnAndNothingUnsafeWins) {
  const Clean& c = clean_gated_run();
  // Every variant but the slowest races: round after round, until the slowest wins.
  std::string faults;
  for (std::size_t i = 0; i + 1 < c.order.size(); ++i) faults += c.order[i] + "=memcheck;";
  const std::string out = fresh_dir("gate_rounds");
  const Result r = run(std::string(kFake) + " " + fake_sanitizer() + " TUNE_WORKER_FAULT='" + faults + "'",
                       small_run_args(out) + " --top 2");
  ASSERT_EQ(r.code, 0) << r.output;
  const Json got = read_json(result_path(out));
  EXPECT_EQ(got.at("summary").at("winner"), c.order.back()) << r.output;
  EXPECT_GT(got.at("context").at("gate").at("rounds").get<int>(), 1);
  for (std::size_t i = 0; i + 1 < c.order.size(); ++i) {
    const Json& v = variant(got, c.order[i]);
    if (v.at("gate").is_object()) {
      EXPECT_EQ(v.at("status"), "unsafe") << v.dump();
    }
  }
  EXPECT_NE(r.output.find("no gated finalist may win"), std::string::npos) << r.output;
}

// The baseline is re-measured strictly for its speedup, not to win: when every finalist fails, a
// passed variant faster than the baseline that the search timed takes the next round, not the
// safe baseline (on the H200 a planted race at contact B4 N64 crowned the baseline, 1.8x slower
// than untried variants, and the record failed its own winner rule: exit 2).
TEST(Gate, WhenTheFinalistsFailTheBaselineDoesNotWinOverFasterUngatedVariants) {
  const Clean& c = clean_gated_run();
  const auto at = std::find(c.order.begin(), c.order.end(), c.baseline);
  ASSERT_GE(at - c.order.begin(), 2) << "the fixture has two variants faster than its baseline";
  const std::string out = fresh_dir("gate_baseline_not_winner");
  const Result r = run(std::string(kFake) + " " + fake_sanitizer() + " TUNE_WORKER_FAULT='" + c.order[0] + "=memcheck'",
                       small_run_args(out) + " --top 1");
  ASSERT_EQ(r.code, 0) << r.output;
  const Json got = read_json(result_path(out));
  EXPECT_EQ(got.at("summary").at("winner"), c.order[1]) << r.output;
  EXPECT_EQ(variant(got, c.order[0]).at("status"), "unsafe");
  EXPECT_EQ(got.at("context").at("gate").at("rounds"), 2) << r.output;
}

// A sanitizer that is named but missing runs no tool: the finalists are unchecked, never safe
// (issue 34), no winner is crowned without --allow-unchecked (exit 3, the results written), and
// --sanitize off says that no sanitizer is wanted.
TEST(Gate, AMissingSanitizerLeavesTheFinalistsUncheckedUnlessConsentedTo) {
  const std::string out = fresh_dir("gate_missing");
  const std::string env = std::string(kFake) + " TUNE_SANITIZER=/nonexistent/compute-sanitizer";
  const Result r = run(env, small_run_args(out));
  ASSERT_EQ(r.code, 3) << r.output;
  EXPECT_EQ(count_of(r.output, "gate: no compute-sanitizer"), 1u) << r.output;
  EXPECT_NE(r.output.find("TUNE_SANITIZER=/nonexistent/compute-sanitizer is not an executable file"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("--allow-unchecked"), std::string::npos) << r.output;
  const Json got = read_json(result_path(out));
  const Json& g = got.at("context").at("gate");
  EXPECT_TRUE(g.at("tools").empty());
  EXPECT_EQ(g.at("sanitizer"), "");
  EXPECT_NE(g.at("note").get<std::string>().find("no compute-sanitizer"), std::string::npos);
  EXPECT_NE(g.at("could_not_run").get<std::string>().find("no compute-sanitizer"), std::string::npos);
  EXPECT_GE(g.at("unchecked").get<int>(), 1);
  EXPECT_FALSE(got.at("summary").contains("winner") && got.at("summary").at("winner").is_string())
      << got.at("summary").dump();
  for (const Json& v : got.at("variants")) {
    if (v.contains("gate") && v.at("gate").is_object()) {
      EXPECT_NE(v.at("gate").at("verdict"), "safe") << v.dump();
    }
  }

  const std::string consented = fresh_dir("gate_missing_consent");
  const Result c = run(env, small_run_args(consented) + " --allow-unchecked");
  ASSERT_EQ(c.code, 0) << c.output;
  const Json cj = read_json(result_path(consented));
  EXPECT_EQ(variant(cj, cj.at("summary").at("winner").get<std::string>()).at("gate").at("verdict"), "unchecked");

  const std::string off = fresh_dir("gate_missing_off");
  const Result o = run(env, [&] {
    std::string a = small_run_args(off);
    return a.replace(a.find("--sanitize finalists"), 20, "--sanitize off");
  }());
  ASSERT_EQ(o.code, 0) << o.output;
  const Json oj = read_json(result_path(off));
  EXPECT_EQ(variant(oj, oj.at("summary").at("winner").get<std::string>()).at("gate").at("verdict"), "safe");
}

// The default (issue 37): the sanitizers gate what ships, the would-be winner, then the next when
// it fails; every finalist's outputs are checked either way.
TEST(Gate, SanitizeWinnerRunsTheToolsOnTheWouldBeWinnerOnly) {
  const Clean& c = clean_gated_run();
  const std::string out = fresh_dir("gate_winner");
  std::string args = small_run_args(out);
  args.erase(args.find(" --sanitize finalists"), std::string(" --sanitize finalists").size());  // the default
  const Result r =
      run(std::string(kFake) + " " + fake_sanitizer() + " TUNE_WORKER_FAULT='" + c.winner + "=synccheck'", args);
  ASSERT_EQ(r.code, 0) << r.output;
  const Json got = read_json(result_path(out));
  EXPECT_EQ(got.at("context").at("gate").at("mode"), "winner");
  EXPECT_EQ(variant(got, c.winner).at("status"), "unsafe");
  const std::string winner = got.at("summary").at("winner").get<std::string>();
  std::size_t sanitized = 0;
  for (const auto& v : got.at("variants"))
    if (v.at("gate").is_object() && !v.at("gate").at("tools").empty()) ++sanitized;
  EXPECT_EQ(sanitized, 2u) << "the first would-be winner, then the next";
  EXPECT_EQ(variant(got, winner).at("gate").at("tools").size(), 4u);
}

TEST(Gate, CheckGatesAResultOfRecordAndWritesOnlyWhenAsked) {
  const Clean& c = clean_gated_run();
  const std::string out = fresh_dir("gate_check");
  ASSERT_EQ(run(std::string(kFake) + " " + fake_sanitizer(), small_run_args(out)).code, 0);
  const auto file = result_path(out);
  const std::string before = read_text(file);
  const std::string env = std::string(kFake) + " " + fake_sanitizer() + " TUNE_WORKER_FAULT='" + c.winner + "=racecheck'";
  const Result r = run(env, "check " + file.string());
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("unsafe " + c.winner + ": racecheck"), std::string::npos) << r.output;
  EXPECT_EQ(read_text(file), before) << "tune check writes nothing unless --write";
  const Result all = run(std::string(kFake) + " " + fake_sanitizer(), "check " + file.string() + " --all-finalists");
  EXPECT_EQ(all.code, 0) << all.output;
  const std::size_t finalists = std::find(c.order.begin(), c.order.begin() + 3, c.baseline) != c.order.begin() + 3 ? 3 : 4;
  const std::string n = std::to_string(finalists);
  EXPECT_NE(all.output.find("check: " + n + " of " + n + " safe"), std::string::npos) << all.output;
  const Result w = run(env, "check " + file.string() + " --write");
  EXPECT_EQ(w.code, 1) << w.output;
  const Json got = read_json(file);
  EXPECT_EQ(variant(got, c.winner).at("status"), "unsafe");
  EXPECT_NE(got.at("summary").at("winner"), c.winner);
  EXPECT_TRUE(variant(got, got.at("summary").at("winner").get<std::string>()).at("gate").is_object())
      << "a new winner is gated before it is written";
  // The sanitizers ran beside the output checks (issue 37), and still found the racecheck report.
  EXPECT_TRUE(got.at("context").at("gate").at("parts_s").contains("overlap: outputs and sanitizers"))
      << got.at("context").at("gate").dump();
  EXPECT_NE(read_text(std::filesystem::path(file).replace_extension(".hpp"))
                .find(got.at("summary").at("winner").get<std::string>()),
            std::string::npos);
  const Result unknown = run(std::string(kFake), "check " + file.string() + " --variant no-such-variant");
  EXPECT_EQ(unknown.code, 2) << unknown.output;
  EXPECT_NE(unknown.output.find("no variant named 'no-such-variant'"), std::string::npos) << unknown.output;
}

// ---- Verdicts cached beside the compile cache (issue 37) -----------------------------------------

// The small run with a compile (and verdict) cache of the test's own, so its first run is cold.
std::string cached_run_args(const std::string& out, const std::string& cache, const std::string& shape = "--B 2") {
  return "--problem contact " + shape + " --N 8 --C 16 --H 8 --config " + std::string(TUNE_FIXTURES) +
         "/contact_small_space.json --sanitize finalists --out " + out + " --cache-dir " + cache;
}

struct GateCounts {
  int checks = 0, hits = 0, misses = 0;
};
GateCounts gate_counts(const Json& run) {
  const Json& g = run.at("context").at("gate");
  return {g.at("checks").get<int>(), g.at("cache_hits").get<int>(), g.at("cache_misses").get<int>()};
}

// The gated variants' verdicts, findings and tools, by name: what a cached verdict must restore.
std::map<std::string, std::string> verdicts(const Json& run) {
  std::map<std::string, std::string> out;
  for (const auto& v : run.at("variants"))
    if (v.at("gate").is_object())
      out[v.at("name").get<std::string>()] = v.at("status").get<std::string>() + " " + v.at("gate").at("verdict").dump() +
                                             v.at("gate").at("tools").dump() + v.at("gate").at("findings").dump();
  return out;
}

// A re-tune gates nothing again, with the same verdicts; a changed seed (the inputs), shape,
// reference, sanitizer version or planted defect runs the checks it decides again; --fresh-verdicts
// runs them all; --no-cache reads and writes none.
TEST(VerdictCache, AWarmCacheGatesNothingAgainAndEachPartOfTheKeyRunsTheGateAgain) {
  const std::string cache = fresh_dir("verdicts_cache");
  const std::string env = std::string(kFake) + " " + fake_sanitizer();
  auto tune = [&](const std::string& name, const std::string& extra_env, const std::string& args) {
    const std::string out = fresh_dir(name);
    const Result r = run(env + extra_env, cached_run_args(out, cache) + args);
    EXPECT_EQ(r.code, 0) << r.output;
    return std::make_pair(read_json(result_path(out)), r.output);
  };
  const auto [cold, cold_out] = tune("verdicts_cold", "", "");
  const GateCounts c = gate_counts(cold);
  EXPECT_GT(c.checks, 0);
  EXPECT_EQ(c.hits, 0) << "a cold cache";
  EXPECT_EQ(c.misses, c.checks);
  EXPECT_EQ(cold.at("context").at("gate").at("cache"), (std::filesystem::path(cache) / "verdicts").string());
  EXPECT_NE(cold_out.find("gate "), std::string::npos) << cold_out;
  EXPECT_NE(cold_out.find(" checks (0 cached)"), std::string::npos) << "the run's last lines say the gate's parts\n"
                                                                    << cold_out;
  // Where the seconds went: the output checks' worker start, draws and launches, and each tool's
  // workers' start apart from their runs (each part a number, the tools' parts within their seconds).
  const Json& parts = cold.at("context").at("gate").at("parts_s");
  for (const char* part : {"outputs start", "outputs draw", "outputs launches"})
    EXPECT_TRUE(parts.contains(part) && parts.at(part).is_number()) << part << " " << parts.dump();
  for (const auto& [tool, s] : cold.at("context").at("gate").at("tool_s").items()) {
    ASSERT_TRUE(parts.contains(tool + " start") && parts.contains(tool + " run")) << tool << " " << parts.dump();
    EXPECT_NEAR(parts.at(tool + " start").get<double>() + parts.at(tool + " run").get<double>(), s.get<double>(), 1e-6)
        << tool;
  }
  EXPECT_NE(cold_out.find("s starting workers)"), std::string::npos) << cold_out;

  const auto [warm, warm_out] = tune("verdicts_warm", "", "");
  const GateCounts w = gate_counts(warm);
  EXPECT_EQ(w.checks, c.checks);
  EXPECT_EQ(w.hits, c.checks) << "every check answered by the cache";
  EXPECT_EQ(w.misses, 0);
  EXPECT_EQ(verdicts(warm), verdicts(cold)) << "the same verdicts, tools and findings";
  EXPECT_EQ(warm.at("summary").at("winner"), cold.at("summary").at("winner"));
  EXPECT_EQ(warm.at("context").at("gate").at("tool_s").size(), 0u) << "no sanitizer process ran";
  const Json& winner = variant(warm, warm.at("summary").at("winner").get<std::string>());
  EXPECT_EQ(winner.at("gate").at("cached"), Json::array({"outputs", "memcheck", "racecheck", "synccheck", "initcheck"}));

  // Each part of the key, changed alone: the checks it decides run again.
  EXPECT_EQ(gate_counts(tune("verdicts_seed", "", " --seed 7").first).hits, 0) << "other inputs";
  EXPECT_EQ(gate_counts(tune("verdicts_fresh", "", " --fresh-verdicts").first).hits, 0);
  {
    const std::string out = fresh_dir("verdicts_shape");
    const Result r = run(env, cached_run_args(out, cache, "--B 3"));
    ASSERT_EQ(r.code, 0) << r.output;
    EXPECT_EQ(gate_counts(read_json(std::filesystem::path(out) / "fake-gpu" / "contact" / "B3_N8_C16_H8.json")).hits, 0)
        << "another shape";
  }
  // Another sanitizer version: the tools run again, the output checks (no sanitizer) are reused.
  const std::string other = fresh_dir("verdicts_sanitizer") + "/compute-sanitizer";
  {
    std::string text = read_text(std::string(TUNE_REPO_DIR) + "/tests/support/fake-compute-sanitizer");
    text.replace(text.find("2099.1.0"), 8, "2099.2.0");
    std::ofstream(other) << text;
    std::filesystem::permissions(other, std::filesystem::perms::owner_all);
  }
  const Json newer = tune("verdicts_newer", " TUNE_SANITIZER=" + other, "").first;
  const GateCounts n = gate_counts(newer);
  EXPECT_EQ(n.hits, c.checks / 5) << "only the output checks (one in five) are reused";
  EXPECT_EQ(n.misses, c.checks - c.checks / 5);

  // A planted defect (here injected into the fake worker's racecheck) with a warm cache: caught,
  // and caught again from the cache.
  const std::string w_name = cold.at("summary").at("winner").get<std::string>();
  const std::string plant = " TUNE_WORKER_FAULT='" + w_name + "=racecheck'";
  for (const char* name : {"verdicts_plant", "verdicts_plant_again"}) {
    const Json planted = tune(name, plant, "").first;
    EXPECT_EQ(variant(planted, w_name).at("status"), "unsafe") << name;
    EXPECT_NE(planted.at("summary").at("winner"), w_name) << name;
  }

  // Hand-edited entries (adversarial round 3): an output verdict whose inputs were emptied, and an
  // entry relabelled as another check, are damaged: misses, checked again and stored anew.
  {
    const std::string edited = fresh_dir("verdicts_edited_cache");
    const std::string out0 = fresh_dir("verdicts_edited_0");
    ASSERT_EQ(run(env, cached_run_args(out0, edited)).code, 0);
    int outputs_entries = 0, relabelled = 0;
    for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(edited) / "verdicts")) {
      Json entry = Json::parse(read_text(e.path().string()));
      if (entry.at("check") == "outputs") {
        entry["verdict"]["inputs"] = Json::array();
        ++outputs_entries;
      } else if (relabelled++ == 0) {
        entry["check"] = "outputs";
      }
      std::ofstream(e.path()) << entry.dump();
    }
    ASSERT_GT(outputs_entries, 0);
    const std::string out1 = fresh_dir("verdicts_edited_1");
    const Result r = run(env, cached_run_args(out1, edited));
    ASSERT_EQ(r.code, 0) << r.output;
    const Json again = read_json(result_path(out1));
    EXPECT_EQ(gate_counts(again).misses, outputs_entries + 1) << "each edited entry checked again";
    const Json& win = variant(again, again.at("summary").at("winner").get<std::string>());
    EXPECT_FALSE(win.at("gate").at("inputs").empty()) << win.at("gate").dump();
  }

  // --no-cache: neither read nor written.
  const Json none = tune("verdicts_none", "", " --no-cache").first;
  EXPECT_EQ(gate_counts(none).hits, 0);
  EXPECT_EQ(gate_counts(none).misses, 0);
  EXPECT_TRUE(none.at("context").at("gate").at("cache").get<std::string>().starts_with("off"));
}

// tune check reuses the verdicts a tune stored (the same default cache) and --fresh runs them again.
TEST(VerdictCache, TuneCheckReusesTheTunesVerdictsAndFreshRunsThemAgain) {
  const std::string home = fresh_dir("verdicts_check_home");
  const std::string env = std::string(kFake) + " " + fake_sanitizer() + " XDG_CACHE_HOME=" + home;
  const std::string out = fresh_dir("verdicts_check");
  ASSERT_EQ(run(env, cached_run_args(out, home + "/tune")).code, 0);
  const Result warm = run(env, "check " + result_path(out).string());
  EXPECT_EQ(warm.code, 0) << warm.output;
  // The search's own input is one more output input for tune check: its output key differs, the
  // tools' do not.
  EXPECT_NE(warm.output.find("checks (4 cached)"), std::string::npos) << warm.output;
  const Result fresh = run(env, "check " + result_path(out).string() + " --fresh");
  EXPECT_EQ(fresh.code, 0) << fresh.output;
  EXPECT_NE(fresh.output.find("checks (0 cached)"), std::string::npos) << fresh.output;
}

// The sanitizer checks run as separate processes, TUNE_GATE_JOBS at once; the records are the same
// whatever the number, and a bad number is refused in one line.
TEST(VerdictCache, GateJobsDoNotChangeTheVerdictsAndABadValueIsRefused) {
  const std::string cache = fresh_dir("verdicts_jobs_cache");
  const std::string env = std::string(kFake) + " " + fake_sanitizer();
  std::vector<std::map<std::string, std::string>> got;
  for (const char* jobs : {"1", "16"}) {
    const std::string out = fresh_dir(std::string("verdicts_jobs_") + jobs);
    const Result r = run(env + " TUNE_GATE_JOBS=" + jobs, cached_run_args(out, cache) + " --fresh-verdicts");
    ASSERT_EQ(r.code, 0) << r.output;
    const Json j = read_json(result_path(out));
    EXPECT_EQ(j.at("context").at("gate").at("jobs"), std::atoi(jobs));
    got.push_back(verdicts(j));
  }
  EXPECT_EQ(got[0], got[1]);
  const Result bad = run(env + " TUNE_GATE_JOBS=many", cached_run_args(fresh_dir("verdicts_jobs_bad"), cache));
  EXPECT_EQ(bad.code, 2) << bad.output;
  EXPECT_NE(bad.output.find("TUNE_GATE_JOBS=many: expected a whole number"), std::string::npos) << bad.output;
  EXPECT_EQ(bad.output.find("harness floor"), std::string::npos) << "refused before anything is measured\n" << bad.output;
}

// The baseline rule (context.gate.baseline_rule): a baseline that is a finalist only as the
// baseline (here --top 1: it is not the fastest) gets its output checks, not the sanitizers.
TEST(VerdictCache, TheBaselineIsSanitizedOnlyWhenItCouldWin) {
  const Clean& c = clean_gated_run();
  ASSERT_NE(c.order.front(), c.baseline) << "the fixture's baseline is not its fastest variant";
  const std::string out = fresh_dir("verdicts_baseline");
  const Result r = run(std::string(kFake) + " " + fake_sanitizer(),
                       cached_run_args(out, fresh_dir("verdicts_baseline_cache")) + " --top 1");
  ASSERT_EQ(r.code, 0) << r.output;
  const Json got = read_json(result_path(out));
  const Json& g = got.at("context").at("gate");
  EXPECT_NE(g.at("baseline_rule").get<std::string>().find("only when it could win"), std::string::npos) << g.dump();
  const Json& b = variant(got, c.baseline).at("gate");
  EXPECT_GE(b.at("inputs").size(), 2u) << "its outputs are checked";
  EXPECT_TRUE(b.at("tools").empty()) << b.dump();
  EXPECT_EQ(b.at("verdict"), "safe") << b.dump();
  EXPECT_EQ(variant(got, got.at("summary").at("winner").get<std::string>()).at("gate").at("tools").size(), 4u);
  EXPECT_EQ(g.at("checks"), 2 + 4) << "two output checks, four tools on the winner";
}

// Issue 37: with --sanitize winner the would-be winner's sanitizers run beside the output checks
// (the phase's wall below the two parts' sum); a would-be winner that fails its outputs has its
// sanitizers' results dropped, as the serial order never ran them, and the next one is sanitized.
TEST(VerdictCache, Issue37_TheWinnersSanitizersRunBesideTheOutputChecks) {
  const Clean& c = clean_gated_run();
  auto tune = [&](const std::string& name, const std::string& extra_env) {
    const std::string out = fresh_dir(name);
    std::string args = cached_run_args(out, fresh_dir(name + "_cache"));
    args.replace(args.find("--sanitize finalists"), std::string("--sanitize finalists").size(), "--sanitize winner");
    const Result r = run(std::string(kFake) + " " + fake_sanitizer() + " TUNE_TEST_SANITIZER_SLEEP_S=1" + extra_env, args);
    EXPECT_EQ(r.code, 0) << r.output;
    return read_json(result_path(out));
  };
  const Json got = tune("overlap", "");
  const Json& g = got.at("context").at("gate");
  const Json& parts = g.at("parts_s");
  ASSERT_TRUE(parts.contains("overlap: outputs and sanitizers") && parts.contains("overlap: sanitizers")) << parts.dump();
  const double wall = parts.at("overlap: outputs and sanitizers").get<double>();
  const double sanitizers = parts.at("overlap: sanitizers").get<double>();
  EXPECT_GE(sanitizers, 1.0) << "the fake sanitizer waits 1 s";
  EXPECT_LT(wall, sanitizers + g.at("outputs_s").get<double>()) << "side by side, not one after the other: " << g.dump();
  const Json& w = variant(got, got.at("summary").at("winner").get<std::string>()).at("gate");
  EXPECT_EQ(w.at("tools").size(), 4u) << w.dump();
  EXPECT_EQ(w.at("verdict"), "safe") << w.dump();

  const Json fell = tune("overlap_fallback", " TUNE_WORKER_FAULT=" + c.order.front() + "=edge");
  const Json& first = variant(fell, c.order.front()).at("gate");
  EXPECT_EQ(first.at("verdict"), "incorrect") << first.dump();
  EXPECT_TRUE(first.at("tools").empty()) << "its sanitizers' results are dropped\n" << first.dump();
  const std::string winner = fell.at("summary").at("winner").get<std::string>();
  EXPECT_NE(winner, c.order.front());
  EXPECT_EQ(variant(fell, winner).at("gate").at("tools").size(), 4u) << "the next one is sanitized";
}

// Issue 37: racecheck's run on the would-be winner is the gate's long pole; the three other tools,
// which finish well before it, run at niceness 10 beside it (studies/gate/README.md, round 6) while
// the search's worker, the output checks' and racecheck's keep the tune's own.
TEST(Gate, Issue37_TheShortToolsYieldTheCpusToRacecheck) {
  const int base = getpriority(PRIO_PROCESS, 0);
  if (base >= 10) GTEST_SKIP() << "the tests run at niceness " << base << ": nothing can yield below it";
  const std::string out = fresh_dir("gate_nice");
  const std::string log = out + "/nice.log";
  const Result r = run(std::string(kFake) + " " + fake_sanitizer() + " TUNE_WORKER_FAKE_NICE_LOG=" + log,
                       cached_run_args(out, fresh_dir("gate_nice_cache")));
  ASSERT_EQ(r.code, 0) << r.output;
  std::map<std::string, std::set<int>> seen;  // role -> the niceness of each of its workers
  std::istringstream lines(read_text(log));
  for (std::string role; lines >> role;) {
    int nice = 0;
    lines >> nice;
    seen[role].insert(nice);
  }
  const std::map<std::string, std::set<int>> want = {{"search", {base}}, {"racecheck", {base}}, {"outputs", {base}},
                                                     {"memcheck", {10}}, {"synccheck", {10}},   {"initcheck", {10}}};
  EXPECT_EQ(seen, want) << read_text(log);
}

// ---- The gate never fails open (issue 34) ------------------------------------------------------

// A compute-sanitizer that answers --version and never starts the worker, with a 1 s start limit.
std::string no_start_sanitizer() {
  return std::string("TUNE_SANITIZER=") + TUNE_REPO_DIR +
         "/tests/support/fake-compute-sanitizer-no-start TUNE_SANITIZER_START_S=1";
}

TEST(Gate, ASanitizerThatNeverStartsTheWorkerLeavesTheFinalistsUncheckedAndCrownsNoOne) {
  const std::string out = fresh_dir("gate_no_start");
  const Result r = run(std::string(kFake) + " " + no_start_sanitizer(), small_run_args(out));
  EXPECT_EQ(r.code, 3) << r.output;
  EXPECT_EQ(count_of(r.output, "tune: "), 1u) << r.output;
  EXPECT_NE(r.output.find("tune: the gate of contact"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("waiting for the worker to start"), std::string::npos) << "a progress line\n" << r.output;
  // What was measured is written, valid, with no winner and no header.
  const Json got = read_json(result_path(out));
  EXPECT_TRUE(got.at("summary").at("winner").is_null()) << got.at("summary");
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::path(result_path(out)).replace_extension(".hpp")));
  const Json& g = got.at("context").at("gate");
  EXPECT_NE(g.at("could_not_run").get<std::string>().find("did not start within 1 s"), std::string::npos) << g.dump();
  EXPECT_FALSE(g.at("allow_unchecked").get<bool>());
  EXPECT_GT(g.at("unchecked").get<int>(), 0);
  EXPECT_EQ(g.at("rounds"), 1) << "the gate stops: no round waits again";
  std::size_t gated = 0;
  for (const auto& v : got.at("variants")) {
    if (!v.at("gate").is_object()) continue;
    ++gated;
    EXPECT_EQ(v.at("gate").at("verdict"), "unchecked") << v.dump();
    EXPECT_EQ(v.at("gate").at("not_run").size(), 4u) << v.dump();
    EXPECT_EQ(v.at("status"), "passed") << v.dump();
  }
  EXPECT_GT(gated, 0u);
  // Every reader accepts the file (check reads it and says there is no winner to check).
  const Result c = run(kFake, "check " + result_path(out).string());
  EXPECT_NE(c.output.find("names no winner"), std::string::npos) << c.output;
}

// Adversarial round 5: the gate never fails open. With --sanitize winner (the default), a sanitizer
// that could not run left the would-be winner unchecked, and the runner-up, safe on its outputs
// alone and never sanitized, was crowned (exit 0, a header). A sanitizer run whose log held no
// summary, or that ended by a signal, was read as clean.
namespace {

std::string winner_mode_args(const std::string& out) {
  std::string args = small_run_args(out);
  return args.erase(args.find(" --sanitize finalists"), std::string(" --sanitize finalists").size());
}

// A stand-in compute-sanitizer (in `dir`) that runs the program, then does `after` (shell).
std::string stand_in_sanitizer(const std::string& dir, const std::string& name, const std::string& after) {
  const auto file = std::filesystem::path(dir) / name;
  std::ofstream(file) << "#!/bin/sh\n"
                         "if [ \"$1\" = --version ]; then echo 'Version 2099.5.0 (a stand-in: "
                      << name
                      << ")'; exit 0; fi\n"
                         "log= tool=\n"
                         "while [ $# -gt 0 ]; do case \"$1\" in --log-file) log=$2; shift 2 ;; --tool) tool=$2; shift 2 ;; "
                         "--*) shift 2 ;; *) break ;; esac; done\n"
                         "\"$@\"\ncode=$?\n"
                      << after << "\n";
  std::filesystem::permissions(file, std::filesystem::perms::owner_all);
  return "TUNE_SANITIZER=" + file.string();
}

void expect_no_winner(const Result& r, const std::string& out, const std::string& needle) {
  EXPECT_EQ(r.code, 3) << r.output;
  EXPECT_NE(r.output.find(needle), std::string::npos) << r.output;
  const Json got = read_json(result_path(out));
  EXPECT_TRUE(got.at("summary").at("winner").is_null()) << got.at("summary");
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::path(result_path(out)).replace_extension(".hpp")));
}

}  // namespace

TEST(Gate, WithTheWinnerModeASanitizerThatCannotRunCrownsNoRunnerUp) {
  const std::string out = fresh_dir("gate_winner_missing");
  expect_no_winner(run(std::string(kFake) + " TUNE_SANITIZER=/nonexistent/compute-sanitizer", winner_mode_args(out)), out,
                   "no compute-sanitizer");
  const std::string no_start = fresh_dir("gate_winner_no_start");
  expect_no_winner(run(std::string(kFake) + " " + no_start_sanitizer(), winner_mode_args(no_start)), no_start,
                   "did not start within 1 s");
}

TEST(Gate, ASanitizerRunWithoutItsSummaryOrEndedByASignalIsNeverClean) {
  const std::string dir = fresh_dir("gate_unread");
  const std::vector<std::pair<std::string, std::string>> cases = {{"lost_log", "rm -f \"$log\"; exit $code"},
                                                                  {"garbage_log",
                                                                   "head -c 300 /dev/urandom > \"$log\"; exit $code"},
                                                                  {"signal", "exit 139"},
                                                                  {"other_exit", "exit 1"}};
  for (const auto& [name, after] : cases) {
    SCOPED_TRACE(name);
    const std::string out = fresh_dir("gate_unread_" + name);
    const Result r =
        run(std::string(kFake) + " " + stand_in_sanitizer(dir, name, after), small_run_args(out) + " --fresh-verdicts");
    expect_no_winner(r, out,
                     name == "signal" || name == "other_exit" ? "neither clean nor its error exit 86"
                                                              : "left no summary in its log");
  }
  // racecheck's own summary counts errors: a log with it alone and no report is a finding, not clean
  // (here on every variant: none passes).
  const Clean& c = clean_gated_run();
  const std::string out = fresh_dir("gate_unread_racecheck_summary");
  const std::string summary_only =
      "[ \"$tool\" = racecheck ] && printf '========= RACECHECK SUMMARY: 2 hazards displayed (2 errors, 0 warnings)\\n' "
      "> \"$log\"; exit $code";
  const Result r = run(std::string(kFake) + " " + stand_in_sanitizer(dir, "racecheck_summary", summary_only),
                       small_run_args(out) + " --fresh-verdicts");
  EXPECT_EQ(r.code, 5) << r.output;
  const Json got = read_json(result_path(out));
  EXPECT_EQ(variant(got, c.winner).at("status"), "unsafe") << r.output;
  EXPECT_NE(variant(got, c.winner).at("reason").get<std::string>().find("in a form tune does not read"), std::string::npos);
}

// tune check --write: a new winner gated by the run's --sanitize winner on its outputs alone is
// sanitized in turn before it is written (it was crowned with `tools: []`, a planted race and all).
TEST(Gate, CheckWriteSanitizesARunnerUpTheRunDidNotSanitize) {
  const Clean& c = clean_gated_run();
  const std::string out = fresh_dir("gate_check_write_runner_up");
  ASSERT_EQ(run(std::string(kFake) + " " + fake_sanitizer(), winner_mode_args(out)).code, 0);
  const auto file = result_path(out);
  const Json before = read_json(file);
  ASSERT_EQ(before.at("summary").at("winner"), c.winner);
  const std::string runner_up = c.order.at(1) == c.winner ? c.order.at(0) : c.order.at(1);
  ASSERT_TRUE(variant(before, runner_up).at("gate").at("tools").empty()) << "the run sanitized its winner alone";
  const std::string env = std::string(kFake) + " " + fake_sanitizer() + " TUNE_WORKER_FAULT='" + c.winner + "=racecheck;" +
                          runner_up + "=racecheck'";
  const Result w = run(env, "check " + file.string() + " --write --fresh");
  EXPECT_EQ(w.code, 1) << w.output;
  const Json got = read_json(file);
  const std::string now = got.at("summary").at("winner").get<std::string>();
  EXPECT_NE(now, c.winner);
  EXPECT_NE(now, runner_up) << w.output;
  EXPECT_EQ(variant(got, runner_up).at("status"), "unsafe") << w.output;
  EXPECT_EQ(variant(got, now).at("gate").at("tools").size(), 4u) << variant(got, now).dump();
}

TEST(Gate, AllowUncheckedLetsAnUncheckedFinalistWinAndTheRecordSaysSo) {
  const Clean& c = clean_gated_run();
  const std::string out = fresh_dir("gate_allow_unchecked");
  const Result r = run(std::string(kFake) + " " + no_start_sanitizer(), small_run_args(out) + " --allow-unchecked");
  ASSERT_EQ(r.code, 0) << r.output;
  const Json got = read_json(result_path(out));
  EXPECT_EQ(got.at("summary").at("winner"), c.winner) << r.output;
  const Json& w = variant(got, c.winner);
  EXPECT_EQ(w.at("gate").at("verdict"), "unchecked") << w.dump();
  EXPECT_TRUE(got.at("context").at("gate").at("allow_unchecked").get<bool>());
  EXPECT_EQ(got.at("schema_minor_version"), 7);
  EXPECT_NE(r.output.find("winner " + c.winner + " is unchecked"), std::string::npos) << r.output;
  EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(result_path(out)).replace_extension(".hpp")));
}

// The consent is the tune's, given for its record: tune check --write of a runner-up keeps it. It
// wrote the check's own context (no consent) over it, so the record's unchecked winner made the
// updated record invalid and --write refused (round 7).
TEST(Check, WriteKeepsTheTunesConsentToAnUncheckedWinner) {
  const Clean& c = clean_gated_run();
  const std::string out = fresh_dir("check_write_keeps_consent");
  ASSERT_EQ(run(std::string(kFake) + " " + no_start_sanitizer(), small_run_args(out) + " --allow-unchecked").code, 0);
  const auto file = result_path(out);
  const std::string runner_up = c.order.at(1) == c.winner ? c.order.at(0) : c.order.at(1);
  const Result w = run(kFake, "check " + file.string() + " --variant " + runner_up + " --write --sanitize off");
  ASSERT_EQ(w.code, 0) << w.output;
  const Json got = read_json(file);
  EXPECT_TRUE(got.at("context").at("gate").at("allow_unchecked").get<bool>()) << got.at("context").at("gate").dump();
  EXPECT_EQ(got.at("summary").at("winner"), c.winner);
  EXPECT_EQ(variant(got, c.winner).at("gate").at("verdict"), "unchecked");
  EXPECT_EQ(variant(got, runner_up).at("gate").at("verdict"), "safe");
}

TEST(Gate, OutputChecksThatCannotRunAreARunErrorAndTheMeasuredResultsStayValid) {
  const Clean& c = clean_gated_run();
  const std::string out = fresh_dir("gate_error");
  const Result r = run(std::string(kFake) + " " + fake_sanitizer() + " TUNE_WORKER_FAULT='" + c.winner + "=gate_error'",
                       small_run_args(out));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_EQ(count_of(r.output, "tune: "), 1u) << r.output;
  EXPECT_NE(r.output.find("gate: the output checks could not run"), std::string::npos) << r.output;
  ASSERT_TRUE(std::filesystem::exists(result_path(out))) << "the results, not only a .partial\n" << r.output;
  const Json got = read_json(result_path(out));
  EXPECT_TRUE(got.at("summary").at("winner").is_null());
  const Json& w = variant(got, c.winner);
  EXPECT_EQ(w.at("gate").at("verdict"), "unchecked") << w.dump();
  EXPECT_EQ(w.at("gate").at("not_run"), Json::array({"outputs"})) << w.dump();
  EXPECT_TRUE(w.at("gate").at("tools").empty()) << "no sanitizer wait after the gate stopped";
}

TEST(Check, ACheckThatCannotRunIsAnErrorAndWriteLeavesTheFileAsItWas) {
  const Clean& c = clean_gated_run();
  const std::string out = fresh_dir("check_cannot_run");
  ASSERT_EQ(run(std::string(kFake) + " " + fake_sanitizer(), small_run_args(out)).code, 0);
  const auto file = result_path(out);
  const std::string before = read_text(file);
  const Result w = run(std::string(kFake) + " TUNE_WORKER_FAULT='" + c.winner + "=gate_error'",
                       "check " + file.string() + " --write --sanitize off");
  EXPECT_EQ(w.code, 2) << w.output;
  EXPECT_EQ(count_of(w.output, "tune: "), 1u) << w.output;
  EXPECT_NE(w.output.find("the gate could not run"), std::string::npos) << w.output;
  EXPECT_EQ(read_text(file), before) << "--write writes no verdict the gate did not reach";
  const Result s = run(std::string(kFake) + " " + no_start_sanitizer(), "check " + file.string() + " --write");
  EXPECT_EQ(s.code, 3) << s.output;
  EXPECT_EQ(read_text(file), before);
}

// tune check --write where the gate runs no sanitizer (a fake run without TUNE_SANITIZER): the winner
// it gated (outputs only, no tools) is gated as this check gates. It asked to gate that winner
// again, for ever (round 6).
TEST(Check, WriteWhereNoSanitizerRunsGatesTheWinnerOnceAndWrites) {
  const Clean& c = clean_gated_run();
  const std::string out = fresh_dir("check_write_no_sanitizer");
  ASSERT_EQ(run(kFake, small_run_args(out)).code, 0);
  const auto file = result_path(out);
  const Result w = run(std::string(kFake) + " timeout -s KILL 30", "check " + file.string() + " --write --fresh");
  ASSERT_EQ(w.code, 0) << w.output.substr(0, 2000);
  EXPECT_LE(count_of(w.output, "not gated as this check gates yet"), 1u) << w.output.substr(0, 2000);
  const Json got = read_json(file);
  EXPECT_EQ(got.at("summary").at("winner"), c.winner);
  EXPECT_TRUE(variant(got, c.winner).at("gate").is_object());
}

// A record tuned with a space whose knob has since been renamed (as scene_graph's outmma and outbfly
// became out): tune check says in one line (Space::from_record's, as every reader of records says
// it) which variant of which file no longer fits which space, exit 2, and
// leaves the file as it was (with --write it refuses earlier: the sources' hash changed); tune
// verify, which checks the record's baseline and winner, says so too, naming the file.
TEST(Check, AVariantThatNoLongerFitsTheSpaceIsOneLineAndExit2) {
  const Clean& c = clean_gated_run();
  const std::string out = fresh_dir("check_old_space");
  const std::string space = out + "/space.json";
  std::ofstream(space) << std::regex_replace(read_text(std::string(TUNE_FIXTURES) + "/contact_small_space.json"),
                                             std::regex("\\.\\./\\.\\./kernel_templates"),
                                             std::string(TUNE_REPO_DIR) + "/kernel_templates");
  std::string args = small_run_args(out);
  args.replace(args.find(std::string(TUNE_FIXTURES) + "/contact_small_space.json"),
               std::string(TUNE_FIXTURES).size() + std::string("/contact_small_space.json").size(), space);
  ASSERT_EQ(run(std::string(kFake) + " " + fake_sanitizer(), args).code, 0);
  const std::string renamed = std::regex_replace(read_text(space), std::regex("\\bsym\\b"), "symmetric");
  std::ofstream(space) << renamed;
  const auto file = result_path(out);
  const std::string before = read_text(file);
  const Result r = run(std::string(kFake) + " " + fake_sanitizer(), "check " + file.string());
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_EQ(count_of(r.output, "tune: "), 1u) << r.output;
  EXPECT_NE(r.output.find("tune: " + file.string() + ": variant " + c.winner + " does not fit " + space), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("re-tune the shape"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("'symmetric'"), std::string::npos) << r.output;
  EXPECT_EQ(read_text(file), before);
  const std::string golden = std::string(TUNE_REPO_DIR) + "/configs/contact/golden/contact_B2_N8_C16_H8.json";
  const Result v = run(kFake, "verify " + golden + " --results " + out + " --sanitize off");
  EXPECT_EQ(v.code, 2) << v.output;
  EXPECT_EQ(count_of(v.output, "tune: "), 1u) << v.output;
  EXPECT_NE(v.output.find("tune: " + file.string() + ": variant "), std::string::npos) << v.output;
  EXPECT_NE(v.output.find(" does not fit " + space + ": parameter 'symmetric' is missing"), std::string::npos) << v.output;
}

// tune verify where no variant to check is valid at the golden's shape on this device (a card of
// 1 KB of shared memory): it says so, and its last line counts what the device checked. It said
// "all checks passed" over nothing (round 7).
TEST(Verify, NothingValidOnTheDeviceIsSaidAndTheLastLineCountsWhatWasChecked) {
  const std::string out = fresh_dir("verify_nothing_valid");
  const std::string golden = std::string(TUNE_REPO_DIR) + "/configs/contact/golden/contact_B2_N8_C16_H8.json";
  const Result small =
      run(std::string(kFake) + " TUNE_WORKER_FAKE_SMEM=1024", "verify " + golden + " --results " + out + " --sanitize off");
  ASSERT_EQ(small.code, 0) << small.output;
  EXPECT_NE(small.output.find("contact_B2_N8_C16_H8.json: no variant to check is valid at this shape on"), std::string::npos)
      << small.output;
  EXPECT_NE(small.output.find("verify: all checks passed (1 golden file(s), 0 variant(s) on "), std::string::npos)
      << small.output;
  EXPECT_NE(small.output.find("; none on the device for contact_B2_N8_C16_H8.json)"), std::string::npos) << small.output;
  const Result whole = run(kFake, "verify " + golden + " --results " + out + " --sanitize off");
  ASSERT_EQ(whole.code, 0) << whole.output;
  EXPECT_NE(whole.output.find("verify: all checks passed (1 golden file(s), 1 variant(s) on "), std::string::npos)
      << whole.output;
  EXPECT_EQ(whole.output.find("none on the device"), std::string::npos) << whole.output;
}

TEST(Isolation, AFinishedRunMovesAnUnreadableResultsFileAsideAndWritesItsOwn) {
  const std::string out = fresh_dir("unreadable_earlier");
  const auto file = result_path(out);
  std::filesystem::create_directories(file.parent_path());
  const std::string unreadable = R"({"kind": "tune.result", "schema_version": 1})";
  std::ofstream(file) << unreadable;
  const Result r = run(kFake, small_run_args(out));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(count_of(r.output, "moved the earlier results"), 1u) << r.output;
  EXPECT_FALSE(std::filesystem::exists(file.string() + ".partial")) << r.output;
  EXPECT_TRUE(read_json(file).at("summary").at("winner").is_string()) << "this run's results replace it";
  EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(file).replace_extension(".hpp"))) << r.output;
  std::size_t aside = 0;
  for (const auto& e : std::filesystem::directory_iterator(file.parent_path()))
    if (e.path().filename().string().starts_with(file.filename().string() + ".unreadable-")) {
      ++aside;
      EXPECT_EQ(read_text(e.path()), unreadable) << "moved, not lost";
    }
  EXPECT_EQ(aside, 1u);
}

using tune::test::HeldLock;

TEST(Check, MergeOutAndCheckWriteRefuseWhileATuneHoldsTheResultsLock) {
  const std::string out = fresh_dir("lock_held");
  for (int k = 0; k < 2; ++k)
    ASSERT_EQ(run(kFake, small_run_args(out + "/s" + std::to_string(k)) + " --shard " + std::to_string(k) + "/2").code, 0);
  const std::filesystem::path merged = result_path(out + "/merged");
  {
    const HeldLock held(merged);
    const Result m = run("", "merge " + out + "/s0 " + out + "/s1 --out " + out + "/merged");
    EXPECT_EQ(m.code, 2) << m.output;
    EXPECT_NE(m.output.find("another tune (pid " + std::to_string(getpid()) + ") is writing"), std::string::npos)
        << m.output;
    EXPECT_FALSE(std::filesystem::exists(merged)) << "nothing written under the lock";
  }
  ASSERT_EQ(run("", "merge " + out + "/s0 " + out + "/s1 --out " + out + "/merged").code, 0);
  const std::string before = read_text(merged);
  {
    const HeldLock held(merged);
    const Result w = run(kFake, "check " + merged.string() + " --write --sanitize off");
    EXPECT_EQ(w.code, 2) << w.output;
    EXPECT_NE(w.output.find("is writing"), std::string::npos) << w.output;
    EXPECT_EQ(read_text(merged), before);
  }
}

}  // namespace

// ---- A re-run keeps the earlier results until it has something better (issue 22, item 7) -------

namespace {

std::filesystem::path partial_path(const std::string& out) {
  return std::filesystem::path(result_path(out).string() + ".partial");
}
std::filesystem::path header_path(const std::string& out) {
  return std::filesystem::path(result_path(out)).replace_extension(".hpp");
}

std::string fmt_recorded(std::ptrdiff_t theirs, std::ptrdiff_t mine) {
  return "this run was interrupted, and they record more variants of an interrupted run (" + std::to_string(theirs) +
         ", this run " + std::to_string(mine) + ")";
}

// A finished run's results and header in `out`, and their bytes.
struct Earlier {
  std::string json, header;
};
Earlier finished_run(const std::string& out) {
  const Result r = run(kFake, small_run_args(out));
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_FALSE(std::filesystem::exists(partial_path(out))) << "a finished run leaves no partial file";
  return {read_text(result_path(out)), read_text(header_path(out))};
}

TEST(Isolation, AReRunKilledMidwayLeavesTheEarlierResultsAndHeaderAsTheyWereAndResumes) {
  const std::string out = fresh_dir("rerun_killed");
  const Earlier earlier = finished_run(out);
  run_and_kill(out, {}, 2);
  EXPECT_EQ(read_text(result_path(out)), earlier.json) << "the earlier results, byte for byte";
  EXPECT_EQ(read_text(header_path(out)), earlier.header) << "and their header";
  ASSERT_TRUE(std::filesystem::exists(partial_path(out))) << "the killed run's snapshot is beside them";
  EXPECT_EQ(read_json(partial_path(out)).at("complete"), false);
  // --resume finishes the killed run from its journal; then it replaces the pair.
  const Result r = run(kFake, small_run_args(out) + " --resume");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("--resume: 2 of"), std::string::npos) << r.output;
  const Json got = read_json(result_path(out));
  EXPECT_EQ(got.at("complete"), true);
  EXPECT_GE(got.at("context").at("journal").at("resumed_variants").get<int>(), 2);
  EXPECT_NE(read_text(result_path(out)), earlier.json);
  EXPECT_NE(read_text(header_path(out)).find(got.at("summary").at("winner").get<std::string>()), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(partial_path(out)));
  EXPECT_FALSE(std::filesystem::exists(journal_path(out)));
}

TEST(Isolation, AReRunInterruptedOrInWhichNothingPassedKeepsTheEarlierResults) {
  const std::string out = fresh_dir("rerun_worse");
  const Earlier earlier = finished_run(out);
  // Every variant faults its worker: a finished run, but no winner.
  const Result crashed = run(std::string(kFake) + " TUNE_WORKER_FAULT='" + kEveryVariant + "=cuda'", small_run_args(out));
  EXPECT_EQ(crashed.code, 5) << crashed.output;
  EXPECT_NE(crashed.output.find("kept the earlier results " + result_path(out).string() +
                                " and its header: no variant of this run passed, and they name a winner ("),
            std::string::npos)
      << crashed.output;
  EXPECT_NE(crashed.output.find("the results are in " + partial_path(out).string()), std::string::npos) << crashed.output;
  EXPECT_EQ(read_text(result_path(out)), earlier.json);
  EXPECT_EQ(read_text(header_path(out)), earlier.header);
  for (const auto& v : read_json(partial_path(out)).at("variants")) EXPECT_EQ(v.at("status"), "crashed") << v.dump();
  // Ctrl-C: the variant in hand finishes, the run is recorded beside the earlier results.
  const pid_t pid = start_slow_run(out, {}, 2);
  ASSERT_GT(pid, 0);
  ASSERT_EQ(kill(-pid, SIGINT), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << read_text(out + ".log");
  EXPECT_EQ(WEXITSTATUS(status), 130) << read_text(out + ".log");
  EXPECT_NE(read_text(out + ".log").find("and its header: this run was interrupted, and they name a winner"),
            std::string::npos)
      << read_text(out + ".log");
  EXPECT_EQ(read_text(result_path(out)), earlier.json);
  EXPECT_EQ(read_text(header_path(out)), earlier.header);
  EXPECT_EQ(read_json(partial_path(out)).at("context").at("search").at("interrupted"), true);
  // A run that finishes with a winner replaces them, and its partial file goes.
  const Result again = run(kFake, small_run_args(out));
  ASSERT_EQ(again.code, 0) << again.output;
  EXPECT_EQ(read_json(result_path(out)).at("context").at("search").at("interrupted"), false);
  EXPECT_FALSE(std::filesystem::exists(partial_path(out)));
}

// A results file of record kept as <shape>.json.gz (issue 23) is the earlier result of a re-run: one
// no better keeps it (and says so by its name); one that replaces it writes <shape>.json and only
// then removes the .json.gz, so readers never see two files of one shape (they refuse a pair).
TEST(Isolation, AReRunReadsAResultKeptAsJsonGzAndReplacesItWithJson) {
  const std::string out = fresh_dir("rerun_json_gz");
  const Earlier earlier = finished_run(out);
  ASSERT_EQ(std::system(("gzip -9 " + result_path(out).string()).c_str()), 0);
  const auto gz = std::filesystem::path(result_path(out).string() + ".gz");
  ASSERT_TRUE(std::filesystem::exists(gz));
  const std::string gz_bytes = read_text(gz);
  const Result crashed = run(std::string(kFake) + " TUNE_WORKER_FAULT='" + kEveryVariant + "=cuda'", small_run_args(out));
  EXPECT_EQ(crashed.code, 5) << crashed.output;
  EXPECT_NE(crashed.output.find("kept the earlier results " + gz.string() +
                                " and its header: no variant of this run passed, and they name a winner ("),
            std::string::npos)
      << crashed.output;
  EXPECT_EQ(read_text(gz), gz_bytes) << "the .json.gz, byte for byte";
  EXPECT_FALSE(std::filesystem::exists(result_path(out))) << "no second file of the shape";
  EXPECT_EQ(read_text(header_path(out)), earlier.header);
  // tune report and tune verify refuse <shape>.json beside <shape>.json.gz, in one line.
  std::filesystem::copy_file(partial_path(out), result_path(out));
  const Result both = run("", "report " + out + " -o " + out + "/report");
  EXPECT_EQ(both.code, 2) << both.output;
  EXPECT_NE(both.output.find(result_path(out).string() + " and B2_N8_C16_H8.json.gz: two results files of one shape"),
            std::string::npos)
      << both.output;
  std::filesystem::remove(result_path(out));
  // A run that finishes with a winner writes <shape>.json and removes the .json.gz it replaces.
  const Result again = run(kFake, small_run_args(out));
  ASSERT_EQ(again.code, 0) << again.output;
  EXPECT_NE(again.output.find(result_path(out).string() + " replaces B2_N8_C16_H8.json.gz (removed)"), std::string::npos)
      << again.output;
  EXPECT_EQ(read_json(result_path(out)).at("complete"), true);
  EXPECT_FALSE(std::filesystem::exists(gz));
  EXPECT_FALSE(std::filesystem::exists(partial_path(out)));
}

// Between two interrupted runs, the one that recorded more variants stays.
TEST(Isolation, AnInterruptedReRunReplacesAnInterruptedRunOnlyWhenItRecordedMore) {
  const std::string out = fresh_dir("rerun_interrupted_twice");
  auto interrupt_after = [&](std::size_t records) {
    const pid_t pid = start_slow_run(out, {}, records);
    ASSERT_GT(pid, 0);
    ASSERT_EQ(kill(-pid, SIGINT), 0);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 130) << read_text(out + ".log");
  };
  auto recorded = [](const Json& result) {
    return std::count_if(result.at("variants").begin(), result.at("variants").end(),
                         [](const Json& v) { return v.at("status") != "skipped" && v.at("status") != "pending"; });
  };
  interrupt_after(3);
  const std::string first = read_text(result_path(out));
  const auto first_recorded = recorded(Json::parse(first));
  ASSERT_GE(first_recorded, 3) << first;
  // The second run replaces the first's journal; gone now, the wait below counts the second's records.
  std::filesystem::remove(journal_path(out));
  interrupt_after(1);
  const auto second_recorded = recorded(read_json(partial_path(out)));
  ASSERT_LT(second_recorded, first_recorded);
  EXPECT_EQ(read_text(result_path(out)), first) << "the run that recorded more stays";
  EXPECT_NE(read_text(out + ".log").find(fmt_recorded(first_recorded, second_recorded)), std::string::npos)
      << read_text(out + ".log");
}

}  // namespace

// ---- tune verify compiles on the pool, through the compile cache (issue 22) -------------------

namespace {

// The number in "compiled N variant(s) in ... , K from the compile cache" of each golden file.
std::vector<std::pair<int, int>> verify_compiles(const std::string& output) {
  std::vector<std::pair<int, int>> out;
  const std::regex line(R"(: compiled (\d+) variant\(s\) in [0-9.]+ s on \d+ thread\(s\), (\d+) from the compile cache)");
  for (std::sregex_iterator it(output.begin(), output.end(), line), end; it != end; ++it)
    out.emplace_back(std::stoi((*it)[1]), std::stoi((*it)[2]));
  return out;
}

TEST(Verify, ASecondVerifyAllTakesEveryVariantFromTheCompileCache) {
  const std::string out = fresh_dir("verify_cache");
  ASSERT_EQ(run(kFake, small_run_args(out)).code, 0);
  const std::size_t variants = read_json(result_path(out)).at("variants").size();
  const std::string golden = std::string(TUNE_REPO_DIR) + "/configs/contact/golden/contact_B2_N8_C16_H8.json";
  const std::string args =
      "verify " + golden + " --results " + out + " --all --sanitize off --jobs 2 --cache-dir " + out + "/verify_cache";
  const Result first = run(kFake, args);
  ASSERT_EQ(first.code, 0) << first.output;
  ASSERT_EQ(verify_compiles(first.output), (std::vector<std::pair<int, int>>{{static_cast<int>(variants), 0}}))
      << first.output;
  EXPECT_NE(first.output.find("on 2 thread(s)"), std::string::npos) << first.output;
  std::size_t entries = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(out + "/verify_cache"))
    entries += e.path().extension() == ".cubin";
  EXPECT_EQ(entries, variants) << "one cache entry per variant";
  const Result second = run(kFake, args);
  ASSERT_EQ(second.code, 0) << second.output;
  EXPECT_EQ(verify_compiles(second.output),
            (std::vector<std::pair<int, int>>{{static_cast<int>(variants), static_cast<int>(variants)}}))
      << second.output;
  EXPECT_NE(second.output.find("verify: all checks passed"), std::string::npos) << second.output;
}

// The names in verify's "  gate <verdict> <name>: ..." lines, and whether each ran the sanitizers.
std::vector<std::string> verify_gated(const std::string& output, bool* sanitized) {
  std::vector<std::string> names;
  const std::regex line(R"(\n  gate \w+ (\S+): [^\n]*)");
  *sanitized = true;
  for (std::sregex_iterator it(output.begin(), output.end(), line), end; it != end; ++it) {
    names.push_back((*it)[1]);
    *sanitized = *sanitized && it->str().find("sanitizers: memcheck") != std::string::npos;
  }
  return names;
}

// verify --all: golden parity on every variant (seconds), the gate on the baseline and the winner
// only (minutes each on a GPU); --gate-all gates every one.
TEST(Verify, AllGatesOnlyTheBaselineAndTheWinnerUnlessGateAll) {
  const std::string out = fresh_dir("verify_gate_all");
  ASSERT_EQ(run(kFake, small_run_args(out)).code, 0);
  const Json result = read_json(result_path(out));
  const std::size_t variants = result.at("variants").size();
  const std::string winner = result.at("summary").at("winner"), baseline = result.at("summary").at("baseline");
  const std::string golden = std::string(TUNE_REPO_DIR) + "/configs/contact/golden/contact_B2_N8_C16_H8.json";
  const std::string args =
      "verify " + golden + " --results " + out + " --all --cache-dir " + TUNE_BINARY_DIR + "/isolation_out/cache";
  const std::string env = std::string(kFake) + " " + fake_sanitizer();
  const Result two = run(env, args);
  ASSERT_EQ(two.code, 0) << two.output;
  bool sanitized = false;
  std::vector<std::string> gated = verify_gated(two.output, &sanitized);
  std::sort(gated.begin(), gated.end());
  std::vector<std::string> want{baseline, winner};
  std::sort(want.begin(), want.end());
  want.erase(std::unique(want.begin(), want.end()), want.end());
  EXPECT_EQ(gated, want) << two.output;
  EXPECT_TRUE(sanitized) << two.output;
  EXPECT_NE(two.output.find("the gate runs on the baseline and the winner (" + std::to_string(want.size()) + " of " +
                            std::to_string(variants) + " variants whose parity passed); --gate-all gates every one"),
            std::string::npos)
      << two.output;
  const Result every = run(env, args + " --gate-all");
  ASSERT_EQ(every.code, 0) << every.output;
  EXPECT_EQ(verify_gated(every.output, &sanitized).size(), variants) << every.output;
  EXPECT_TRUE(sanitized) << every.output;
}

}  // namespace

// ---- The progress line: elapsed time, an ETA, names cut to a terminal's width (issue 22) -------

namespace {

// The progress lines of a run's output (after `prefix`, a regex: a device's "[gpu K] ").
std::vector<std::string> progress_lines(const std::string& output, const std::string& prefix = "") {
  std::vector<std::string> out;
  std::istringstream lines(output);
  const std::regex progress_line("^" + prefix + R"(\[\s*\d+/\d+\] .*)");
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (std::regex_match(line, progress_line)) out.push_back(line);
  }
  return out;
}

TEST(Progress, EachLineSaysTheElapsedTimeAndAnEtaAndAPipeGetsWholeNames) {
  const std::string out = fresh_dir("progress_pipe");
  const Result r = run(kFake, small_run_args(out));
  ASSERT_EQ(r.code, 0) << r.output;
  const auto lines = progress_lines(r.output);
  const Json got = read_json(result_path(out));
  ASSERT_EQ(lines.size(), got.at("variants").size()) << r.output;
  const std::regex tail(R"(.*\(checked \d+, passed \d+, best [0-9.]+ us\)  \d+s elapsed, eta \d+s$)");
  for (const auto& l : lines) EXPECT_TRUE(std::regex_match(l, tail)) << l;
  EXPECT_TRUE(std::regex_match(lines.back(), std::regex(R"(.* elapsed, eta 0s$)"))) << lines.back();
  for (const auto& v : got.at("variants")) {
    const std::string name = "  " + v.at("name").get<std::string>() + "   (checked";
    EXPECT_EQ(std::count_if(lines.begin(), lines.end(), [&](const auto& l) { return l.find(name) != std::string::npos; }), 1)
        << name << "\n"
        << r.output;
  }
}

// Runs tune on a pseudo-terminal of that many columns (script(1)), stdout and stderr together.
Result run_on_terminal(std::size_t columns, const std::string& env, const std::string& args) {
  return run("script -qec 'stty cols " + std::to_string(columns) + "; " + env, args + "' /dev/null");
}

TEST(Progress, OnATerminalTheNameIsCutToItsWidth) {
  if (std::system("command -v script >/dev/null 2>&1") != 0) GTEST_SKIP() << "no script(1) to give tune a terminal";
  for (const std::size_t columns : {200u, 100u}) {
    const std::string out = fresh_dir("progress_tty_" + std::to_string(columns));
    const Result r = run_on_terminal(columns, kFake, small_run_args(out));
    ASSERT_EQ(r.code, 0) << r.output;
    const auto lines = progress_lines(r.output);
    ASSERT_EQ(lines.size(), read_json(result_path(out)).at("variants").size()) << r.output;
    for (const auto& l : lines) {
      SCOPED_TRACE(l);
      EXPECT_LE(l.size(), columns);
      // Wide enough: the name is cut and the counts kept; narrower: the counts go too; the time stays.
      EXPECT_NE(l.find(columns == 200 ? "...   (checked " : "...  "), std::string::npos);
      EXPECT_EQ(l.find("(checked ") == std::string::npos, columns == 100);
      EXPECT_TRUE(std::regex_match(l, std::regex(R"(.*  \d+s elapsed, eta \d+s$)")));
    }
  }
  // On several devices each line has its device's prefix, and still fits.
  const std::string out = fresh_dir("progress_tty_devices");
  std::string args = small_run_args(out);
  args.replace(args.find("--B 2 "), 6, "--B 2,3 ");  // two shapes, one per device
  const Result r = run_on_terminal(100, std::string(kFake) + " TUNE_WORKER_FAKE_DEVICES=2", args + " --devices all");
  ASSERT_EQ(r.code, 0) << r.output;
  const auto lines = progress_lines(r.output, R"(\[gpu \d\] )");
  EXPECT_GE(lines.size(), 12u) << r.output;
  for (const auto& l : lines) {
    EXPECT_LE(l.size(), 100u) << l;
    EXPECT_TRUE(std::regex_match(l, std::regex(R"(.*\.\.\.  \d+s elapsed, eta \d+s$)"))) << l;
  }
}

}  // namespace
