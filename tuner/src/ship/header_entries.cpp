// A merged header's entries: each result's winner and baseline lowered again and checked against
// what was recorded, in table order, and the portable configuration across them.
#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "ship/header_parts.hpp"
#include "tune/errors.hpp"
#include "tune/problem_space.hpp"
#include "tune/winner.hpp"

namespace tune::header_parts {
namespace {

// The recorded parameters; a parameter the space gained after the run takes its declared `absent`
// value (what the space says an older record ran), else the baseline's (the template's default is
// the baseline's, so the measured kernel is the one named), listed in *assumed. Throws InputError
// for a parameter or value the space does not have (Space::from_record).
Config recorded_config(const VariantRecord& v, const Space& space, const std::string& file,
                       std::vector<std::string>* assumed) {
  nlohmann::ordered_json params = v.params;
  const nlohmann::ordered_json base = space.to_json(space.baseline());
  for (const auto& p : space.parameters())
    if (!params.contains(p.name) && !p.absent) {
      params[p.name] = base.at(p.name);
      if (assumed) assumed->push_back(p.name);
    }
  return space.from_record(params, file, v.name);
}

// The header ships an entry's recorded launches for its device and geometry() computes them for any
// other: one lowering. A record lowered for other limits than its device's is refused.
void check_recorded_geometry(const RunRecord& run, const VariantRecord& v, const Lowered& lowered, const Space& space,
                             const std::string& file) {
  for (std::size_t l = 0; l < v.launches.size(); ++l) {
    const auto& rec = v.launches[l];
    const KernelLaunch& k = lowered.launches[l];
    const auto dim3 = [](const std::array<unsigned, 3>& d) { return nlohmann::ordered_json(d); };
    if (rec.value("grid", nlohmann::ordered_json()) == dim3(k.grid) &&
        rec.value("block", nlohmann::ordered_json()) == dim3(k.block) &&
        rec.value("dynamic_smem_bytes", 0u) == k.dynamic_smem)
      continue;
    const DeviceLimits d = run.limits();
    throw InputError(
        fmt::format("{}: variant {} launch {} recorded grid {} block {} and {} bytes of shared memory, but {} "
                    "lowers it on {} ({} SMs, {} bytes of shared memory per block) to grid {} block {} and "
                    "{} bytes; re-tune with this tune",
                    file, v.name, l, rec.value("grid", nlohmann::ordered_json()).dump(),
                    rec.value("block", nlohmann::ordered_json()).dump(), rec.value("dynamic_smem_bytes", 0u),
                    space.source_name(), run.device ? run.device->name : run.context.arch, d.sm_count, d.max_smem_per_block,
                    dim3(k.grid).dump(), dim3(k.block).dump(), k.dynamic_smem));
  }
}

MergedVariant merged_variant(const RunRecord& run, const VariantRecord& v, const Space& space, const Problem& problem,
                             const std::string& file) {
  MergedVariant m;
  m.record = &v;
  m.lowered = lower_recorded(run, v, space, problem, file, &m.config, &m.assumed);
  for (const auto& t : problem.param_specs(run.shape)) m.buffers.push_back(t);
  for (const auto& t : problem.input_specs(run.shape)) m.buffers.push_back(t);
  TensorSpec out = problem.output_spec(run.shape);
  m.output_name = out.name;
  out.name = "out";
  m.buffers.push_back(out);
  for (const auto& t : m.lowered.scratch) m.buffers.push_back(t);
  return m;
}

// "3 compile_failed, 1 incorrect": how many variants of the run ended in each status.
std::string status_counts(const RunRecord& run) {
  std::map<std::string, int> by_status;
  for (const auto& v : run.variants) ++by_status[to_string(v.status)];
  std::vector<std::string> counts;
  for (const auto& [status, n] : by_status) counts.push_back(fmt::format("{} {}", n, status));
  return counts.empty() ? "no variants" : fmt::format("{}", fmt::join(counts, ", "));
}

}  // namespace

Lowered lower_recorded(const RunRecord& run, const VariantRecord& v, const Space& space, const Problem& problem,
                       const std::string& file, Config* config, std::vector<std::string>* assumed) {
  const Config c = recorded_config(v, space, file, assumed);
  if (config) *config = c;
  check_recorded_shape(run, v, c, space, problem, file);
  Lowered lowered = space.lower(c, run.shape, run.limits());
  if (lowered.launches.size() != v.launches.size())
    throw InputError(fmt::format("{}: variant {} recorded {} launches but {} lowers it to {}; re-tune with this tune", file,
                                 v.name, v.launches.size(), space.source_name(), lowered.launches.size()));
  for (std::size_t l = 0; l < v.launches.size(); ++l)
    if (v.launches[l].value("kernel", "").rfind(lowered.launches[l].kernel + "<", 0) != 0)
      throw InputError(fmt::format("{}: variant {} launch {} ran {}, but {} lowers it to {}; re-tune with this tune", file,
                                   v.name, l, v.launches[l].value("kernel", "?"), space.source_name(),
                                   lowered.launches[l].kernel));
  check_recorded_geometry(run, v, lowered, space, file);
  return lowered;
}

// The results as table entries, validated, in table order: arch, device name, shape.
std::vector<MergedEntry> merged_entries(const std::vector<NamedResult>& results, const Space& space, const Problem& problem,
                                        bool allow_synthetic) {
  std::vector<MergedEntry> entries;
  for (const auto& r : results) {
    const RunRecord& run = r.run;
    // An interrupted run names the best it had timed, not a winner: the strict re-measure and the
    // gate may not have run (the run itself writes no header from it).
    if (run.context.interrupted)
      throw InputError(
          fmt::format("{}: the run was interrupted (context.search.interrupted), so its best variant was not gated; "
                      "finish it with the same tune command and --resume, then ship that",
                      r.file));
    if (!run.timed || !run.device)
      throw InputError(fmt::format("{}: no winner: a compile-only run, nothing was timed; tune it on a GPU first", r.file));
    if (!run.winner)
      throw InputError(
          fmt::format("{}: no winner: no variant passed ({}); each variant's status and reason in the "
                      "file say why: fix the kernels or the space, and re-tune",
                      r.file, status_counts(run)));
    check_record(run, r.file);
    std::string why;
    const bool synthetic = !measured_on_gpu(run, &why);
    if (synthetic && !allow_synthetic)
      throw InputError(
          fmt::format("{}: {}; pass --allow-synthetic to merge it anyway (it is marked synthetic, and select() "
                      "takes it only for the device it names)",
                      r.file, why));
    const VariantRecord* w = run.find(*run.winner);
    const VariantRecord* b = run.baseline ? run.find(*run.baseline) : nullptr;
    if (!b || !b->timing) {
      // A baseline the shape rules out was never timed (the run said so): the winner stands in for it.
      const std::string invalid = space.violated_constraint(space.baseline(), run.shape, run.limits());
      if (invalid.empty())
        throw InputError(fmt::format("{}: the baseline was not timed; re-tune to compare against it", r.file));
      MergedVariant winner = merged_variant(run, *w, space, problem, r.file);
      entries.push_back({&run, winner, winner, synthetic, invalid});
      continue;
    }
    if (!std::isfinite(b->timing->median_us) || b->timing->median_us <= 0)
      throw InputError(
          fmt::format("{}: the baseline {} has no usable cold median (not a positive number); re-tune", r.file, b->name));
    entries.push_back(
        {&run, merged_variant(run, *w, space, problem, r.file), merged_variant(run, *b, space, problem, r.file), synthetic});
  }
  // The same inputs in any order give the same bytes.
  const auto key = [](const MergedEntry& e) {
    std::vector<std::int64_t> dims;
    for (const auto& d : e.run->shape.dims()) dims.push_back(d.second);
    for (const auto& d : e.run->shape.dtypes()) dims.push_back(static_cast<std::int64_t>(d.second));  // entries by dtype too
    // Cards of one name with other limits (SM count, shared memory) are other devices to select().
    return std::make_tuple(e.run->device->compute_capability(), e.run->device->name, e.run->device->sm_count,
                           e.run->device->max_smem_per_block_optin, dims);
  };
  std::sort(entries.begin(), entries.end(), [&](const MergedEntry& a, const MergedEntry& b) { return key(a) < key(b); });
  for (std::size_t i = 1; i < entries.size(); ++i)
    if (key(entries[i - 1]) == key(entries[i]))
      throw InputError(fmt::format("two results for {} {}; pass one file per device and shape", entries[i].run->device->name,
                                   entries[i].run->shape.describe()));
  return entries;
}

bool typed(const std::vector<MergedEntry>& entries) {
  for (const auto& e : entries) {
    if (!e.run->shape.dtypes().empty()) return true;
    for (const MergedVariant* m : {&e.winner, &e.baseline})
      for (const auto& b : m->buffers)
        if (b.dtype != DType::kFloat32) return true;
  }
  return false;
}

Portable portable_config(const std::vector<MergedEntry>& entries, const Space& space) {
  std::vector<std::map<std::string, double>> times;
  std::vector<double> best;
  const MergedEntry* first = nullptr;
  for (const auto& e : entries) {
    if (e.synthetic) continue;
    if (!first) first = &e;
    std::map<std::string, double> t;
    for (const auto& v : e.run->variants)
      if (has_usable_timing(v)) t[v.name] = v.timing->median_us;
    times.push_back(std::move(t));
    best.push_back(e.winner.record->timing->median_us);
  }
  Portable out;
  out.over = times.size();
  if (!first) return out;
  double best_worst = 0, best_mean = 0;
  for (const auto& [name, unused] : times.front()) {
    double worst = 0, mean = 0;
    bool everywhere = true;
    for (std::size_t i = 0; i < times.size() && everywhere; ++i) {
      auto it = times[i].find(name);
      everywhere = it != times[i].end();
      if (!everywhere) break;
      worst = std::max(worst, it->second / best[i]);
      mean += it->second / best[i] / static_cast<double>(times.size());
    }
    if (!everywhere || (out.config && std::tie(worst, mean) >= std::tie(best_worst, best_mean))) continue;
    const VariantRecord* v = first->run->find(name);
    try {
      out.config = recorded_config(*v, space, "", nullptr);
    } catch (const InputError&) {
      continue;  // recorded by an older space: not a configuration of this one
    }
    out.name = name;
    best_worst = worst;
    best_mean = mean;
    out.worst_loss = worst;
  }
  return out;
}

std::string changed_sources_note(const RunRecord& run, const std::string& file, const std::string& sources_now) {
  const std::string& tuned = run.context.source_hash;
  if (tuned.empty() || tuned == sources_now) return {};
  return fmt::format(
      "note: {} was tuned on other kernel sources (context.source_hash {}, now {}: the space, templates or problem "
      "file changed since); its winner was timed and gated on those: re-tune to ship today's",
      file, tuned, sources_now);
}

// Every entry binds the same dtype variables, which the header's Shape holds (a record older than
// a variable reads with its default: read_problem_result).
void check_dtype_variables(const std::vector<NamedResult>& out) {
  const auto names = [](const Shape& s) {
    std::vector<std::string> v;
    for (const auto& d : s.dtypes()) v.push_back(d.first);
    return v;
  };
  for (const auto& r : out)
    if (names(r.run.shape) != names(out.front().run.shape))
      throw InputError(
          fmt::format("{} has dtype variables [{}] but {} has [{}]; merge results of one problem definition "
                      "(re-tune the older one, or give the variable a default in problem.json)",
                      r.file, fmt::join(names(r.run.shape), ", "), out.front().file,
                      fmt::join(names(out.front().run.shape), ", ")));
}

}  // namespace tune::header_parts
