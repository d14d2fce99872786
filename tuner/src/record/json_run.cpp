// The JSON converters of a run's own record: its context (how and where it ran: compile, search,
// isolation, journal, shard, gate), device, work and summary, around the variants' records
// (json.cpp). Keys keep a stable order (ordered_json); a value that is not a finite number is
// written as null, never as NaN (json_values.hpp).
#include <map>
#include <stdexcept>

#include <fmt/format.h>

#include "record/json_values.hpp"
#include "tune/errors.hpp"
#include "tune/record.hpp"

namespace tune {
namespace {

using json_values::Json;
using json_values::number;
using json_values::optional_number;
using json_values::read_number;
using json_values::read_optional;
using json_values::variant_from;

Json shard_json(const ShardRecord& r) {
  Json j{{"index", r.index}, {"count", r.count}, {"split", to_string(r.split)},
         {"items", r.items}, {"item", r.item},   {"run_key", r.run_key}};
  if (r.split == ShardSplit::kVariants) {
    j["variants"] = r.variants;
    j["baseline_index"] = r.baseline_index;
  }
  return j;
}
ShardRecord shard_from(const Json& j) {
  ShardRecord r;
  r.index = j.at("index").get<int>();
  r.count = j.at("count").get<int>();
  r.split = shard_split_from_string(j.at("split").get<std::string>());
  r.items = j.at("items").get<std::int64_t>();
  r.item = j.at("item").get<std::int64_t>();
  r.run_key = j.at("run_key").get<std::string>();
  r.variants = j.value("variants", std::int64_t{0});
  r.baseline_index = j.value("baseline_index", std::int64_t{-1});
  return r;
}

Json device_json(const DeviceInfo& d) {
  return Json{{"ordinal", d.ordinal},
              {"name", d.name},
              {"slug", d.slug()},
              {"uuid", d.uuid},
              {"compute_capability", fmt::format("{}.{}", d.cc_major, d.cc_minor)},
              {"sm_count", d.sm_count},
              {"max_threads_per_block", d.max_threads_per_block},
              {"max_shared_memory_per_block_optin_bytes", d.max_smem_per_block_optin},
              {"l2_cache_bytes", d.l2_bytes},
              {"memory_bytes", d.memory_bytes},
              {"max_sm_clock_khz", d.sm_clock_khz},
              {"memory_clock_khz", d.memory_clock_khz},
              {"memory_bus_bits", d.memory_bus_bits},
              {"driver_cuda_version", d.driver_version}};
}
DeviceInfo device_from(const Json& j) {
  DeviceInfo d;
  d.ordinal = j.at("ordinal").get<int>();
  d.name = j.at("name").get<std::string>();
  d.uuid = j.at("uuid").get<std::string>();
  const auto cc = j.at("compute_capability").get<std::string>();
  const auto dot = cc.find('.');  // "9.0": validate_result_json checked the digits
  d.cc_major = std::stoi(cc.substr(0, dot));
  d.cc_minor = std::stoi(cc.substr(dot + 1));
  d.sm_count = j.at("sm_count").get<int>();
  d.max_threads_per_block = j.at("max_threads_per_block").get<int>();
  d.max_smem_per_block_optin = j.at("max_shared_memory_per_block_optin_bytes").get<std::int64_t>();
  d.l2_bytes = j.at("l2_cache_bytes").get<std::int64_t>();
  d.memory_bytes = j.at("memory_bytes").get<std::int64_t>();
  d.sm_clock_khz = j.at("max_sm_clock_khz").get<int>();
  d.memory_clock_khz = j.at("memory_clock_khz").get<int>();
  d.memory_bus_bits = j.at("memory_bus_bits").get<int>();
  d.driver_version = j.at("driver_cuda_version").get<std::string>();
  return d;
}

Json seconds_by_name(const std::vector<std::pair<std::string, double>>& list) {
  Json out = Json::object();
  for (const auto& [name, s] : list) out[name] = number(s);
  return out;
}

// context.search, with the warm start and the model where there are; the local search after the warm
// choice or the model is recorded under warm_start when there is one.
Json search_json(const RunContext& c) {
  Json search{{"strategy", to_string(c.search)},
              {"budget", c.budget},
              {"valid_configurations", c.valid_configs},
              {"space_configurations", c.space_configurations},
              {"draws", c.draws},
              {"time_budget_s", c.time_budget_s},
              {"stopped_by_time_budget", c.stopped_by_time_budget},
              {"interrupted", c.interrupted}};
  if (c.candidates > 0) search["candidates"] = c.candidates;  // only where sampled: older records stay byte for byte
  const Json refine = {{"top", c.warm_refine_top}, {"rounds", c.warm_refine_rounds}, {"added", c.warm_refine_added}};
  if (!c.warm_files.empty())
    search["warm_start"] = {{"files", c.warm_files},
                            {"keep", c.warm_keep},
                            {"promising", c.warm_promising},
                            {"explored", c.warm_explored},
                            {"refine", refine}};
  if (!c.model_library.empty()) {
    search["model"] = {{"library", c.model_library},
                       {"initial", c.model_initial},
                       {"rounds", c.model_rounds},
                       {"added", c.model_added},
                       {"stop", c.model_stop}};
    if (c.warm_files.empty()) search["model"]["refine"] = refine;
  }
  return search;
}

Json gate_context_json(const RunContext::Gate& g) {
  return Json{{"mode", g.mode},
              {"sanitizer", g.sanitizer},
              {"sanitizer_version", g.sanitizer_version},
              {"tools", g.tools},
              {"note", g.note},
              {"could_not_run", g.could_not_run},
              {"allow_unchecked", g.allow_unchecked},
              {"inputs", g.inputs},
              {"launches", g.launches},
              {"rounds", g.rounds},
              {"gated", g.gated},
              {"unsafe", g.unsafe},
              {"incorrect", g.incorrect},
              {"unchecked", g.unchecked},
              {"wall_s", number(g.wall_s)},
              {"share_of_run", number(g.share)},
              {"added_s", number(g.added_s)},
              {"added_share_of_run", number(g.added_share)},
              {"cache", g.cache},
              {"fresh", g.fresh},
              {"checks", g.checks},
              {"cache_hits", g.cache_hits},
              {"cache_misses", g.cache_misses},
              {"jobs", g.jobs},
              {"outputs_s", number(g.outputs_s)},
              {"reference_s", number(g.reference_s)},
              {"tool_s", seconds_by_name(g.tool_s)},
              {"finalist_s", seconds_by_name(g.finalist_s)},
              {"parts_s", seconds_by_name(g.parts_s)},
              {"baseline_rule", g.baseline_rule}};
}

Json context_json(const RunContext& c) {
  const auto& iso = c.isolation;
  Json journal{{"file", c.journal}, {"resumed_variants", c.resumed_variants}};
  if (c.run_identity.is_object()) journal["identity"] = c.run_identity;
  Json context{{"tool_version", c.tool_version},
               {"git_commit", c.git_commit},
               {"command_line", c.command_line},
               {"started_at", c.started_at},
               {"finished_at", c.finished_at},
               {"host", c.host},
               {"nvrtc_version", c.nvrtc_version},
               {"cuda_header_version", c.cuda_header_version},
               {"arch", c.arch},
               {"compile_options", c.compile_options},
               {"config_file", c.config_file},
               {"source_hash", c.source_hash},
               {"reference", c.reference},
               {"reference_identity", c.reference_identity},
               {"compile_cache", c.compile_cache},
               {"jobs", c.jobs},
               {"search", search_json(c)},
               {"isolation",
                {{"worker", iso.worker},
                 {"first_variant_timeout_s", number(iso.first_variant_timeout_s)},
                 {"variant_timeout_s", number(iso.variant_timeout_s)},
                 {"timeout_rule", iso.timeout_rule},
                 {"worker_starts", iso.worker_starts},
                 {"test_hooks", iso.test_hooks}}},
               {"journal", journal},
               {"gate", gate_context_json(c.gate)}};
  if (c.shard) context["shard"] = shard_json(*c.shard);
  if (!c.tensors.empty()) {
    context["tensors"] = Json::array();
    for (const auto& t : c.tensors)
      context["tensors"].push_back({{"name", t.name}, {"role", t.role}, {"dtype", t.dtype}, {"shape", t.shape}});
  }
  return context;
}

// context.search of a record.
void search_from(const Json& s, RunContext& context) {
  context.search = search_label_from_string(s.value("strategy", "exhaustive"));
  context.budget = s.value("budget", 0);
  context.valid_configs = s.value("valid_configurations", std::int64_t{0});
  context.space_configurations = s.value("space_configurations", std::uint64_t{0});
  context.draws = s.value("draws", std::uint64_t{0});
  context.candidates = s.value("candidates", std::uint64_t{0});
  context.time_budget_s = s.value("time_budget_s", 0.0);
  context.stopped_by_time_budget = s.value("stopped_by_time_budget", false);
  context.interrupted = s.value("interrupted", false);
  auto read_refine = [&](const Json& parent) {  // warm_start.refine or model.refine
    if (!parent.contains("refine")) return;
    const auto& r = parent.at("refine");
    context.warm_refine_top = r.value("top", 0);
    context.warm_refine_rounds = r.value("rounds", 0);
    context.warm_refine_added = r.value("added", 0);
  };
  if (s.contains("warm_start")) {
    const auto& w = s.at("warm_start");
    context.warm_files = w.value("files", std::vector<std::string>{});
    context.warm_keep = w.value("keep", 0.0);
    context.warm_promising = w.value("promising", 0);
    context.warm_explored = w.value("explored", 0);
    read_refine(w);
  }
  if (s.contains("model")) {
    const auto& m = s.at("model");
    context.model_library = m.value("library", std::string());
    context.model_initial = m.value("initial", 0);
    context.model_rounds = m.value("rounds", 0);
    context.model_added = m.value("added", 0);
    context.model_stop = m.value("stop", std::string());
    read_refine(m);
  }
}

// context.gate of a record.
RunContext::Gate gate_context_from(const Json& g) {
  RunContext::Gate gate;
  gate.mode = g.value("mode", "off");
  gate.sanitizer = g.value("sanitizer", "");
  gate.sanitizer_version = g.value("sanitizer_version", "");
  gate.tools = g.value("tools", std::vector<std::string>{});
  gate.note = g.value("note", "");
  gate.could_not_run = g.value("could_not_run", "");
  gate.allow_unchecked = g.value("allow_unchecked", false);
  gate.unchecked = g.value("unchecked", 0);
  gate.inputs = g.value("inputs", std::vector<std::string>{});
  gate.launches = g.value("launches", 0);
  gate.rounds = g.value("rounds", 0);
  gate.gated = g.value("gated", 0);
  gate.unsafe = g.value("unsafe", 0);
  gate.incorrect = g.value("incorrect", 0);
  gate.wall_s = read_number(g, "wall_s");
  gate.share = read_number(g, "share_of_run");
  // Files before issue 37's overlap with the module: the gate added all of its wall.
  gate.added_s = g.contains("added_s") ? read_number(g, "added_s") : gate.wall_s;
  gate.added_share = g.contains("added_share_of_run") ? read_number(g, "added_share_of_run") : gate.share;
  gate.cache = g.value("cache", "off");
  gate.fresh = g.value("fresh", false);
  gate.checks = g.value("checks", 0);
  gate.cache_hits = g.value("cache_hits", 0);
  gate.cache_misses = g.value("cache_misses", 0);
  gate.jobs = g.value("jobs", 0);
  gate.outputs_s = read_number(g, "outputs_s");
  gate.reference_s = read_number(g, "reference_s");
  for (auto [k, list] : {std::pair{"tool_s", &gate.tool_s}, {"finalist_s", &gate.finalist_s}, {"parts_s", &gate.parts_s}})
    if (g.contains(k) && g.at(k).is_object())
      for (const auto& [name, s] : g.at(k).items()) list->emplace_back(name, s.is_number() ? s.get<double>() : 0);
  gate.baseline_rule = g.value("baseline_rule", "");
  return gate;
}

RunContext context_from(const Json& c) {
  RunContext context;
  context.tool_version = c.at("tool_version").get<std::string>();
  context.git_commit = c.at("git_commit").get<std::string>();
  context.command_line = c.at("command_line").get<std::string>();
  context.started_at = c.at("started_at").get<std::string>();
  context.finished_at = c.value("finished_at", "");
  context.host = c.value("host", "");
  context.nvrtc_version = c.at("nvrtc_version").get<std::string>();
  context.cuda_header_version = c.value("cuda_header_version", "");
  context.arch = c.at("arch").get<std::string>();
  context.compile_options = c.at("compile_options").get<std::vector<std::string>>();
  context.config_file = c.value("config_file", "");
  context.source_hash = c.value("source_hash", "");
  context.reference = c.value("reference", "");
  context.reference_identity = c.value("reference_identity", "");
  context.compile_cache = c.value("compile_cache", "");
  context.jobs = c.value("jobs", 1);
  if (c.contains("tensors"))
    for (const Json& t : c.at("tensors"))
      context.tensors.push_back({t.at("name").get<std::string>(), t.at("role").get<std::string>(),
                                 t.at("dtype").get<std::string>(), t.at("shape").get<std::vector<std::int64_t>>()});
  if (c.contains("search")) search_from(c.at("search"), context);
  if (c.contains("isolation")) {
    const auto& i = c.at("isolation");
    auto& iso = context.isolation;
    iso.worker = i.value("worker", "");
    iso.first_variant_timeout_s = read_number(i, "first_variant_timeout_s");
    iso.variant_timeout_s = read_number(i, "variant_timeout_s");
    iso.timeout_rule = i.value("timeout_rule", "");
    iso.worker_starts = i.value("worker_starts", 0);
    iso.test_hooks = i.value("test_hooks", std::vector<std::string>{});
  }
  if (c.contains("journal")) {
    context.journal = c.at("journal").value("file", "");
    context.resumed_variants = c.at("journal").value("resumed_variants", 0);
    if (c.at("journal").contains("identity")) context.run_identity = c.at("journal").at("identity");
  }
  if (c.contains("shard") && !c.at("shard").is_null()) context.shard = shard_from(c.at("shard"));
  if (c.contains("gate") && c.at("gate").is_object()) context.gate = gate_context_from(c.at("gate"));
  return context;
}

}  // namespace

Json to_json(const RunRecord& run) {
  const Json shape = shape_to_json(run.shape);
  Json variants = Json::array();
  for (const auto& v : run.variants) variants.push_back(to_json(v));
  std::map<std::string, int> counts;
  for (const auto& v : run.variants) ++counts[to_string(v.status)];
  const Json context = context_json(run.context);
  return Json{{"schema_version", run.schema_version},
              {"schema_minor_version", run.schema_minor_version},
              {"kind", "tune.result"},
              {"problem", run.problem},
              {"shape", shape},
              {"seed", run.seed},
              {"timed", run.timed},
              {"untimed_reason", run.untimed_reason},
              {"complete", run.complete},
              {"context", context},
              {"device", run.device ? device_json(*run.device) : Json(nullptr)},
              {"work", {{"flop_per_call", run.flop}, {"bytes_per_call", run.bytes}}},
              {"harness_floor", run.harness_floor ? to_json(*run.harness_floor) : Json(nullptr)},
              {"wall_seconds",
               {{"compile", number(run.wall.compile_wall_s)},
                {"measure", number(run.wall.measure_wall_s)},
                {"total", number(run.wall.total_wall_s)}}},
              {"summary",
               {{"variants", run.variants.size()},
                {"by_status", counts},
                {"winner", run.winner ? Json(*run.winner) : Json(nullptr)},
                {"winner_rule", run.winner_rule},
                {"baseline", run.baseline ? Json(*run.baseline) : Json(nullptr)},
                {"speedup_over_baseline", optional_number(run.speedup)}}},
              {"torch", run.torch ? to_json(*run.torch) : Json(nullptr)},
              {"variants", variants}};
}

RunRecord run_from_json(const Json& j) {
  validate_result_json(j);  // what follows reads fields of the types and ranges checked there
  try {
    RunRecord run;
    run.schema_version = kResultSchemaVersion;
    run.schema_minor_version = j.value("schema_minor_version", 0);
    run.problem = j.at("problem").get<std::string>();
    run.shape = shape_from_json(j.at("shape"));
    run.seed = j.at("seed").get<std::uint64_t>();
    run.timed = j.at("timed").get<bool>();
    run.untimed_reason = j.value("untimed_reason", "");
    run.complete = j.value("complete", false);
    run.context = context_from(j.at("context"));
    if (!j.at("device").is_null()) run.device = device_from(j.at("device"));
    run.flop = j.at("work").at("flop_per_call").get<double>();
    run.bytes = j.at("work").at("bytes_per_call").get<double>();
    if (j.contains("harness_floor") && !j.at("harness_floor").is_null())
      run.harness_floor = harness_floor_from_json(j.at("harness_floor"));
    if (j.contains("wall_seconds")) {
      run.wall.compile_wall_s = read_number(j.at("wall_seconds"), "compile");
      run.wall.measure_wall_s = read_number(j.at("wall_seconds"), "measure");
      run.wall.total_wall_s = read_number(j.at("wall_seconds"), "total");
    }
    const Json& s = j.at("summary");
    run.winner = read_optional<std::string>(s, "winner");
    run.winner_rule = s.value("winner_rule", "");
    run.baseline = read_optional<std::string>(s, "baseline");
    run.speedup = read_optional<double>(s, "speedup_over_baseline");
    if (j.contains("torch") && !j.at("torch").is_null()) run.torch = torch_from_json(j.at("torch"));
    for (const Json& v : j.at("variants")) run.variants.push_back(variant_from(v));
    return run;
  } catch (const Json::exception& e) {
    throw InputError(std::string("malformed result: ") + e.what());
  } catch (const std::invalid_argument& e) {
    throw InputError(std::string("malformed result: ") + e.what());
  }
}

}  // namespace tune
