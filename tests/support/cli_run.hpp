#pragma once
// Runs the tune binary for the CLI tiers: its exit code and output, scratch folders, and the check
// that an error is one line.
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>

#include <gtest/gtest.h>

namespace {

struct Result {
  int code = -1;
  std::string output;  // stdout and stderr together
};

// Any command line, through the shell, stdout and stderr together.
Result run_command(const std::string& command) {
  const std::string cmd = command + " 2>&1";
  Result r;
  FILE* p = popen(cmd.c_str(), "r");
  std::array<char, 4096> buf{};
  while (p && fgets(buf.data(), buf.size(), p)) r.output += buf.data();
  const int status = p ? pclose(p) : -1;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// env: "NAME=value ..." set for this run only.
Result run_with(const std::string& env, const std::string& args) {
  return run_command(env + " " + std::string(TUNE_EXE) + " " + args);
}

Result run(const std::string& args) { return run_with("", args); }

// Runs tune (`args`) with the folder `dir` unreadable to it (mode 000, restored after). Root reads
// through permissions, so as root the run is as nobody (setpriv), which reads the rest of the tree
// through its others' bits; nullopt when `dir` cannot be made unreadable so (the caller skips).
[[maybe_unused]] std::optional<Result> run_with_unreadable(const std::filesystem::path& dir, const std::string& args) {
  namespace fs = std::filesystem;
  const std::string as = geteuid() == 0 ? "setpriv --reuid=65534 --regid=65534 --clear-groups " : "";
  if (!as.empty() && run_command("command -v setpriv").code != 0) return std::nullopt;
  const fs::perms before = fs::status(dir).permissions();
  fs::permissions(dir, fs::perms::none);
  std::optional<Result> r;
  if (run_command(as + "ls " + dir.string()).code != 0) r = run_command(as + std::string(TUNE_EXE) + " " + args);
  fs::permissions(dir, before);
  return r;
}

std::string out_dir(const std::string& name) {
  const auto dir = std::filesystem::path(TUNE_BINARY_DIR) / "cli_out" / name;
  std::filesystem::remove_all(dir);
  return dir.string();
}

// The output of a failed run holds `needle` and exactly one error line.
void expect_error_output(const Result& r, const std::string& needle) {
  EXPECT_NE(r.output.find(needle), std::string::npos) << r.output;
  // One error line: what was wrong and what to do.
  std::size_t error_lines = 0;
  for (std::size_t pos = 0; pos < r.output.size();) {
    const std::size_t end = r.output.find('\n', pos);
    if (r.output.compare(pos, 6, "tune: ") == 0 || r.output.compare(pos, 6, "Error:") == 0) ++error_lines;
    pos = end == std::string::npos ? r.output.size() : end + 1;
  }
  EXPECT_EQ(error_lines, 1u) << r.output;
}

[[maybe_unused]] void expect_error(const std::string& args, const std::string& needle) {
  const Result r = run(args);
  EXPECT_NE(r.code, 0) << args << "\n" << r.output;
  SCOPED_TRACE(args);
  expect_error_output(r, needle);
}

}  // namespace
