#pragma once
// What a finished tune, sweep or merge prints, and the exit codes that say how it ended
// (docs/cli.md).
#include <filesystem>

#include "tune/tune.hpp"

namespace tune::cli {

// Exit 5 (docs/cli.md): a timed run in which no variant passed; its results are written, no header.
inline constexpr int kNothingPassed = 5;

// 128 + the signal that interrupted the run, as a shell reports it: 130 (SIGINT), 143 (SIGTERM).
int interrupted_exit_code();

// Says so in one line when no variant of a finished timed run passed (none has a usable median);
// true then.
bool say_nothing_passed(const RunRecord& run, const std::filesystem::path& json_path);

// The run's counts, walls and fastest variants on stdout. True when the run counts for exit 5:
// nothing passed, and it is not a --shard part (whose verdict is the merge's, so that a Slurm merge
// queued afterok still runs).
bool print_summary(const TuneOutcome& out);

}  // namespace tune::cli
