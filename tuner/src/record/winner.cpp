// The winner rule over a run's records (tune/winner.hpp).
#include "tune/winner.hpp"

#include <algorithm>
#include <climits>
#include <cmath>

namespace tune {

// Winner: the smallest median; any variant within the noise of the best ties with it, and a
// tie goes to fewer registers, then the lexicographically smaller name, so the header is stable.
// Only a finite, positive median takes part (has_usable_timing): a NaN compares false both ways and
// would tie with everything.
bool has_usable_timing(const VariantRecord& v) {
  return v.status == Status::kPassed && v.timing && std::isfinite(v.timing->median_us) && v.timing->median_us > 0;
}

bool may_win(const VariantRecord& v, const RunRecord& run) {
  return has_usable_timing(v) &&
         !(v.gate && v.gate->verdict == GateVerdict::kUnchecked && !run.context.gate.allow_unchecked);
}

std::optional<PickedWinner> pick_winner(const RunRecord& run) {
  // One method: once variants were re-measured strictly, only they are compared (a search median
  // set beside a strict one made an unchecked runner-up tie and called another gate round); the
  // others take part again only when none of those may win (every gated one failed). The baseline
  // is re-measured strictly for its speedup: alone it does not make the rule apply, else a safe
  // baseline would win over faster variants the search timed once the finalists had failed (the
  // gate's next round re-measures and gates those instead).
  const bool strict = std::any_of(run.variants.begin(), run.variants.end(),
                                  [&](const VariantRecord& v) { return may_win(v, run) && v.search_timing && !v.baseline; });
  auto candidate = [&](const VariantRecord& v) { return may_win(v, run) && (!strict || v.search_timing); };
  const VariantRecord* best = nullptr;
  for (const auto& v : run.variants)
    if (candidate(v) && (!best || v.timing->median_us < best->timing->median_us)) best = &v;
  if (!best) return std::nullopt;
  // The uncertainty of a median: the half-width of its notch, 1.57 x IQR / sqrt(n) (McGill, Tukey
  // and Larsen 1978: two medians whose notches overlap do not differ at about 95 %), relative. Not
  // the samples' own spread (half the IQR, the rule until issue 24): with thousands of cold samples
  // that tied medians 3 % apart, and a 2.9 % slower variant with fewer registers was named.
  auto notch = [](const TimingRecord& t) {
    const double s = 1.57 * (t.q3_us - t.q1_us) / (std::sqrt(static_cast<double>(std::max(t.samples, 1))) * t.median_us);
    return std::isfinite(s) && s > 0 ? s : 0.0;  // a damaged quartile widens no tie band
  };
  const VariantRecord* pick = best;
  for (const auto& v : run.variants) {
    if (!candidate(v) || &v == best) continue;
    const double tol = std::min(0.05, std::max(0.005, notch(*best->timing) + notch(*v.timing)));
    if (v.timing->median_us > best->timing->median_us * (1 + tol)) continue;
    // Unknown registers (-1: no report) never win a tie on registers.
    auto regs = [](const VariantRecord& r) { return r.max_registers() < 0 ? INT_MAX : r.max_registers(); };
    if (std::make_pair(regs(v), v.name) < std::make_pair(regs(*pick), pick->name)) pick = &v;
  }
  const char* rule =
      "smallest cold median (of the strictly re-measured variants, when any may win); variants within max(0.5 %, the two medians' notch half-widths 1.57 IQR/sqrt(n) added, "
      "capped at 5 %) of it tie, and a tie goes to fewer registers, then the smaller name";
  return PickedWinner{pick->name, rule};
}

void name_winner(RunRecord& run) {
  run.winner.reset();
  run.winner_rule.clear();
  run.speedup.reset();
  const auto picked = pick_winner(run);
  if (!picked) return;
  run.winner = picked->name;
  run.winner_rule = picked->rule;
  if (!run.baseline) return;
  const auto* b = run.find(*run.baseline);
  if (b && has_usable_timing(*b)) run.speedup = b->timing->median_us / run.find(*run.winner)->timing->median_us;
}

}  // namespace tune
