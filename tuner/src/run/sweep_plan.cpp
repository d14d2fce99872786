// A tune's plan and its one entry (tune/sweep_plan.hpp): shapes, shard and devices from the
// request (the sweep file, the shape lists, --shard), every shape resolved once, the sweep checked,
// ordered (--transfer) and cut to this shard; then the shapes run in sequence or on the devices.
#include "tune/sweep_plan.hpp"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <iterator>
#include <map>
#include <ranges>
#include <set>
#include <tuple>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/json_file.hpp"
#include "run/run_common.hpp"
#include "search/strategy.hpp"
#include "tune/errors.hpp"
#include "tune/io.hpp"
#include "tune/problem.hpp"
#include "tune/stop.hpp"
#include "tune/sweep.hpp"

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
  // A list to show: a dtype variable's own values, a dimension's numbers.
  const auto example = [&](const std::string& d) -> std::string {
    try {
      for (const auto& v : find_problem(problem).dtype_variables())
        if (v.name == d) return fmt::format("{}", fmt::join(v.values | std::views::transform(dtype_name), ","));
    } catch (const InputError&) {}
    return "64,256";
  };
  auto rank = [&](const std::string& d) {
    return static_cast<std::size_t>(std::find(order.begin(), order.end(), d) - order.begin());
  };
  auto sorted = lists;
  std::stable_sort(sorted.begin(), sorted.end(),
                   [&](const auto& a, const auto& b) { return rank(a.first) < rank(b.first); });
  for (const auto& [d, values] : sorted) {
    if (values.empty())
      throw InputError(fmt::format("--{} has no values; give one or more, e.g. --{} {}", d, d, example(d)));
    const std::set<std::int64_t> unique(values.begin(), values.end());
    if (unique.size() != values.size()) {
      std::vector<std::string> shown;  // a dtype variable's values by their names, not their codes
      for (const std::int64_t v : values)
        shown.push_back(dtype_of_flag_value(v) ? std::string(dtype_name(*dtype_of_flag_value(v))) : std::to_string(v));
      throw InputError(fmt::format("--{} repeats a value ({}); list each value once", d, fmt::join(shown, ",")));
    }
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
  for (const auto& [k, unused] : j.items())
    if (k != "items")
      throw InputError(fmt::format("{}: unknown key \"{}\" (a sweep file holds \"items\" alone), {}", name, k, example));
  std::vector<SweepItem> items;
  for (std::size_t i = 0; i < j.at("items").size(); ++i) {
    const Json& e = j.at("items").at(i);
    const std::string where = fmt::format("{}: items[{}]", name, i);
    if (!e.is_object()) throw InputError(fmt::format("{}: must be an object, {}", where, example));
    if (!e.contains("problem") || !e.at("problem").is_string())
      throw InputError(fmt::format("{}.problem: must be a string naming the problem, {}", where, example));
    const std::string problem = e.at("problem").get<std::string>();
    const Problem* found = nullptr;
    try {
      found = &find_problem(problem);
    } catch (const InputError& err) {
      throw InputError(fmt::format("{}.problem: {}", where, err.what()));
    }
    const auto& vars = found->dtype_variables();
    std::vector<std::string> dims = found->dims();
    for (const auto& v : vars) dims.push_back(v.name);
    std::vector<std::pair<std::string, std::vector<std::int64_t>>> lists;
    for (const auto& [k, v] : e.items()) {
      if (k == "problem") continue;
      if (std::find(dims.begin(), dims.end(), k) == dims.end())
        throw InputError(
            fmt::format("{}.{}: not a dimension of problem {} (it takes {})", where, k, problem, fmt::join(dims, ", ")));
      const auto var = std::find_if(vars.begin(), vars.end(), [&k](const DTypeVariable& d) { return d.name == k; });
      std::vector<std::int64_t> values;
      for (const Json& x : v.is_array() ? v : Json::array({v})) {
        const auto t = x.is_string() ? parse_dtype(x.get<std::string>()) : std::nullopt;  // a dtype variable's
        if (!x.is_number_integer() && !t)
          throw InputError(fmt::format("{}.{}: must be an integer, a dtype or a list of them", where, k));
        // A dtype variable's value is named where the file gives it, not as the option --T would be;
        // so is a dimension given a dtype, or an integer that would read as a dtype's code.
        if (var == vars.end() && (t || dtype_of_flag_value(x.get<std::int64_t>())))
          throw InputError(
              fmt::format("{}.{}: {} is not a dimension's value; a dimension is a positive integer", where, k, x.dump()));
        if (var != vars.end() && (!t || std::find(var->values.begin(), var->values.end(), *t) == var->values.end()))
          throw InputError(fmt::format("{}.{}: {} is not a dtype problem {} takes ({})", where, k, x.dump(), problem,
                                       fmt::join(var->values | std::views::transform(dtype_name), ", ")));
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
  SpaceCache spaces;
  for (std::size_t i = 0; i < items.size(); ++i)
    work.push_back({i, items[i], std::nullopt, resolve_item(items[i].problem, config, items[i].dims, &spaces)});
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
                           {"time_budget_s", base.time_budget_s},
                           {"variant_timeout_s", base.variant_timeout_s},
                           {"search_options", search_identity(base)}};
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

namespace {

void log_line(const TuneOptions& base, const std::string& line) {
  if (base.log) base.log(line);
}

// The shapes to tune: the sweep file's, or --problem's with the shape options' lists expanded.
std::vector<SweepItem> sweep_items(const TuneRequest& r) {
  if (!r.sweep_file.empty()) {
    if (!r.base.problem.empty() || !r.shape_lists.empty())
      throw InputError("--sweep lists the problems and shapes; leave out --problem and the dimension options");
    return load_sweep_file(r.sweep_file);
  }
  if (r.base.problem.empty()) throw InputError("--problem is required (try: tune --problem contact --B 4 --N 64)");
  return expand_dims(r.base.problem, r.shape_lists);
}

// --devices resolved (none without it, and none for a compile-only sweep, which runs once).
std::vector<SweepDevice> sweep_devices(const TuneRequest& r) {
  if (r.replicate && r.devices_text.empty())
    throw InputError("--replicate runs each shape on every device of --devices; add --devices all or a list");
  std::vector<SweepDevice> devices;
  if (r.devices_text.empty()) return devices;
  const DeviceSelection selection = parse_devices(r.devices_text);
  if (r.base.compile_only)
    log_line(r.base, "--compile-only: nothing is timed, so the sweep runs once, not per device");
  else
    devices = resolve_devices(selection, r.base.arch);
  if (devices.empty() && !r.base.compile_only)
    log_line(r.base, "--devices all: no CUDA device; running the compile-only sweep once");
  if (r.base.header && devices.size() > 1)
    throw InputError(
        fmt::format("--header names one file, but {} devices write results; leave it out (each header is "
                    "written beside its results)",
                    devices.size()));
  return devices;
}

// --transfer: the sweep's shapes in one sequence, cheapest first per problem.
std::vector<SweepWork> transfer_order(const SweepPlan& p, std::vector<SweepWork> all) {
  // Each shape learns from the ones before it: one sequence, on one device, choosing its variants itself.
  const char* clash = !p.devices.empty()  ? "--devices (the shapes run side by side there)"
                      : p.shard.count > 1 ? "--shard (a shard does not see the others' results)"
                      : p.base.budget > 0 ? "--budget (the warm start chooses the variants)"
                                          : nullptr;
  if (clash) throw InputError(fmt::format("--transfer tunes the sweep's shapes in one sequence; leave out {}", clash));
  auto ordered = order_for_transfer(std::move(all));
  log_line(p.base,
           fmt::format("transfer: {} shapes, cheapest first per problem: {}", ordered.size(),
                       fmt::join(ordered | std::views::transform([](const SweepWork& w) { return w.item.describe(); }),
                                 "; ")));
  return ordered;
}

// Several shapes, a shard or several devices: the sweep checked, ordered and cut to this shard.
void plan_sweep_work(SweepPlan& p, std::vector<SweepWork> all) {
  if (p.base.header && p.items > 1)
    throw InputError(
        fmt::format("--header names one file, but the sweep has {} shapes; leave it out (each header is "
                    "written beside its results)",
                    p.items));
  if (p.items > 1) validate_sweep(all);
  if (p.transfer) all = transfer_order(p, std::move(all));
  p.work = plan_sweep(all, p.shard, sweep_run_key(p.base, all));
  if (p.shard.count > 1)
    log_line(p.base, fmt::format("shard {}/{}: {} of the sweep's {} items{}", p.shard.index, p.shard.count, p.work.size(),
                                 p.items, p.items == 1 ? " (one shape: its variants are split)" : ""));
}

// The sweep's shapes side by side on the devices, one worker each.
void run_on_devices(TuneSweepOutcome& out, const std::function<void(const ItemDone&)>& on_done) {
  const SweepPlan& p = out.plan;
  for (const auto& d : p.devices)
    log_line(p.base, fmt::format("{} -> {}/{}/", describe_device(d.info), p.base.out_dir.string(), d.dir));
  const auto t0 = Clock::now();
  out.result = run_sweep_on_devices(p.work, p.base, p.devices, p.replicate,
                                    [&](const SweepWork& w, const SweepDevice& d, const TuneOutcome& outcome) {
                                      if (on_done) on_done({p, w, &d, outcome});
                                    });
  out.seconds = seconds_since(t0);
}

// The sweep's shapes one after the other, in this process (a lone shape: its plain run).
void run_in_sequence(TuneSweepOutcome& out, const std::function<void(const ItemDone&)>& on_done) {
  const SweepPlan& p = out.plan;
  const auto t0 = Clock::now();
  auto done = [&](const SweepWork& w, const TuneOutcome& outcome) {
    if (on_done) on_done({p, w, nullptr, outcome});
  };
  if (p.single()) {
    const SweepWork& w = p.work.front();
    const TuneOutcome outcome = run_tune(options_for(p.base, w), w.shape);
    done(w, outcome);
    out.result.ran = 1;
    out.result.interrupted = outcome.run.context.interrupted;
    return;
  }
  out.result = run_sweep(p.work, p.base, done, p.transfer);
  out.seconds = seconds_since(t0);
}

}  // namespace

SweepPlan plan_tune(const TuneRequest& request) {
  SweepPlan p;
  p.base = request.base;
  p.replicate = request.replicate;
  p.transfer = request.transfer;
  const std::vector<SweepItem> items = sweep_items(request);
  p.items = items.size();
  if (!request.shard_text.empty()) p.shard = parse_shard(request.shard_text);
  // The one resolution of each shape (problem, space, shape, work counts; an error is kept for the
  // shape's turn), then the devices it runs on.
  std::vector<SweepWork> all = resolve_items(items, p.base.config);
  p.devices = sweep_devices(request);
  if (p.single())
    p.work = std::move(all);
  else
    plan_sweep_work(p, std::move(all));
  return p;
}

TuneSweepOutcome run_tune_request(const TuneRequest& request, const std::function<void(const ItemDone&)>& on_done) {
  TuneSweepOutcome out{plan_tune(request)};
  if (out.plan.devices.empty())
    run_in_sequence(out, on_done);
  else
    run_on_devices(out, on_done);
  return out;
}

}  // namespace tune
