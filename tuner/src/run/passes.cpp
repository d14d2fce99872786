// What the passes of a run share: the run's identity, the configurations a pass times, whether
// a finished run's results replace the earlier ones.
#include "run/pass_run.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "run/run_common.hpp"
#include "search/strategy.hpp"
#include "tune/compile.hpp"
#include "tune/compile_cache.hpp"
#include "tune/compile_pool.hpp"
#include "tune/device.hpp"
#include "tune/errors.hpp"
#include "tune/io.hpp"
#include "tune/journal.hpp"
#include "tune/measure.hpp"
#include "tune/problem.hpp"
#include "tune/run_plan.hpp"
#include "tune/space.hpp"
#include "tune/worker_client.hpp"

namespace tune {

// Left out, as they change nothing measured or recorded of the variants: --jobs, the caches,
// --reference-timeout, --max-variants and --max-space without --budget (they only refuse a run),
// --header and --out (where it goes), --time-budget (a run it stopped is continued by --resume under
// any budget: docs/cli.md), and --sanitize and --allow-unchecked (the gate is redone on resume, and a
// complete result gated otherwise is tuned again: Outputs::gated_otherwise).
nlohmann::ordered_json run_identity(const TuneOptions& o, const RunRecord& run) {
  nlohmann::ordered_json identity{{"tool_version", run.context.tool_version},
                                  {"git_commit", run.context.git_commit},
                                  {"device", run.device ? run.device->name : "none (compile only)"},
                                  {"device_index", o.device},
                                  {"device_uuid", run.device ? run.device->uuid : ""},
                                  {"problem", run.problem},
                                  {"shape", run.shape.tag()},
                                  {"seed", o.seed},
                                  {"source_hash", run.context.source_hash},
                                  {"reference", run.context.reference_identity},
                                  {"compile_options", run.context.compile_options},
                                  {"budget", o.budget},
                                  {"search", to_string(o.search)},
                                  {"keep_spills", o.keep_spills},
                                  // The finalists re-measured strictly: a result of --top 1 is no result of --top 5.
                                  {"top", o.top_k},
                                  // Each variant's deadline (0: derived from the baseline): under another,
                                  // another variant times out, and a journal's verdicts would be mixed.
                                  {"variant_timeout_s", o.variant_timeout_s},
                                  // What the winner is compared with (--torch): a result of --torch off
                                  // records no comparison.
                                  {"torch", to_string(o.torch)}};
  const nlohmann::ordered_json search = search_identity(o);
  for (auto it = search.begin(); it != search.end(); ++it) identity[it.key()] = it.value();
  return identity;
}

nlohmann::ordered_json across_cards(nlohmann::ordered_json identity, bool same_card) {
  if (identity.is_object()) {
    identity.erase("device_index");
    if (!same_card) identity.erase("device_uuid");
  }
  return identity;
}

std::string identity_difference(const nlohmann::ordered_json& mine, const nlohmann::ordered_json& theirs) {
  if (!theirs.is_object()) return "identity (none recorded)";
  for (const auto& [key, value] : mine.items())
    if (!theirs.contains(key) || theirs.at(key) != value) return key;
  for (const auto& [key, value] : theirs.items())
    if (!mine.contains(key)) return key;
  return "";
}

std::vector<Config> in_order(const std::vector<Config>& all, const std::set<Config>& chosen) {
  std::vector<Config> out;
  for (const Config& c : all)
    if (chosen.contains(c)) out.push_back(c);
  return out;
}

std::vector<Config> with_baseline(const std::vector<Config>& all, const std::vector<Config>& configs, const Config& base) {
  std::set<Config> chosen(configs.begin(), configs.end());
  if (std::find(all.begin(), all.end(), base) != all.end()) chosen.insert(base);
  return in_order(all, chosen);
}

void fill_pass(Pass& pass, const Space& space, std::vector<Config> all, std::vector<Config> chosen) {
  pass.all = std::move(all);
  pass.baseline = space.baseline();
  pass.names.clear();
  pass.names.reserve(pass.all.size());
  for (const Config& c : pass.all) pass.names.push_back(space.name(c));
  if (pass.defer_baseline) std::erase(chosen, space.baseline());
  pass.configs = std::move(chosen);
}

Chosen later_pass_configs(const Space& space, RunContext& ctx, const Pass& pass, const SearchStrategy& strategy) {
  ctx.valid_configs = pass.valid_configs;
  ctx.candidates = pass.candidates;
  strategy.record(ctx);
  std::vector<Config> configs = pass.configs;
  if (!pass.search_only && pass.defer_baseline) configs = with_baseline(pass.all, configs, space.baseline());
  SearchRounds rounds;
  strategy.rounds(rounds);
  return {configs, fmt::format("{} of {} valid configurations: the {}, {} model round(s) and {} refine round(s)",
                               configs.size(), pass.valid_configs, rounds.first, rounds.model, rounds.refine)};
}

Chosen choose_configs(const TuneOptions& o, const std::string& problem, const Space& space, const Shape& shape,
                      const DeviceLimits& limits, RunContext& ctx, const LogFn& log, Pass* pass, SearchStrategy& strategy) {
  ctx.space_configurations = space.size();
  // A later pass by its count, not by configs it holds: a first pass whose one valid configuration is
  // the deferred baseline chose none, and strategy.first again would lose the baseline (exit 5).
  if (pass && pass->passes_done > 0) return later_pass_configs(space, ctx, *pass, strategy);
  const SearchSetting setting{o, problem, space, shape, limits, log, pass && pass->defer_baseline};
  FirstBatch batch = strategy.first(setting, ctx);
  if (pass) {
    fill_pass(*pass, space, std::move(batch.all), std::move(batch.configs));
    pass->valid_configs = ctx.valid_configs;
    pass->candidates = ctx.candidates;
    batch.configs = pass->configs;
  }
  strategy.record(ctx);
  return {std::move(batch.configs), std::move(batch.how)};
}

std::pair<int, std::size_t> results_worth(const RunRecord& r) {
  if (r.complete && !r.context.interrupted) return {r.timed && !r.winner ? 1 : 2, 0};
  return {0, static_cast<std::size_t>(std::count_if(r.variants.begin(), r.variants.end(), [](const VariantRecord& v) {
            return v.status != Status::kPending && v.status != Status::kSkipped;
          }))};
}

std::filesystem::path earlier_result(const std::filesystem::path& json) {
  std::error_code ec;
  return std::filesystem::exists(json, ec) ? json : compressed_result_path(json);
}

void move_unreadable_aside(const std::filesystem::path& json, const RunRecord& run,
                           const std::function<void(const std::string&)>& log) {
  std::error_code ec;
  const auto path = earlier_result(json);
  if (results_worth(run).first < 2 || !std::filesystem::exists(path, ec)) return;
  try {
    (void)read_result(path);
    return;
  } catch (const InputError& e) {
    std::string stamp = now_iso8601();
    std::erase_if(stamp, [](char c) { return c == '-' || c == ':'; });
    const std::filesystem::path aside = path.string() + ".unreadable-" + stamp;
    std::filesystem::rename(path, aside, ec);
    if (ec) return;  // reason_to_keep keeps it then, and says why
    if (log)
      log(fmt::format("moved the earlier results {} aside to {}: they cannot be read ({})", path.string(),
                      aside.filename().string(), e.what()));
  }
}

std::string reason_to_keep(const std::filesystem::path& json, const RunRecord& run) {
  std::error_code ec;
  const auto path = earlier_result(json);
  if (!std::filesystem::exists(path, ec)) return "";
  RunRecord earlier;
  try {
    earlier = read_result(path);
  } catch (const InputError& e) {
    return fmt::format("it cannot be read ({}); move it away for a run to replace it", e.what());
  }
  const auto mine = results_worth(run), theirs = results_worth(earlier);
  if (mine >= theirs) return "";
  const std::string what = mine.first == 0 ? "this run was interrupted" : "no variant of this run passed";
  if (theirs.first == 0)
    return fmt::format("{}, and they record more variants of an interrupted run ({}, this run {})", what, theirs.second,
                       mine.second);
  return earlier.winner ? fmt::format("{}, and they name a winner ({})", what, *earlier.winner)
                        : fmt::format("{}, and they are of a run that finished", what);
}

std::vector<TensorRecord> tensor_records(const Problem& problem, const Shape& shape) {
  std::vector<TensorRecord> out;
  auto add = [&](const std::vector<TensorSpec>& specs, const char* role) {
    for (const auto& s : specs) out.push_back({s.name, role, std::string(dtype_name(s.dtype)), s.shape});
  };
  add(problem.param_specs(shape), "parameter");
  add(problem.input_specs(shape), "input");
  add({problem.output_spec(shape)}, "output");
  return out;
}

}  // namespace tune
