#pragma once
// What a user asks of one run (TuneOptions, --search): read by the run and by the search strategies
// that serve it, apart from the run's API (tune/tune.hpp) so that search/ needs nothing of run/.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tune/record.hpp"
#include "tune/sanitize_mode.hpp"
#include "tune/space.hpp"
#include "tune/torch_compare.hpp"

namespace tune {

// The most variants a run compiles and times by default (--max-variants).
inline constexpr std::size_t kDefaultMaxVariants = 100'000;

// --search: how the variants to time are found (TuneOptions::search); the record's
// context.search.strategy says what was done (it adds random, warm and their combinations).
enum class SearchMode { kExhaustive, kHalving, kModel };
std::string to_string(SearchMode mode);
SearchMode search_mode_from_string(const std::string& text);  // throws InputError
// The modes' names, in order, as --search takes them.
std::vector<std::string> search_mode_names();

struct TuneOptions {
  std::string problem;  // a name on the problem path, or a problem folder
  // Dimensions the user gave; the rest come from the config's defaults.
  std::vector<std::pair<std::string, std::int64_t>> dims;
  std::uint64_t seed = 42;
  std::filesystem::path out_dir = "results";
  std::optional<std::filesystem::path> header;  // default: beside the JSON
  std::optional<std::filesystem::path> config;  // default: the problem's own problem.json
  int jobs = 0;                                 // 0: all hardware threads
  bool compile_only = false;
  int device = 0;
  // The results folder under out_dir for the device (empty: its slug, "h200"). The multi-device
  // sweep sets "<slug>-<first 8 hex of the UUID>" when two devices in use share a slug.
  std::string device_dir;
  int arch = 90;  // target when compiling without a device
  int top_k = 3;
  // 0: every valid configuration. N > 0: a random sample of N of them (drawn from `seed`, the
  // same on every machine), plus the baseline.
  int budget = 0;
  // Warm start (--warm-start): results of other shapes of the same problem. Only the
  // configurations within warm_keep x the best at the nearest of those shapes that timed them are
  // chosen, plus warm_explore others at random (from `seed`; 32 by default: two rounds of a 16-core
  // machine's compile slots) and the baseline: the run times those alone.
  std::vector<std::filesystem::path> warm_start;
  double warm_keep = 1.25;
  int warm_explore = 32;
  // After the warm choice is timed, rounds of local search at this shape: the valid
  // configurations one parameter away from the warm_refine fastest here are timed too, round after
  // round while a round finds a faster one (at most warm_refine_rounds). 0: none.
  int warm_refine = 2;
  int warm_refine_rounds = 4;
  // A space whose product of parameter values is larger is not enumerated: the run is refused, or
  // with a budget sampled by drawing configurations (Space::sample).
  std::uint64_t max_space = kDefaultMaxSpace;
  // A search that chooses among the valid configurations (--budget, --warm-start, --search model)
  // holds at most this many of them: past it, a uniform sample from the seed (Space::enumerate's
  // Holding), so a raised max_space cannot exhaust memory.
  std::size_t max_candidates = kDefaultMaxCandidates;
  // A run of more variants (after --budget and --shard) is refused: each keeps its record (about
  // 16 KB) in memory, and at 0.7 s a compile 100000 take a day of one core.
  std::size_t max_variants = kDefaultMaxVariants;
  // "exhaustive": every chosen variant timed with the search profile. "halving": every one screened
  // cheaply (StopRule::screen, 10-launch batch), the best third timed again with the search profile.
  // "model": a surrogate (tune/surrogate.hpp) chooses what to compile next: a random initial design
  // (or the warm choice), then rounds of model_batch proposals while the model predicts a gain.
  SearchMode search = SearchMode::kExhaustive;
  // --search model: the initial design (0: max(2 x the batch, 5 % of the valid configurations)),
  // the configurations proposed per round (0: the compile jobs, at least 8), the most rounds, and
  // the gain below which it stops (0.01: no configuration predicted to beat the best by 1 %).
  int model_init = 0;
  int model_batch = 0;
  int model_rounds = 12;
  double model_gain = 0.01;
  // Variants whose ptxas report shows spills are recorded as skipped, not timed (the baseline
  // always is); true measures them too.
  bool keep_spills = false;
  // > 0: after this many seconds no further variant is compiled or measured; the ones not reached
  // are recorded as skipped, and the run still names a winner among those measured.
  double time_budget_s = 0;
  // > 0: the deadline of every variant in the worker process, in seconds (the strict re-measure
  // gets it per variant). 0: 10 s until the baseline is timed, then derived from its median.
  double variant_timeout_s = 0;
  // Continue the run recorded in the journal beside the results (same identity); without a
  // journal, start fresh. A shape whose results file is complete for this run's identity is not
  // tuned again (TuneOutcome::already_complete).
  bool resume = false;
  // The other devices' folders under out_dir of a sweep on a shared queue (--devices): --resume
  // looks there too for the shape's complete results or journal, as a resumed shape may land on
  // another card of the same model; a journal found there moves into this device's folder.
  std::vector<std::string> resume_dirs;
  // One card's replica in a --replicate sweep: --resume takes only this card's own results. Outside
  // one it also takes a shape's results finished by another card of this model under --out
  // (is_model_folder), a card the resumed run may no longer include.
  bool replica = false;
  std::optional<std::filesystem::path> cache_dir;  // default: CompileCache::default_dir()
  bool no_cache = false;                           // neither the compile cache nor the gate's verdict cache (issue 37)
  bool fresh_verdicts = false;                     // --fresh-verdicts: gate every finalist again (new verdicts are stored)
  // The correctness gate's sanitizers (tune/gate.hpp): off, on the would-be winner, or on every
  // finalist. The output checks (more inputs, determinism) run on every finalist whatever this says.
  SanitizeMode sanitize = SanitizeMode::kWinner;
  // --allow-unchecked: a finalist the gate could not check in full (`unchecked`) may win. Without
  // it, a run whose gate could not run names no winner and exits 2 or 3 (TuneOutcome::gate_exit_code).
  bool allow_unchecked = false;
  // --torch: the problem's PyTorch module timed after the gate (tune/torch_compare.hpp, issue 36).
  TorchModes torch = TorchModes::kAll;
  std::string command_line;
  // Set by the sweep layer for --shard runs (tune/sweep.hpp): recorded in the context, and with
  // split "variants" only this shard's variants are run.
  std::optional<ShardRecord> shard;
  std::function<void(const std::string&)> log;  // progress lines; may be empty
  // The columns a progress line may take (the terminal's width when the log goes to one): a
  // variant's name is cut to fit. 0: whole lines, as a file or a pipe wants them.
  std::size_t line_width = 0;
};

}  // namespace tune
