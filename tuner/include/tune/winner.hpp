#pragma once
// The winner rule over a run's records.
#include <optional>
#include <string>

#include "tune/record.hpp"

namespace tune {

// A passed variant whose cold median is a finite, positive number: the only kind that is ranked,
// ties, wins or gives a speedup (NaN, infinite, zero or negative medians never do).
bool has_usable_timing(const VariantRecord& v);
// Whether v takes part in the winner rule: a usable timing, and not `unchecked` by the gate unless
// the run allows it (context.gate.allow_unchecked).
bool may_win(const VariantRecord& v, const RunRecord& run);
// The winner of a measured run: the smallest cold median; variants within the noise of it
// (max(0.5 %, half the relative IQR), at most 5 %) tie, and a tie goes to fewer registers
// (unknown counts last), then the smaller name. The rule is that sentence. None passed: nullopt.
struct PickedWinner {
  std::string name;
  std::string rule;
};
std::optional<PickedWinner> pick_winner(const RunRecord& run);
// Sets run.winner and run.winner_rule (pick_winner) and run.speedup, the baseline's median over
// the winner's when the baseline has a usable timing; clears all three first.
void name_winner(RunRecord& run);

}  // namespace tune
