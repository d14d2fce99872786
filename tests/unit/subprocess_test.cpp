// The child processes tune starts (core/subprocess.hpp): no shell, default signals, a deadline that
// ends the child and everything it started (also what ignores SIGTERM or left its session), the
// group killed when it returns, and only the end of its output kept.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/subprocess.hpp"
#include "tune/gate.hpp"

namespace tune {
namespace {

namespace fs = std::filesystem;

// A fresh folder of the test's own under $TMPDIR.
fs::path test_dir() {
  const fs::path dir = fs::temp_directory_path() / ("tune_subprocess_" + std::to_string(getpid())) /
                       ::testing::UnitTest::GetInstance()->current_test_info()->name();
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

ChildResult sh(const std::string& script, double deadline_s = 0) {
  ChildOptions o;
  o.argv = {"/bin/sh", "-c", script};
  o.deadline_s = deadline_s;
  return run_child(o);
}

// Whether a process is gone (a zombie waiting for init counts as gone).
bool gone(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  if (!f) return true;
  const std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const auto close = stat.rfind(')');
  return close != std::string::npos && stat.size() > close + 2 && stat[close + 2] == 'Z';
}

// Every pid in the text is gone within a few seconds (SIGKILL is asynchronous).
void expect_all_gone(const std::string& pids) {
  std::istringstream in(pids);
  int n = 0;
  for (pid_t pid = 0; in >> pid; ++n) {
    for (int i = 0; i < 300 && !gone(pid); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_TRUE(gone(pid)) << "process " << pid << " outlived its parent's run";
  }
  EXPECT_GT(n, 0) << "no pids in '" << pids << "'";
}

TEST(Subprocess, ArgvIsPassedAsIsWithNoShell) {
  const fs::path dir = test_dir();
  // A program whose path holds an apostrophe and a shell command runs as itself.
  const fs::path odd = dir / ("x';touch " + (dir / "PWNED").string() + ";'") / "prog";
  fs::create_directories(odd.parent_path());
  std::ofstream(odd) << "#!/bin/sh\necho \"ran with $1\"\n";
  fs::permissions(odd, fs::perms::owner_all);
  ChildOptions o;
  o.argv = {odd.string(), "a;touch " + (dir / "PWNED2").string() + "; $(id)"};
  const ChildResult r = run_child(o);
  EXPECT_EQ(r.end, ChildEnd::kExited);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "ran with a;touch " + (dir / "PWNED2").string() + "; $(id)\n");
  EXPECT_FALSE(fs::exists(dir / "PWNED"));
  EXPECT_FALSE(fs::exists(dir / "PWNED2"));
}

TEST(Subprocess, ExitCodesSignalsAndAMissingProgramAreTold) {
  const ChildResult e = sh("echo out; echo err >&2; exit 3");
  EXPECT_EQ(e.end, ChildEnd::kExited);
  EXPECT_EQ(e.exit_code, 3);
  EXPECT_EQ(e.out, "out\n");
  EXPECT_EQ(e.err, "err\n");
  const ChildResult s = sh("kill -SEGV $$");
  EXPECT_EQ(s.end, ChildEnd::kSignaled);
  EXPECT_EQ(s.signal, SIGSEGV);
  ChildOptions o;
  o.argv = {"/nonexistent/program"};
  const ChildResult n = run_child(o);
  EXPECT_EQ(n.end, ChildEnd::kNotStarted);
  EXPECT_EQ(n.error, ENOENT);
  o.argv = {"no-such-program-on-path-tune"};
  EXPECT_EQ(run_child(o).end, ChildEnd::kNotStarted);
}

// The worker ignores SIGINT and SIGTERM and may block signals; its children must not inherit that.
TEST(Subprocess, TheChildHasDefaultSignalsAndNoInheritedDescriptors) {
  auto* old_term = std::signal(SIGTERM, SIG_IGN);
  auto* old_int = std::signal(SIGINT, SIG_IGN);
  sigset_t block, old_mask;
  sigemptyset(&block);
  sigaddset(&block, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &block, &old_mask);
  const int leaked = dup2(STDERR_FILENO, 100);  // not close-on-exec
  const ChildResult r = sh("grep -E '^Sig(Ign|Blk)' /proc/self/status; ls /proc/self/fd; cut -d' ' -f1,5,6 /proc/$$/stat");
  close(leaked);
  pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  std::signal(SIGTERM, old_term);
  std::signal(SIGINT, old_int);
  EXPECT_NE(r.out.find("SigIgn:\t0000000000000000"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("SigBlk:\t0000000000000000"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(fmt::format("\n{}\n", leaked)), std::string::npos) << "descriptor leaked:\n" << r.out;
  // Its own session and process group: the last line is "pid pgid sid", all one number.
  std::istringstream last(r.out.substr(r.out.rfind('\n', r.out.size() - 2) + 1));
  long pid = 0, pgid = 0, sid = 0;
  ASSERT_TRUE(last >> pid >> pgid >> sid) << r.out;
  EXPECT_EQ(pgid, pid);
  EXPECT_EQ(sid, pid);
}

TEST(Subprocess, TheDeadlineKillsTheChildAndEverythingItStarted) {
  const fs::path dir = test_dir();
  const std::string pids = (dir / "pids").string();
  // Ignores SIGTERM and SIGINT; one child in its group, one in a session of its own, one orphaned
  // (its parent exits); then waits.
  const std::string script =
      "trap '' TERM INT; sleep 300 & a=$!; setsid sleep 300 & b=$!; "
      "sh -c 'setsid sleep 300 & echo $! > " +
      pids +
      ".orphan' & wait $!; "
      "echo $$ $a $b $(cat " +
      pids + ".orphan) > " + pids + "; sleep 300";
  const auto t0 = std::chrono::steady_clock::now();
  const ChildResult r = sh(script, 1.5);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.end, ChildEnd::kTimedOut);
  EXPECT_LT(took, 5.0);
  std::ifstream f(pids);
  expect_all_gone(std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>()));
}

TEST(Subprocess, WhatIsLeftOfItsGroupIsKilledWhenItReturns) {
  const ChildResult r = sh("trap '' TERM; sleep 300 & echo $!");
  EXPECT_EQ(r.end, ChildEnd::kExited);
  EXPECT_LT(r.seconds, 5.0) << "waited for the pipe a child holds";
  expect_all_gone(r.out);
}

TEST(Subprocess, OnlyTheEndOfTheOutputIsKept) {
  ChildOptions o;
  o.argv = {"/bin/sh", "-c", "head -c 3000000 /dev/zero | tr '\\0' x; echo; echo the last line >&2"};
  o.keep_bytes = 4096;
  const ChildResult r = run_child(o);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out_bytes, 3000001u);
  EXPECT_EQ(r.out.size(), 4096u);
  EXPECT_EQ(r.err, "the last line\n");
  const std::string line = last_line(r.out);
  EXPECT_EQ(line.size(), 303u);
  EXPECT_EQ(line.rfind("...x", 0), 0u);
  EXPECT_EQ(last_line("first\nsecond\x1b[1m\n\n"), "second?[1m");
  EXPECT_EQ(last_line(" \n"), "");
}

TEST(Subprocess, ProgressIsReportedWhileItRuns) {
  ChildOptions o;
  o.argv = {"/bin/sh", "-c", "sleep 1"};
  o.progress_every_s = 0.2;
  int calls = 0;
  o.on_progress = [&](double s) {
    ++calls;
    EXPECT_GT(s, 0.1);
  };
  EXPECT_EQ(run_child(o).exit_code, 0);
  EXPECT_GE(calls, 3);
}

// ---- compute-sanitizer --version (gate.cpp), through run_child: no shell, a deadline ----------

// find_sanitizer with TUNE_SANITIZER=path, the variable restored afterwards.
SanitizerLocation sanitizer_at(const fs::path& path) {
  const char* old = std::getenv("TUNE_SANITIZER");
  const std::string saved = old ? old : "";
  setenv("TUNE_SANITIZER", path.c_str(), 1);
  SanitizerLocation s = find_sanitizer(true);
  if (old)
    setenv("TUNE_SANITIZER", saved.c_str(), 1);
  else
    unsetenv("TUNE_SANITIZER");
  return s;
}

fs::path copy_of_fake_sanitizer(const fs::path& to) {
  fs::create_directories(to.parent_path());
  fs::copy_file(fs::path(TUNE_REPO_DIR) / "tests" / "support" / "fake-compute-sanitizer", to);
  return to;
}

TEST(SanitizerVersion, APathWithQuotesAndShellCommandsIsRunAsItselfNeverThroughAShell) {
  const fs::path dir = test_dir();
  for (const std::string& folder : std::vector<std::string>{"o'q", "x';touch " + (dir / "PWNED").string() + ";'",
                                                            "$(touch PWNED2)", "a\"b;touch PWNED3"}) {
    const SanitizerLocation s = sanitizer_at(copy_of_fake_sanitizer(dir / folder / "compute-sanitizer"));
    EXPECT_EQ(s.version, "2099.1.0 (a fake: tests/support/fake-compute-sanitizer)") << folder;
    EXPECT_EQ(s.version_note, "") << folder;
  }
  EXPECT_FALSE(fs::exists(dir / "PWNED"));
  EXPECT_FALSE(fs::exists("PWNED2"));
  EXPECT_FALSE(fs::exists("PWNED3"));
}

TEST(SanitizerVersion, OneThatNeverAnswersIsKilledAndTheVersionIsUnknown) {
  const fs::path dir = test_dir();
  const fs::path hang = dir / "compute-sanitizer";
  std::ofstream(hang) << "#!/bin/sh\nif [ \"$1\" = --version ]; then trap '' TERM; echo $$ > " << (dir / "pid").string()
                      << "; sleep 300; fi\n";
  fs::permissions(hang, fs::perms::owner_all);
  const auto t0 = std::chrono::steady_clock::now();
  const SanitizerLocation s = sanitizer_at(hang);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0);
  EXPECT_EQ(s.path, hang.string());
  EXPECT_EQ(s.version, "unknown");
  EXPECT_NE(s.version_note.find("--version gave no answer within 5 s"), std::string::npos) << s.version_note;
  std::ifstream f(dir / "pid");
  expect_all_gone(std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>()));
  // One that answers without a version line says so.
  std::ofstream(hang) << "#!/bin/sh\necho no version here\n";
  EXPECT_NE(sanitizer_at(hang).version_note.find("printed no \"Version\" line"), std::string::npos);
}

}  // namespace
}  // namespace tune
