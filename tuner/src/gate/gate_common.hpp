// What the gate's two halves share: the output checks and verdicts (gate.cpp) and the
// compute-sanitizer passes (gate_sanitize.cpp).
#pragma once

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "tune/worker_protocol.hpp"

namespace tune::gate_detail {

using Clock = std::chrono::steady_clock;
inline double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// compute-sanitizer's exit code when a tool reported errors (--error-exitcode).
constexpr int kSanitizerErrorExit = 86;
constexpr double kInitDeadlineS = 300, kGateDeadlineS = 300, kSanitizeDeadlineS = 600, kQuitDeadlineS = 120;
// Reports of one tool kept per variant (the rest are counted: a kernel with a defect in every block
// can have hundreds); kSanitizerReportLines of each.
constexpr std::size_t kFindingsPerTool = 8;
// The gate's long pole is racecheck's run on the would-be winner (6 to 24 s on the H200's shapes
// of record, the other tools' runs under 1 s: studies/gate/README.md). The other tools, which
// finish well before it, run at this niceness beside it, so that its start (drawing the parity
// data, the context under the tool) has the CPUs. The output checks keep the tune's priority: at
// contact B1 N1024 C128 their draws of four further inputs, niced, became the longer pole.
constexpr const char* kLongPoleTool = "racecheck";
constexpr int kBesideLongPoleNice = 10;

inline std::string describe_loss(const FaultRecord& f) {
  const std::string phase = f.phase.empty() ? "" : " during " + f.phase;
  if (f.kind == FaultKind::kTimeout) return fmt::format("no answer within {:g} s{}", f.deadline_s, phase);
  if (f.kind == FaultKind::kSignal) return fmt::format("killed by {}{}", f.signal, phase);
  if (f.kind == FaultKind::kError) return fmt::format("failed{}: {}", phase, f.message);
  return fmt::format("exited with code {}{}", f.exit_code, phase);
}

// Adds `s` to the entry `name` of a list of seconds by name (appended when new).
inline void add_to(std::vector<std::pair<std::string, double>>& list, const std::string& name, double s) {
  for (auto& [n, total] : list)
    if (n == name) {
      total += s;
      return;
    }
  list.emplace_back(name, s);
}

}  // namespace tune::gate_detail
