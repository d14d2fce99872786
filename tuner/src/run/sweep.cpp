// Sweeps: shape lists -> ordered work items -> this shard's part -> run_tune per item.
#include "tune/sweep.hpp"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <set>
#include <thread>
#include <tuple>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/json_file.hpp"
#include "tune/compile.hpp"
#include "tune/compile_pool.hpp"
#include "tune/errors.hpp"
#include "tune/io.hpp"
#include "tune/problem.hpp"
#include "tune/run_plan.hpp"

namespace tune {

std::string SweepItem::describe() const {
  std::string s = problem;
  for (const auto& [k, v] : dims) {
    const auto t = dtype_of_flag_value(v);  // a dtype variable's value
    s += t ? fmt::format(" {}={}", k, dtype_name(*t)) : fmt::format(" {}={}", k, v);
  }
  return s;
}

ShardSpec parse_shard(const std::string& text) {
  const auto slash = text.find('/');
  ShardSpec s;
  auto number = [&](std::string_view part, int* out) {
    const auto r = std::from_chars(part.data(), part.data() + part.size(), *out);
    return r.ec == std::errc() && r.ptr == part.data() + part.size();
  };
  const std::string_view t(text);
  if (slash == std::string::npos || !number(t.substr(0, slash), &s.index) || !number(t.substr(slash + 1), &s.count) ||
      s.count < 1 || s.index < 0 || s.index >= s.count)
    throw InputError(fmt::format("--shard {}: expected K/N with 0 <= K < N, e.g. --shard 0/4", text));
  return s;
}

std::vector<SweepItem> expand_dims(const std::string& problem,
                                   const std::vector<std::pair<std::string, std::vector<std::int64_t>>>& lists) {
  // The problem's own order, so the item order does not depend on how the lists were given.
  std::vector<std::string> order;
  try {
    order = find_problem(problem).dims();
    for (const auto& v : find_problem(problem).dtype_variables()) order.push_back(v.name);
  } catch (const InputError&) {  // an unknown problem is reported by the caller with its context
  }
  auto rank = [&](const std::string& d) {
    return static_cast<std::size_t>(std::find(order.begin(), order.end(), d) - order.begin());
  };
  auto sorted = lists;
  std::stable_sort(sorted.begin(), sorted.end(),
                   [&](const auto& a, const auto& b) { return rank(a.first) < rank(b.first); });
  for (const auto& [d, values] : sorted) {
    if (values.empty()) throw InputError(fmt::format("--{} has no values; give one or more, e.g. --{} 64,256", d, d));
    const std::set<std::int64_t> unique(values.begin(), values.end());
    if (unique.size() != values.size())
      throw InputError(fmt::format("--{} repeats a value ({}); list each value once", d, fmt::join(values, ",")));
  }
  std::vector<SweepItem> items{{problem, {}}};
  for (const auto& [d, values] : sorted) {
    std::vector<SweepItem> next;
    for (const auto& item : items)
      for (const std::int64_t v : values) {
        SweepItem i = item;
        i.dims.emplace_back(d, v);
        next.push_back(std::move(i));
      }
    items = std::move(next);
  }
  return items;
}

std::vector<SweepItem> load_sweep_file(const std::filesystem::path& file) {
  using Json = nlohmann::ordered_json;
  const std::string name = file.string();
  const std::string example = R"(e.g. {"items": [{"problem": "contact", "B": [1, 4], "N": 64}]})";
  if (!std::ifstream(file))
    throw InputError(fmt::format("{}: cannot be read; pass an existing sweep file with --sweep", name));
  const Json j = json_file::read(file);  // bounded in size and depth
  if (!j.is_object() || !j.contains("items") || !j.at("items").is_array() || j.at("items").empty())
    throw InputError(fmt::format("{}: needs \"items\", a non-empty list of shapes, {}", name, example));
  std::vector<SweepItem> items;
  for (std::size_t i = 0; i < j.at("items").size(); ++i) {
    const Json& e = j.at("items").at(i);
    const std::string where = fmt::format("{}: items[{}]", name, i);
    if (!e.is_object()) throw InputError(fmt::format("{}: must be an object, {}", where, example));
    if (!e.contains("problem") || !e.at("problem").is_string())
      throw InputError(fmt::format("{}.problem: must be a string naming the problem, {}", where, example));
    const std::string problem = e.at("problem").get<std::string>();
    std::vector<std::string> dims;
    try {
      dims = find_problem(problem).dims();
      for (const auto& v : find_problem(problem).dtype_variables()) dims.push_back(v.name);
    } catch (const InputError& err) {
      throw InputError(fmt::format("{}.problem: {}", where, err.what()));
    }
    std::vector<std::pair<std::string, std::vector<std::int64_t>>> lists;
    for (const auto& [k, v] : e.items()) {
      if (k == "problem") continue;
      if (std::find(dims.begin(), dims.end(), k) == dims.end())
        throw InputError(
            fmt::format("{}.{}: not a dimension of problem {} (it takes {})", where, k, problem, fmt::join(dims, ", ")));
      std::vector<std::int64_t> values;
      for (const Json& x : v.is_array() ? v : Json::array({v})) {
        const auto t = x.is_string() ? parse_dtype(x.get<std::string>()) : std::nullopt;  // a dtype variable's
        if (!x.is_number_integer() && !t)
          throw InputError(fmt::format("{}.{}: must be an integer, a dtype or a list of them", where, k));
        values.push_back(t ? dtype_flag_value(*t) : x.get<std::int64_t>());
      }
      lists.emplace_back(k, std::move(values));
    }
    try {
      for (auto& item : expand_dims(problem, lists)) items.push_back(std::move(item));
    } catch (const InputError& err) {
      throw InputError(fmt::format("{}: {}", where, err.what()));
    }
  }
  return items;
}

std::vector<SweepWork> resolve_items(const std::vector<SweepItem>& items,
                                     const std::optional<std::filesystem::path>& config) {
  std::vector<SweepWork> work;
  for (std::size_t i = 0; i < items.size(); ++i)
    work.push_back({i, items[i], std::nullopt, resolve_item(items[i].problem, config, items[i].dims)});
  return work;
}

std::vector<SweepWork> plan_sweep(const std::vector<SweepWork>& all, const ShardSpec& shard, const std::string& run_key) {
  std::map<std::string, std::size_t> seen;
  for (std::size_t i = 0; i < all.size(); ++i)
    if (const auto [it, fresh] = seen.emplace(all[i].item.describe(), i); !fresh)
      throw InputError(
          fmt::format("sweep item {} ({}) repeats item {}; list each shape once", i, all[i].item.describe(), it->second));
  std::vector<SweepWork> work;
  for (std::size_t i = 0; i < all.size(); ++i) {
    SweepWork w = all[i];
    w.index = i;
    if (shard.count > 1) {
      ShardRecord r;
      r.index = shard.index;
      r.count = shard.count;
      r.split = all.size() == 1 ? ShardSplit::kVariants : ShardSplit::kItems;
      r.items = static_cast<std::int64_t>(all.size());
      r.item = static_cast<std::int64_t>(i);
      r.run_key = run_key;
      if (r.split == ShardSplit::kItems && static_cast<int>(i % static_cast<std::size_t>(shard.count)) != shard.index)
        continue;
      w.shard = r;
    }
    work.push_back(std::move(w));
  }
  return work;
}

std::string sweep_run_key(const TuneOptions& base, const std::vector<SweepWork>& work) {
  nlohmann::ordered_json j{{"tool", tool_version()},
                           {"commit", tool_git_commit()},
                           {"seed", base.seed},
                           {"compile_only", base.compile_only},
                           {"arch", base.arch},
                           {"top_k", base.top_k},
                           {"budget", base.budget},
                           {"max_space", base.max_space},
                           {"max_variants", base.max_variants},
                           {"search", to_string(base.search)},
                           {"keep_spills", base.keep_spills},
                           {"time_budget_s", base.time_budget_s}};
  // The spaces by content (problem files and templates): two shards given different files of one
  // name are different runs. An item that did not resolve is reported when it is checked.
  std::map<std::string, std::string> sources;
  for (const auto& w : work) {
    j["items"].push_back(w.item.describe());
    if (w.shape.resolved()) sources.emplace(w.item.problem, w.shape.at->space.source_hash());
  }
  if (base.config) {
    j["config"] = json_file::read_text(*base.config);
  }
  for (const auto& [problem, hash] : sources) j["sources"][problem] = hash;
  const std::string text = j.dump();
  return fmt::format("{:016x}", XXH3_64bits(text.data(), text.size()));
}

TuneOptions options_for(const TuneOptions& base, const SweepWork& work) {
  TuneOptions o = base;
  o.problem = work.item.problem;
  o.dims = work.item.dims;
  o.shard = work.shard;
  return o;
}

namespace {

// The baselines of a sweep's later items, compiled into the compile cache on two threads while the
// first items run: a baseline's compile (8 to 16 s for contact's seed design, one core) is the
// longest of a short tune, and no result decides it. Without a cache there is nothing to keep. The
// threads stop taking requests when the sweep ends (an interrupt); one compile in hand finishes.
std::vector<std::jthread> compile_baselines_ahead(const std::vector<SweepWork>& work, const TuneOptions& base) {
  if (base.no_cache || base.compile_only || work.size() < 2) return {};
  struct Shared {
    std::vector<CompileRequest> requests;
    std::atomic<std::size_t> next{0};
    std::optional<CompilePool> pool;
  };
  auto shared = std::make_shared<Shared>();
  const RunDevice device = open_run_device(base);  // once: every item of a sweep runs on base's device
  for (std::size_t i = 1; i < work.size(); ++i) try {
      const RunPlan plan = plan_run(options_for(base, work[i]), work[i].shape, device);
      if (auto r = baseline_request(plan)) shared->requests.push_back(std::move(*r));
    } catch (const std::exception&) {  // the run reports it in its turn
    }
  shared->pool.emplace(compile_cache_for(base.no_cache, base.cache_dir), base.jobs, nullptr);
  std::vector<std::jthread> threads;
  for (int t = 0; t < 2; ++t)
    threads.emplace_back([shared](const std::stop_token& stop) {
      for (std::size_t i = shared->next++; i < shared->requests.size() && !stop.stop_requested(); i = shared->next++) {
        bool cached = false;
        (void)shared->pool->compile(shared->requests[i], &cached);
      }
    });
  return threads;
}

}  // namespace

std::size_t run_sweep(const std::vector<SweepWork>& work, const TuneOptions& base,
                      const std::function<void(const SweepWork&, const TuneOutcome&)>& on_done, bool transfer) {
  const StopScope stop_scope;  // over every shape: a stop asked for in one shape ends the sweep
  std::size_t ran = 0;
  std::map<std::string, std::vector<std::filesystem::path>> taught;  // problem -> results of its earlier items
  const std::vector<std::jthread> baselines = compile_baselines_ahead(work, base);
  for (const SweepWork& w : work) {
    if (stop_requested()) break;  // asked for after the shape before had recorded its last variant
    TuneOptions o = options_for(base, w);
    if (transfer) {
      const auto& earlier = taught[w.item.problem];
      o.warm_start.insert(o.warm_start.end(), earlier.begin(), earlier.end());
      if (!earlier.empty() && o.search == SearchMode::kModel)
        o.search = SearchMode::kExhaustive;  // the earlier results teach it
      if (base.log)
        base.log(o.warm_start.empty()
                     ? fmt::format("transfer: {} is the first shape of {} in the sweep; it is tuned without a warm start",
                                   w.item.describe(), w.item.problem)
                     : fmt::format("transfer: {} starts from {} result(s) of the sweep's earlier shapes{}",
                                   w.item.describe(), earlier.size(),
                                   base.warm_start.empty() ? "" : " and the --warm-start files"));
    }
    const TuneOutcome outcome = run_tune(o, w.shape);
    if (transfer && outcome.run.winner && outcome.json_path.extension() == ".json")
      taught[w.item.problem].push_back(outcome.json_path);
    ++ran;
    if (on_done) on_done(w, outcome);
    if (outcome.run.context.interrupted) break;
  }
  return ran;
}

namespace {

// The work's resolved problem, space and shape; its error names the item.
const ProblemShape& resolved(const SweepWork& w) {
  try {
    return w.shape.get();
  } catch (const InputError& e) {
    throw InputError(fmt::format("sweep item {} ({}): {}", w.index, w.item.describe(), e.what()));
  }
}

}  // namespace

std::vector<SweepWork> order_for_transfer(std::vector<SweepWork> work) {
  struct Keyed {
    std::size_t group;
    double flop, bytes;
    std::size_t index;
  };
  std::map<std::string, std::size_t> groups;
  std::vector<Keyed> keys;
  for (std::size_t i = 0; i < work.size(); ++i) {
    const WorkCounts& w = resolved(work[i]).counts;
    const auto [g, fresh] = groups.emplace(work[i].item.problem, groups.size());
    keys.push_back({g->second, w.flop, w.bytes, i});
  }
  std::stable_sort(keys.begin(), keys.end(), [](const Keyed& a, const Keyed& b) {
    return std::tie(a.group, a.flop, a.bytes) < std::tie(b.group, b.flop, b.bytes);
  });
  std::vector<SweepWork> out;
  for (const Keyed& k : keys) {
    out.push_back(std::move(work[k.index]));
    out.back().index = out.size() - 1;
  }
  return out;
}

void validate_sweep(const std::vector<SweepWork>& work) {
  std::map<std::string, std::size_t> shapes;
  for (const SweepWork& w : work) {
    const ProblemShape& at = resolved(w);
    const std::string key = std::string(at.problem->name()) + "/" + at.shape.tag();
    if (const auto [it, fresh] = shapes.emplace(key, w.index); !fresh)
      throw InputError(fmt::format("sweep item {} ({}): is the same shape as item {} ({}); list each shape once", w.index,
                                   w.item.describe(), it->second, key));
  }
}

ShardPart shard_configs(const std::vector<Config>& chosen, const Config& baseline, const ShardRecord& shard) {
  ShardPart out{{}, shard};
  const auto b = std::find(chosen.begin(), chosen.end(), baseline);
  out.shard.variants = static_cast<std::int64_t>(chosen.size());
  out.shard.baseline_index = b == chosen.end() ? -1 : static_cast<std::int64_t>(b - chosen.begin());
  for (std::size_t i = 0; i < chosen.size(); ++i)
    if (static_cast<int>(i % static_cast<std::size_t>(shard.count)) == shard.index ||
        static_cast<std::int64_t>(i) == out.shard.baseline_index)
      out.configs.push_back(chosen[i]);
  return out;
}

std::string result_stem(const Shape& shape, const std::optional<ShardRecord>& shard) {
  if (shard && shard->split == ShardSplit::kVariants)
    return fmt::format("{}.shard-{}-of-{}", shape.tag(), shard->index, shard->count);
  return shape.tag();
}

}  // namespace tune
