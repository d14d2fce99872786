// `tune merge`: the results of the shards of one run -> the files the unsharded run writes.
#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "core/json_file.hpp"
#include "run/run_common.hpp"
#include "tune/errors.hpp"
#include "tune/io.hpp"
#include "tune/sweep.hpp"
#include "tune/tune.hpp"

namespace tune {
namespace {

struct Input {
  std::string file;
  RunRecord run;
  [[nodiscard]] const ShardRecord& shard() const { return *run.context.shard; }
};

// A results file to merge, and whether it was found in a folder (where other JSON is passed over)
// rather than named.
struct Found {
  std::filesystem::path file;
  bool in_folder = false;
};

std::vector<Found> collect(const std::vector<std::filesystem::path>& inputs) {
  std::vector<Found> files;
  for (const auto& p : inputs) {
    std::error_code ec;
    if (std::filesystem::is_directory(p, ec)) {
      std::vector<std::filesystem::path> found;
      walk_tree(p, std::filesystem::directory_options::none, [&](auto& it) {
        if (is_results_file_name(it->path().filename().string()) && it->is_regular_file()) found.push_back(it->path());
      });
      std::sort(found.begin(), found.end());
      for (auto& f : found) files.push_back({std::move(f), true});
    } else if (std::filesystem::is_regular_file(p, ec)) {
      files.push_back({p, false});
    } else {
      throw InputError(
          fmt::format("{}: no such file or folder; pass the shards' result files or --out folders", p.string()));
    }
  }
  if (files.empty())
    throw InputError("no result files (*.json, *.json.gz) found in the given folders; pass the shards' --out folders");
  return files;
}

// The first property in which b is not of a's run, or empty. Everything a merge must not mix.
std::string run_difference(const RunRecord& a, const RunRecord& b) {
  const ShardRecord& sa = *a.context.shard;
  const ShardRecord& sb = *b.context.shard;
  const auto opts = [](const RunRecord& r) { return fmt::format("{}", fmt::join(r.context.compile_options, " ")); };
  const auto dev = [](const RunRecord& r) { return r.device ? r.device->name : std::string("none"); };
  const std::vector<std::tuple<const char*, std::string, std::string>> fields = {
      {"tool version", a.context.tool_version, b.context.tool_version},
      {"git commit", a.context.git_commit, b.context.git_commit},
      {"seed", std::to_string(a.seed), std::to_string(b.seed)},
      {"timed", a.timed ? "timed" : "compile-only", b.timed ? "timed" : "compile-only"},
      {"arch", a.context.arch, b.context.arch},
      {"compile options", opts(a), opts(b)},
      {"NVRTC version", a.context.nvrtc_version, b.context.nvrtc_version},
      // The kernels themselves: a hand-edit or a re-run may keep the run key and change the sources.
      {"kernel sources (context.source_hash)", a.context.source_hash, b.context.source_hash},
      // What each shard's parity compared with: reference.py (and the modules beside it) edited
      // between two shards' jobs is another reference.
      {"reference (context.reference_identity)", a.context.reference_identity, b.context.reference_identity},
      {"search", to_string(a.context.search), to_string(b.context.search)},
      {"budget", std::to_string(a.context.budget), std::to_string(b.context.budget)},
      {"device model", a.timed ? dev(a) : "", b.timed ? dev(b) : ""},
      // The merged winner is one shard's finalist: every shard gated as the merged record says.
      {"gate (--sanitize)", a.context.gate.mode, b.context.gate.mode},
      {"--allow-unchecked", a.context.gate.allow_unchecked ? "on" : "off", b.context.gate.allow_unchecked ? "on" : "off"},
      {"shard count", std::to_string(sa.count), std::to_string(sb.count)},
      {"split", to_string(sa.split), to_string(sb.split)},
      {"sweep size", std::to_string(sa.items), std::to_string(sb.items)},
      {"options, search space or sweep (run key)", sa.run_key, sb.run_key},
  };
  for (const auto& [what, x, y] : fields)
    if (x != y) return fmt::format("{} ({} vs {})", what, x, y);
  return {};
}

std::string device_dir(const RunRecord& r) { return r.device ? r.device->slug() : "compile-only-" + r.context.arch; }

std::optional<std::filesystem::path> space_file(const Input& in, const std::optional<std::filesystem::path>& config) {
  if (config) return config;
  const std::string& f = in.run.context.config_file;
  if (f.empty() || f.ends_with(" (embedded)") || f.ends_with(kProblemFileMark)) return std::nullopt;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(f, ec))
    throw InputError(fmt::format("{}: its search space {} cannot be read here; pass it with --config", in.file, f));
  return std::filesystem::path(f);
}

// Writes the unsharded files of one merged record; returns their paths.
std::vector<std::filesystem::path> write_merged(RunRecord run, const Input& from, const std::filesystem::path& out_dir,
                                                const std::optional<std::filesystem::path>& config) {
  run.context.shard.reset();
  run.schema_minor_version = kResultSchemaMinorVersion;
  const auto dir = out_dir / device_dir(run) / run.problem;
  std::vector<std::filesystem::path> written{dir / (run.shape.tag() + ".json")};
  check_writable(dir);                     // for the lock: one line naming the folder and why
  const ResultsLock lock(written.back());  // a tune writing this shape now is not overwritten
  write_file_atomic(written.back(), to_json(run).dump(2) + "\n");
  if (run.timed && run.winner && !run.context.interrupted) {
    written.push_back(dir / (run.shape.tag() + ".hpp"));
    write_file_atomic(written.back(), generate_header(run, load_space(problem_spec_of(run), space_file(from, config))));
  }
  return written;
}

// Variant shards of one shape -> the record of the unsharded run.
RunRecord merge_variants(const std::vector<const Input*>& shards) {
  const RunRecord& first = shards.front()->run;
  const ShardRecord& s0 = shards.front()->shard();
  const auto n = static_cast<std::size_t>(s0.variants);
  const auto count = static_cast<std::size_t>(s0.count);
  std::vector<std::optional<VariantRecord>> slots(n);
  RunRecord m = first;
  m.variants.clear();
  std::set<std::string> hosts;
  m.wall = {};
  for (const Input* in : shards) {
    const ShardRecord& s = in->shard();
    if (s.variants != s0.variants || s.baseline_index != s0.baseline_index || in->run.shape != first.shape ||
        in->run.problem != first.problem)
      throw InputError(
          fmt::format("{}: a different variant list than {} (shape or space differs); merge shards of one run only",
                      in->file, shards.front()->file));
    const auto k = static_cast<std::size_t>(s.index);
    // The baseline runs in every shard; the record kept is its owner's (index mod count).
    const bool owns_baseline = s.baseline_index >= 0 && static_cast<std::size_t>(s.baseline_index) % count == k;
    std::vector<const VariantRecord*> own;
    for (const auto& v : in->run.variants)
      if (!v.baseline || owns_baseline || s.baseline_index < 0) own.push_back(&v);
    const std::size_t expected = k < n ? (n - k + count - 1) / count : 0;
    if (own.size() != expected)
      throw InputError(fmt::format("{}: holds {} variants, but shard {}/{} of {} has {}; pass unchanged shard results",
                                   in->file, own.size(), s.index, s.count, n, expected));
    for (std::size_t j = 0; j < own.size(); ++j) slots[k + j * count] = *own[j];
    hosts.insert(in->run.context.host);
    auto& c = m.context;
    c.started_at = std::min(c.started_at, in->run.context.started_at);
    c.finished_at = std::max(c.finished_at, in->run.context.finished_at);
    c.stopped_by_time_budget = c.stopped_by_time_budget || in->run.context.stopped_by_time_budget;
    m.wall.compile_wall_s += in->run.wall.compile_wall_s;  // summed: the machine time of the run
    m.wall.measure_wall_s += in->run.wall.measure_wall_s;
    m.wall.total_wall_s += in->run.wall.total_wall_s;
  }
  std::set<std::string> names;
  for (auto& v : slots) {
    if (!names.insert(v->name).second)
      throw InputError(fmt::format("variant {} appears twice across the shards; pass unchanged shard results", v->name));
    m.variants.push_back(std::move(*v));
  }
  m.context.host = fmt::format("{}", fmt::join(hosts, ","));
  m.winner.reset();
  m.winner_rule.clear();
  m.speedup.reset();
  if (m.timed) name_winner(m);
  m.complete = true;
  return m;
}

std::string list_missing(const std::vector<std::int64_t>& missing) {
  std::vector<std::int64_t> shown(missing.begin(), missing.begin() + std::min<std::ptrdiff_t>(8, std::ssize(missing)));
  return fmt::format("{}{}", fmt::join(shown, ", "), missing.size() > shown.size() ? ", ..." : "");
}

// The finished shards' results among `inputs` (files, and the tune results of folders), of one run.
std::vector<Input> read_shards(const std::vector<std::filesystem::path>& inputs) {
  std::vector<Input> all;
  for (const auto& [f, in_folder] : collect(inputs)) {
    const nlohmann::ordered_json json = json_file::read(f);  // bounded in size and depth
    if (in_folder && !is_tune_result_json(json)) continue;   // another tool's JSON, as tune results passes it over
    Input in{f.string(), read_result(f, json)};
    if (!in.run.context.shard)
      throw InputError(
          fmt::format("{}: not a shard's result (no context.shard); merge takes the results of --shard runs", in.file));
    if (!in.run.complete || in.run.context.interrupted)
      throw InputError(fmt::format("{}: shard {}/{} did not finish (interrupted or still running); run it again, then merge",
                                   in.file, in.shard().index, in.shard().count));
    for (const VariantRecord& v : in.run.variants)
      if (v.status == Status::kPending)
        throw InputError(
            fmt::format("{}: variant {} is still pending, which no finished shard leaves; pass unchanged "
                        "shard results, or run shard {}/{} again",
                        in.file, v.name, in.shard().index, in.shard().count));
    if (const std::string d = run_difference(all.empty() ? in.run : all.front().run, in.run); !d.empty())
      throw InputError(
          fmt::format("{} and {} are shards of different runs (they differ in {}); merge the shards of one run only",
                      all.front().file, in.file, d));
    all.push_back(std::move(in));
  }
  if (all.empty())
    throw InputError(
        "no tune results found in the given folders (other JSON is passed over); pass the shards' --out folders");
  return all;
}

}  // namespace

std::vector<std::filesystem::path> merge_shards(const std::vector<std::filesystem::path>& inputs,
                                                const std::filesystem::path& out_dir,
                                                const std::optional<std::filesystem::path>& config,
                                                const std::function<void(const std::string&)>& log) {
  const std::vector<Input> all = read_shards(inputs);
  const ShardRecord& s0 = all.front().shard();
  std::vector<std::filesystem::path> written;
  auto note = [&](const std::string& line) {
    if (log) log(line);
  };

  if (s0.split == ShardSplit::kItems) {
    std::map<std::int64_t, const Input*> by_item;
    for (const Input& in : all) {
      const ShardRecord& s = in.shard();
      if (s.item < 0 || s.item >= s.items || s.item % s.count != s.index)
        throw InputError(fmt::format("{}: item {} cannot come from shard {}/{}; pass unchanged shard results", in.file,
                                     s.item, s.index, s.count));
      if (const auto [it, fresh] = by_item.emplace(s.item, &in); !fresh)
        throw InputError(fmt::format("{} and {} are both item {} of the sweep; pass each shard's results once",
                                     it->second->file, in.file, s.item));
    }
    std::vector<std::int64_t> missing, missing_shards;
    for (std::int64_t i = 0; i < s0.items; ++i)
      if (!by_item.contains(i)) {
        missing.push_back(i);
        if (std::find(missing_shards.begin(), missing_shards.end(), i % s0.count) == missing_shards.end())
          missing_shards.push_back(i % s0.count);
      }
    if (!missing.empty())
      throw InputError(
          fmt::format("incomplete set of shards: items {} of the {}-item sweep are missing (from shard(s) {} "
                      "of {}); pass every shard's results",
                      list_missing(missing), s0.items, list_missing(missing_shards), s0.count));
    for (const auto& [i, in] : by_item) {
      for (auto& p : write_merged(in->run, *in, out_dir, config)) written.push_back(std::move(p));
      note(fmt::format("item {}: {} {} -> {}", i, in->run.problem, in->run.shape.describe(), written.back().string()));
    }
    return written;
  }

  std::map<int, const Input*> by_shard;
  for (const Input& in : all)
    if (const auto [it, fresh] = by_shard.emplace(in.shard().index, &in); !fresh)
      throw InputError(fmt::format("{} and {} are both shard {}/{}; pass each shard's results once", it->second->file,
                                   in.file, in.shard().index, s0.count));
  std::vector<std::int64_t> missing;
  for (int k = 0; k < s0.count; ++k)
    if (!by_shard.contains(k)) missing.push_back(k);
  if (!missing.empty())
    throw InputError(fmt::format("incomplete set of shards: shard(s) {} of {} are missing; pass every shard's results",
                                 list_missing(missing), s0.count));
  std::vector<const Input*> shards;
  for (const auto& [k, in] : by_shard) shards.push_back(in);
  const RunRecord merged = merge_variants(shards);
  written = write_merged(merged, *shards.front(), out_dir, config);
  note(fmt::format("{} {}: {} variants from {} shards -> {}", merged.problem, merged.shape.describe(),
                   merged.variants.size(), s0.count, written.front().string()));
  return written;
}

}  // namespace tune
