// The single-result header: the winning configuration as constexpr values, with provenance; it includes nothing.
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "ship/header_parts.hpp"
#include "ship/header_text.hpp"
#include "tune/dtype.hpp"
#include "tune/errors.hpp"
#include "tune/io.hpp"
#include "tune/problem_space.hpp"
#include "tune/torch_compare.hpp"
#include "tune/winner.hpp"

namespace tune {
namespace header_parts {

using header_text::comment_safe;

std::string timing_summary(const TimingRecord& t) {
  return fmt::format("cold median {:.3f} us (noise {:.2f} %, {} samples, {})", t.median_us, t.noise * 100, t.samples,
                     comment_safe(t.stop_reason));
}

std::string provenance(const RunRecord& run, const std::string& prefix) {
  std::string h;
  h += fmt::format("{}tune {} (commit {}), finished {}; NVRTC {}, options: {}\n", prefix,
                   comment_safe(run.context.tool_version), comment_safe(run.context.git_commit),
                   comment_safe(run.context.finished_at), comment_safe(run.context.nvrtc_version),
                   comment_safe(fmt::format("{}", fmt::join(run.context.compile_options, " "))));
  h += fmt::format("{}command: {}\n", prefix, comment_safe(run.context.command_line));
  return h;
}

void check_whole_shape(const RunRecord& run, const std::string& file) {
  if (run.context.shard && run.context.shard->split == ShardSplit::kVariants)
    throw InputError(
        fmt::format("{}: one shard of a shape's variants (tune --shard); combine the shards with tune merge "
                    "and pass its output",
                    file));
}

void check_record(const RunRecord& run, const std::string& file) {
  try {
    validate_result_json(to_json(run));
  } catch (const InputError& e) {
    throw InputError(file.empty() ? std::string(e.what()) : file + ": " + e.what());
  }
}

void check_recorded_shape(const RunRecord& run, const VariantRecord& v, const Config& config, const Space& space,
                          const Problem& problem, const std::string& file) {
  try {
    problem.check_shape(run.shape);
    space.check_shape(run.shape);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}; the record does not fit {} as it stands (restore what tune wrote, or re-tune)",
                                 file, e.what(), space.source_name()));
  }
  if (const std::string why = space.violated_constraint(config, run.shape, run.limits()); !why.empty())
    throw InputError(
        fmt::format("{}: variant {} at {}: {}; the record does not fit {} as it stands (restore what tune "
                    "wrote, or re-tune)",
                    file, v.name, run.shape.tag(), why, space.source_name()));
}

}  // namespace header_parts

namespace {

using header_parts::timing_summary;
using header_text::c_string;
using header_text::comment_safe;
using header_text::constant_name;
using header_text::identifier;
using header_text::in_problem_namespace;

// The constant of each dimension and dtype variable (key "shape:" + name) and parameter ("param:" +
// name). The usual spelling (tile_m: kTileM, dimension N: kShapeN) drops underscores and case, so two
// names may meet (tile_m and tileM, a parameter sm_count and kSmCount): every name of such a group
// keeps its own spelling instead, kShape_n_rows for a dimension or dtype variable and k_tile_m for a
// parameter, which no other constant of the header can have (names are unique identifiers).
std::map<std::string, std::string> constant_names(const RunRecord& run, const Space& space) {
  struct Wanted {
    std::string key, usual, own;
  };
  std::vector<Wanted> wanted;
  const auto shape_constant = [&](const std::string& name) {
    wanted.push_back({"shape:" + name, constant_name("shape_" + name), "kShape_" + name});
  };
  for (const auto& d : run.shape.dims()) shape_constant(d.first);
  for (const auto& d : run.shape.dtypes()) shape_constant(d.first);
  for (const auto& p : space.parameters()) wanted.push_back({"param:" + p.name, constant_name(p.name), "k_" + p.name});
  std::map<std::string, int> uses = {{"kDeviceName", 1}, {"kComputeCapability", 1}, {"kSmCount", 1},
                                     {"kSynthetic", 1},  {"kKernels", 1},           {"kMedianMicroseconds", 1}};
  for (const auto& w : wanted) ++uses[w.usual];
  std::map<std::string, std::string> out;
  for (const auto& w : wanted) out[w.key] = uses[w.usual] == 1 ? w.usual : w.own;
  return out;
}

}  // namespace

std::string generate_header(const RunRecord& run, const Space& space) {
  if (!run.timed || !run.winner || !run.device) throw InputError("a header needs a timed result with a winner");
  header_parts::check_record(run, "");
  const VariantRecord* w = run.find(*run.winner);
  const VariantRecord* b = run.baseline ? run.find(*run.baseline) : nullptr;
  const Config config = space.from_json(w->params);
  // The instantiations come from the configuration, never from the file's text; lowered with the
  // limits of the device it was tuned on, as the tune lowered it.
  const Lowered lowered = space.lower(config, run.shape, run.limits());
  const auto constants = constant_names(run, space);
  std::string h;
  h += fmt::format("// Generated by tune {} (commit {}). Do not edit: re-run tune to regenerate.\n",
                   comment_safe(run.context.tool_version), comment_safe(run.context.git_commit));
  h += fmt::format("// Problem {}, shape {}, tuned on {} ({}, {}) at {}.\n", comment_safe(run.problem), run.shape.describe(),
                   comment_safe(run.device->name), comment_safe(run.context.arch), comment_safe(run.device->uuid),
                   comment_safe(run.context.finished_at));
  std::string not_measured;
  const bool synthetic = !measured_on_gpu(run, &not_measured);
  if (synthetic) h += fmt::format("// SYNTHETIC: {}. Do not ship it.\n", not_measured);
  h += fmt::format("// Winner: {}\n", comment_safe(w->name));
  h += fmt::format("//   {}, batch mean {:.3f} us per call\n", timing_summary(*w->timing), w->timing->batch_mean_us);
  if (b && has_usable_timing(*b) && run.speedup && std::isfinite(*run.speedup))
    h += fmt::format("//   baseline {} cold median {:.3f} us: speedup {:.2f}x\n", comment_safe(b->name),
                     b->timing->median_us, *run.speedup);
  if (const std::string torch = torch_comparison(run); !torch.empty())  // issue 36: graph against graph
    h += fmt::format("//   against PyTorch: {}\n", comment_safe(torch));
  h += fmt::format("// Winner rule: {}\n", comment_safe(run.winner_rule));
  h += fmt::format("// Command: {}\n", comment_safe(run.context.command_line));
  h += fmt::format("// NVRTC {}, options: {}\n", comment_safe(run.context.nvrtc_version),
                   comment_safe(fmt::format("{}", fmt::join(run.context.compile_options, " "))));
  h += "#pragma once\n\n";
  std::string body = "// The shape this configuration was tuned for.\n";
  for (const auto& [k, v] : run.shape.dims())
    body += fmt::format("inline constexpr long long {} = {};\n", constants.at("shape:" + k), v);
  // Its dtype variables (issue 35), by PyTorch's name and as the type the kernel template received.
  for (const auto& [k, t] : run.shape.dtypes())
    body += fmt::format("inline constexpr const char {}[] = \"{}\";  // {}\n", constants.at("shape:" + k), dtype_name(t),
                        dtype_cuda_type(t));
  body += fmt::format("\n// The device it was tuned on.\ninline constexpr const char kDeviceName[] = {};\n",
                      c_string(run.device->name));
  body += fmt::format("inline constexpr int kComputeCapability = {};\ninline constexpr int kSmCount = {};\n",
                      run.device->compute_capability(), run.device->sm_count);
  body += fmt::format(
      "// Whether the timings are made up (a fake GPU): nothing was measured.\ninline constexpr bool kSynthetic = {};\n\n",
      synthetic ? "true" : "false");
  body += "// The winning parameters, as the kernel template takes them (strings: index in the space's list).\n";
  for (const auto& p : space.parameters()) {
    const auto& value = w->params.at(p.name);
    const auto numeric = space.numeric(config, p.name);
    body += fmt::format("inline constexpr int {} = {};{}\n", constants.at("param:" + p.name), numeric,
                        value.is_string() ? fmt::format("  // \"{}\"", value.get<std::string>()) : "");
  }
  body += "\n// Kernel instantiations (NVRTC name expressions) in launch order.\n";
  body += "inline constexpr const char* kKernels[] = {\n";
  for (const auto& l : lowered.launches) body += fmt::format("    {},\n", c_string(l.name_expression));
  body += "};\n";
  body += fmt::format(
      "\n// Measured cold median of this configuration, microseconds.\ninline constexpr double kMedianMicroseconds = {:.4f};\n",
      w->timing->median_us);
  h += in_problem_namespace(run.problem, "RESULT", body);
  return h;
}

bool measured_on_gpu(const RunRecord& run, std::string* why) {
  std::string reason;
  if (!run.timed)
    reason = "a compile-only run: nothing was timed";
  else if (run.context.isolation.worker.rfind("fake", 0) == 0)
    reason = "synthetic results of a fake GPU (TUNE_WORKER_FAKE): nothing was measured";
  else if (run.context.isolation.worker != "process")
    reason = "the file does not record how it was measured (no context.isolation.worker \"process\")";
  if (why) *why = reason;
  return reason.empty();
}

}  // namespace tune
