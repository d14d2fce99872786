#pragma once
// What a finished tune, sweep or merge prints, and the exit codes that say how it ended
// (docs/cli.md).
#include <filesystem>

#include "tune/tune.hpp"

namespace tune::cli {

// Exit 5 (docs/cli.md): a timed run in which no variant passed, or a compile-only one in which
// none compiled; its results are written, no header.
inline constexpr int kNothingPassed = 5;

// 128 + the signal that interrupted the run, as a shell reports it: 130 (SIGINT), 143 (SIGTERM).
int interrupted_exit_code();

// Says so in one line when a finished timed run names no winner: no variant passed (none has a
// usable median), or the gate could not run and no unchecked finalist may win; or when a
// compile-only run compiled no variant. The line quotes the first compile error, if any; true then.
bool say_nothing_passed(const RunRecord& run, const std::filesystem::path& json_path);

// The run's counts, walls and fastest variants on stdout; the exit code of how it ended: the
// gate's (2 or 3) when it could not run and nothing unchecked may win (TuneOutcome::gate_exit_code),
// 5 when nothing passed and it is not a --shard part (whose verdict is the merge's, so that a Slurm
// merge queued afterok still runs), else 0.
int print_summary(const TuneOutcome& out);

}  // namespace tune::cli
