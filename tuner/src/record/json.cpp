// The JSON converters of the results' records below a run: a variant's (parity, timing, gate,
// fault, resources), the shape, the torch record and the harness floor; json_run.cpp holds the run's
// own (its context, device and summary). Keys keep a stable order (ordered_json); a value that is not
// a finite number is written as null, never as NaN (json_values.hpp).
#include <cmath>
#include <cstdint>
#include <limits>

#include <fmt/format.h>

#include "core/enum_names.hpp"
#include "record/json_values.hpp"
#include "tune/errors.hpp"
#include "tune/record.hpp"

namespace tune {

using Json = nlohmann::ordered_json;

namespace {

using json_values::number;
using json_values::optional_number;
using json_values::read_number;
using json_values::read_optional;
using json_values::variant_from;

constexpr EnumName<Status> kStatusNames[] = {{Status::kPending, "pending"},
                                             {Status::kCompiled, "compiled"},
                                             {Status::kPassed, "passed"},
                                             {Status::kIncorrect, "incorrect"},
                                             {Status::kCompileFailed, "compile_failed"},
                                             {Status::kLaunchFailed, "launch_failed"},
                                             {Status::kCrashed, "crashed"},
                                             {Status::kTimeout, "timeout"},
                                             {Status::kSkipped, "skipped"},
                                             {Status::kUnsafe, "unsafe"}};

Json resources_json(const Resources& r) {
  return Json{{"registers", r.registers},
              {"spill_store_bytes", r.spill_store_bytes},
              {"spill_load_bytes", r.spill_load_bytes},
              {"stack_frame_bytes", r.stack_frame_bytes},
              {"static_smem_bytes", r.static_smem_bytes},
              {"barriers", r.barriers},
              {"source", r.source}};
}
Resources resources_from(const Json& j) {
  Resources r;
  r.registers = j.at("registers").get<int>();
  r.spill_store_bytes = j.at("spill_store_bytes").get<int>();
  r.spill_load_bytes = j.at("spill_load_bytes").get<int>();
  r.stack_frame_bytes = j.at("stack_frame_bytes").get<int>();
  r.static_smem_bytes = j.at("static_smem_bytes").get<int>();
  r.barriers = j.value("barriers", 0);
  r.source = j.value("source", "ptxas");
  return r;
}

// A field written as a JSON integer within int64 (an integer output's worst element), exactly;
// nullopt for a float (a float output's, or an older record's), null or absent.
std::optional<std::int64_t> exact_integer(const Json& j, const char* key) {
  if (!j.contains(key)) return std::nullopt;
  const Json& v = j.at(key);
  if (!v.is_number_integer() ||
      (v.is_number_unsigned() && v.get<std::uint64_t>() > std::uint64_t(std::numeric_limits<std::int64_t>::max())))
    return std::nullopt;
  return v.get<std::int64_t>();
}

Json parity_json(const ParityRecord& p) {
  return Json{{"atol", p.atol},
              {"rtol", p.rtol},
              {"seed", p.seed},
              {"elements", p.elements},
              {"mismatches", p.mismatches},
              {"non_finite", p.non_finite},
              {"max_abs_error", number(p.max_abs_error)},
              {"max_rel_error", number(p.max_rel_error)},
              {"worst_index", p.worst_index},
              // An integer output's worst element as JSON integers: exact (an int64's doubles past 2^53 are not).
              {"worst_value", p.worst_value_exact ? Json(*p.worst_value_exact) : optional_number(p.worst_value)},
              {"worst_reference", p.worst_reference_exact ? Json(*p.worst_reference_exact) : number(p.worst_reference)},
              {"output_hash", p.output_hash},
              {"dtype", p.dtype},
              {"rule", p.rule},
              {"tolerance_passed", p.tolerance_passed},
              {"module_max_abs_error", optional_number(p.module_max_abs_error)},
              {"module_k", p.module_k},
              {"module_atol", p.module_atol},
              {"module_passed", p.module_passed ? Json(*p.module_passed) : Json(nullptr)}};
}
ParityRecord parity_from(const Json& j) {
  ParityRecord p;
  p.atol = j.at("atol").get<double>();
  p.rtol = j.at("rtol").get<double>();
  p.seed = j.at("seed").get<std::uint64_t>();
  p.elements = j.at("elements").get<std::int64_t>();
  p.mismatches = j.at("mismatches").get<std::int64_t>();
  p.non_finite = j.at("non_finite").get<std::int64_t>();
  p.max_abs_error = read_number(j, "max_abs_error");
  p.max_rel_error = read_number(j, "max_rel_error");
  p.worst_index = j.at("worst_index").get<std::int64_t>();
  p.worst_value = read_optional<double>(j, "worst_value");
  p.worst_reference = read_number(j, "worst_reference");
  p.output_hash = j.value("output_hash", "");
  // Before minor 6: a float32 output judged by the elementwise rule alone.
  p.dtype = j.value("dtype", "float32");
  if (const auto t = parse_dtype(p.dtype); t && !is_floating(*t)) {
    p.worst_value_exact = exact_integer(j, "worst_value");
    p.worst_reference_exact = exact_integer(j, "worst_reference");
  }
  p.rule = j.value("rule", "both");
  p.tolerance_passed = j.value("tolerance_passed", p.mismatches == 0 && p.elements > 0);
  p.module_max_abs_error = read_optional<double>(j, "module_max_abs_error");
  p.module_k = j.value("module_k", 2.0);
  p.module_atol = j.value("module_atol", p.atol);
  p.module_passed = read_optional<bool>(j, "module_passed");
  return p;
}

Json gate_json(const GateRecord& g) {
  Json findings = Json::array();
  for (const auto& f : g.findings) findings.push_back({{"tool", f.tool}, {"kind", f.kind}, {"report", f.report}});
  Json inputs = Json::array();
  for (const auto& i : g.inputs) inputs.push_back({{"name", i.name}, {"parity", parity_json(i.parity)}});
  Json out{{"verdict", to_string(g.verdict)},
           {"reason", g.reason},
           {"tools", g.tools},
           {"findings", findings},
           {"findings_left_out", g.findings_left_out},
           {"inputs", inputs},
           {"launches", g.launches},
           {"deterministic", g.deterministic},
           {"determinism", g.determinism},
           {"seconds", number(g.seconds)}};
  if (!g.not_run.empty()) out["not_run"] = g.not_run;
  if (!g.cached.empty()) out["cached"] = g.cached;
  return out;
}
GateRecord gate_from(const Json& j) {
  GateRecord g;
  g.verdict = gate_verdict_from_string(j.at("verdict").get<std::string>());
  g.reason = j.value("reason", "");
  g.tools = j.value("tools", std::vector<std::string>{});
  g.not_run = j.value("not_run", std::vector<std::string>{});
  for (const auto& f : j.value("findings", Json::array()))
    g.findings.push_back(
        {f.at("tool").get<std::string>(), f.value("kind", ""), f.value("report", std::vector<std::string>{})});
  for (const auto& i : j.value("inputs", Json::array()))
    g.inputs.push_back({i.at("name").get<std::string>(), parity_from(i.at("parity"))});
  g.findings_left_out = j.value("findings_left_out", 0);
  g.launches = j.value("launches", 0);
  g.deterministic = j.value("deterministic", true);
  g.determinism = j.value("determinism", "");
  g.seconds = read_number(j, "seconds");
  g.cached = j.value("cached", std::vector<std::string>{});
  return g;
}

Json timing_json(const TimingRecord& t) {
  return Json{{"profile", t.profile},
              {"unit", "microseconds"},
              {"samples", t.samples},
              {"min_us", number(t.min_us)},
              {"q1_us", number(t.q1_us)},
              {"median_us", number(t.median_us)},
              {"mean_us", number(t.mean_us)},
              {"q3_us", number(t.q3_us)},
              {"max_us", number(t.max_us)},
              {"stddev_us", number(t.stddev_us)},
              {"noise", number(t.noise)},
              {"robust_noise", number(t.robust_noise)},
              {"stop_reason", t.stop_reason},
              {"gpu_seconds", number(t.gpu_seconds)},
              {"batch_mean_us", number(t.batch_mean_us)},
              {"batch_launches", t.batch_launches},
              {"graph_mean_us", number(t.graph_mean_us)},
              {"clocks",
               {{"available", t.clocks.available},
                {"sm_mhz_start", t.clocks.sm_mhz_start},
                {"sm_mhz_end", t.clocks.sm_mhz_end},
                {"reasons", t.clocks.reasons},
                {"throttled", t.clocks.throttled}}},
              {"throttle_retries", t.throttle_retries},
              {"method_ms",
               {{"warmup", number(t.warmup_ms)},
                {"cold", number(t.cold_ms)},
                {"batch", number(t.batch_ms)},
                {"graph", number(t.graph_ms)},
                {"clocks", number(t.clocks_ms)}}}};
}
TimingRecord timing_from(const Json& j) {
  TimingRecord t;
  t.profile = j.at("profile").get<std::string>();
  t.samples = j.at("samples").get<int>();
  t.min_us = read_number(j, "min_us");
  t.q1_us = read_number(j, "q1_us");
  t.median_us = read_number(j, "median_us");
  t.mean_us = read_number(j, "mean_us");
  t.q3_us = read_number(j, "q3_us");
  t.max_us = read_number(j, "max_us");
  t.stddev_us = read_number(j, "stddev_us");
  t.noise = read_number(j, "noise");
  t.robust_noise = j.contains("robust_noise") ? read_number(j, "robust_noise") : t.noise;
  t.stop_reason = j.at("stop_reason").get<std::string>();
  t.gpu_seconds = read_number(j, "gpu_seconds");
  t.batch_mean_us = read_number(j, "batch_mean_us");
  t.batch_launches = j.value("batch_launches", 0);
  t.graph_mean_us = read_number(j, "graph_mean_us");
  t.throttle_retries = j.value("throttle_retries", 0);
  if (j.contains("method_ms") && j.at("method_ms").is_object()) {
    const Json& m = j.at("method_ms");
    t.warmup_ms = read_number(m, "warmup");
    t.cold_ms = read_number(m, "cold");
    t.batch_ms = read_number(m, "batch");
    t.graph_ms = read_number(m, "graph");
    t.clocks_ms = read_number(m, "clocks");
  }
  if (j.contains("clocks")) {
    const Json& c = j.at("clocks");
    t.clocks.available = c.value("available", false);
    t.clocks.sm_mhz_start = c.value("sm_mhz_start", 0);
    t.clocks.sm_mhz_end = c.value("sm_mhz_end", 0);
    t.clocks.reasons = c.value("reasons", std::vector<std::string>{});
    t.clocks.throttled = c.value("throttled", false);
  }
  return t;
}

Json fault_json(const FaultRecord& f) {
  return Json{{"kind", to_string(f.kind)}, {"signal", f.signal},       {"cuda_error", f.cuda_error},
              {"phase", f.phase},          {"exit_code", f.exit_code}, {"deadline_s", number(f.deadline_s)},
              {"message", f.message}};
}
FaultRecord fault_from(const Json& j) {
  FaultRecord f;
  f.kind = fault_kind_from_string(j.at("kind").get<std::string>());
  f.signal = j.value("signal", "");
  f.cuda_error = j.value("cuda_error", "");
  f.phase = j.value("phase", "");
  f.exit_code = j.value("exit_code", 0);
  f.deadline_s = read_number(j, "deadline_s");
  f.message = j.value("message", "");
  return f;
}

Json variant_json(const VariantRecord& v) {
  Json res = Json::object();
  for (const auto& [k, r] : v.resources) res[k] = resources_json(r);
  return Json{{"name", v.name},
              {"params", v.params},
              {"baseline", v.baseline},
              {"status", to_string(v.status)},
              {"reason", v.reason},
              {"compile_seconds", number(v.compile_seconds)},
              {"compile_cached", v.compile_cached},
              {"load_seconds", number(v.load_seconds)},
              {"first_launch_ms", number(v.first_launch_ms)},
              {"evaluate_ms", number(v.evaluate_ms)},
              {"parity_ms", number(v.parity_ms)},
              {"unload_ms", number(v.unload_ms)},
              {"launches", v.launches},
              {"max_registers", v.max_registers()},
              {"spill_bytes", v.spill_bytes()},
              {"resources", res},
              {"parity", v.parity ? parity_json(*v.parity) : Json(nullptr)},
              {"timing", v.timing ? timing_json(*v.timing) : Json(nullptr)},
              {"search_timing", v.search_timing ? timing_json(*v.search_timing) : Json(nullptr)},
              {"throughput",
               {{"gigabytes_per_second", optional_number(v.gbytes_per_s)},
                {"gigaflop_per_second", optional_number(v.gflop_per_s)}}},
              {"log_excerpt", v.log_excerpt},
              {"fault", v.fault ? fault_json(*v.fault) : Json(nullptr)},
              {"gate", v.gate ? gate_json(*v.gate) : Json(nullptr)}};
}

}  // namespace

VariantRecord json_values::variant_from(const Json& j) {
  VariantRecord v;
  v.name = j.at("name").get<std::string>();
  v.params = j.at("params");
  v.baseline = j.value("baseline", false);
  v.status = status_from_string(j.at("status").get<std::string>());
  v.reason = j.value("reason", "");
  v.compile_seconds = read_number(j, "compile_seconds");
  v.compile_cached = j.value("compile_cached", false);
  v.load_seconds = read_number(j, "load_seconds");
  v.first_launch_ms = read_number(j, "first_launch_ms");
  v.evaluate_ms = read_number(j, "evaluate_ms");
  v.parity_ms = read_number(j, "parity_ms");
  v.unload_ms = read_number(j, "unload_ms");
  if (j.contains("launches")) v.launches = j.at("launches").get<std::vector<Json>>();
  if (j.contains("resources"))
    for (const auto& [k, r] : j.at("resources").items()) v.resources[k] = resources_from(r);
  if (j.contains("parity") && !j.at("parity").is_null()) v.parity = parity_from(j.at("parity"));
  if (j.contains("timing") && !j.at("timing").is_null()) v.timing = timing_from(j.at("timing"));
  if (j.contains("search_timing") && !j.at("search_timing").is_null()) v.search_timing = timing_from(j.at("search_timing"));
  if (j.contains("throughput")) {
    v.gbytes_per_s = read_optional<double>(j.at("throughput"), "gigabytes_per_second");
    v.gflop_per_s = read_optional<double>(j.at("throughput"), "gigaflop_per_second");
  }
  v.log_excerpt = j.value("log_excerpt", "");
  if (j.contains("fault") && !j.at("fault").is_null()) v.fault = fault_from(j.at("fault"));
  if (j.contains("gate") && !j.at("gate").is_null()) v.gate = gate_from(j.at("gate"));
  return v;
}

Json to_json(const GateRecord& gate) { return gate_json(gate); }
GateRecord gate_from_json(const Json& json) { return gate_from(json); }

std::string to_string(Status s) { return std::string(enum_name(kStatusNames, s).value_or("unknown")); }

Status status_from_string(const std::string& s) {
  if (const auto status = enum_value(kStatusNames, s)) return *status;
  throw InputError("unknown variant status '" + s + "'");
}

namespace {
constexpr EnumName<FaultKind> kFaultKindNames[] = {
    {FaultKind::kSignal, "signal"},   {FaultKind::kExit, "exit"},   {FaultKind::kCudaError, "cuda_error"},
    {FaultKind::kTimeout, "timeout"}, {FaultKind::kError, "error"},
};
}  // namespace

std::string to_string(FaultKind k) { return std::string(enum_name(kFaultKindNames, k).value_or("unknown")); }

FaultKind fault_kind_from_string(const std::string& s) {
  if (const auto kind = enum_value(kFaultKindNames, s)) return *kind;
  throw InputError("unknown fault kind '" + s + "'");
}

namespace {
constexpr EnumName<GateVerdict> kGateVerdictNames[] = {
    {GateVerdict::kSafe, "safe"},           {GateVerdict::kUnsafe, "unsafe"}, {GateVerdict::kIncorrect, "incorrect"},
    {GateVerdict::kUnchecked, "unchecked"}, {GateVerdict::kNone, ""},
};
constexpr EnumName<ShardSplit> kShardSplitNames[] = {{ShardSplit::kItems, "items"}, {ShardSplit::kVariants, "variants"}};
constexpr EnumName<SearchLabel> kSearchLabelNames[] = {
    {SearchLabel::kExhaustive, "exhaustive"},
    {SearchLabel::kRandom, "random"},
    {SearchLabel::kHalving, "halving"},
    {SearchLabel::kRandomHalving, "random+halving"},
    {SearchLabel::kWarm, "warm"},
    {SearchLabel::kWarmHalving, "warm+halving"},
    {SearchLabel::kModel, "model"},
    {SearchLabel::kWarmModel, "warm+model"},
};

template <typename E, std::size_t N>
std::vector<std::string> names_of(const EnumName<E> (&table)[N]) {
  std::vector<std::string> out;
  for (const auto& [value, name] : table)
    if (*name) out.emplace_back(name);
  return out;
}
}  // namespace

std::string to_string(GateVerdict v) { return std::string(enum_name(kGateVerdictNames, v).value_or("")); }

GateVerdict gate_verdict_from_string(const std::string& s) {
  if (const auto v = enum_value(kGateVerdictNames, s)) return *v;
  throw InputError("unknown gate verdict '" + s + "'");
}

std::vector<std::string> gate_verdict_names() { return names_of(kGateVerdictNames); }

std::string to_string(ShardSplit s) { return std::string(enum_name(kShardSplitNames, s).value_or("items")); }

ShardSplit shard_split_from_string(const std::string& s) {
  if (const auto v = enum_value(kShardSplitNames, s)) return *v;
  throw InputError("unknown shard split '" + s + "'");
}

std::vector<std::string> shard_split_names() { return names_of(kShardSplitNames); }

std::string to_string(SearchLabel l) { return std::string(enum_name(kSearchLabelNames, l).value_or("exhaustive")); }

SearchLabel search_label_from_string(const std::string& s) {
  if (const auto v = enum_value(kSearchLabelNames, s)) return *v;
  throw InputError("unknown search strategy '" + s + "'");
}

std::vector<std::string> search_label_names() { return names_of(kSearchLabelNames); }

SearchLabel with_halving(SearchLabel choice) {
  switch (choice) {
    case SearchLabel::kExhaustive:
      return SearchLabel::kHalving;
    case SearchLabel::kRandom:
      return SearchLabel::kRandomHalving;
    case SearchLabel::kWarm:
      return SearchLabel::kWarmHalving;
    default:
      return choice;  // halved already, or the model (make_search_strategy never halves it)
  }
}

int VariantRecord::max_registers() const {
  int r = -1;
  for (const auto& [k, res] : resources) r = std::max(r, res.registers);
  return r;
}

int VariantRecord::spill_bytes() const {
  int s = 0;
  for (const auto& [k, res] : resources) s += res.spill_store_bytes + res.spill_load_bytes;
  return s;
}

const VariantRecord* RunRecord::find(const std::string& name) const {
  for (const auto& v : variants)
    if (v.name == name) return &v;
  return nullptr;
}

DeviceLimits RunRecord::limits() const {
  if (device) return device->limits();
  // "sm_90": a compile-only run lowered for DeviceLimits::for_arch of the arch it names.
  const std::string& arch = context.arch;
  if (arch.size() < 4 || arch.size() > 6 || !arch.starts_with("sm_") ||
      arch.find_first_not_of("0123456789", 3) != std::string::npos)
    throw InputError(fmt::format("context.arch \"{}\" names no arch (sm_90); re-run the compile", arch));
  return DeviceLimits::for_arch(std::stoi(arch.substr(3)));
}

Json to_json(const VariantRecord& variant) { return variant_json(variant); }

VariantRecord variant_from_json(const Json& json) {
  try {
    return variant_from(json);
  } catch (const Json::exception& e) {
    throw InputError(std::string("malformed variant record: ") + e.what());
  }
}

Json shape_to_json(const Shape& shape) {
  Json out = Json::object();
  for (const auto& [k, v] : shape.dims()) out[k] = v;
  for (const auto& [k, v] : shape.dtypes()) out[k] = std::string(dtype_name(v));
  return out;
}

Shape shape_from_json(const Json& json) {
  if (!json.is_object()) throw InputError("shape: is not an object of dimensions");
  Shape shape;
  for (const auto& [k, v] : json.items()) {
    if (v.is_number_integer()) {
      shape.set(k, v.get<std::int64_t>());
    } else if (const auto t = v.is_string() ? parse_dtype(v.get_ref<const std::string&>()) : std::nullopt) {
      shape.set_dtype(k, *t);
    } else {
      throw InputError(
          fmt::format("shape.{}: {} is neither an integer dimension nor a dtype ({})", k, v.dump(), dtype_choices()));
    }
  }
  return shape;
}

namespace {

Json torch_times_json(const std::optional<TorchTimes>& t) {
  if (!t) return nullptr;
  return Json{{"samples", t->samples},     {"median_us", number(t->median_us)}, {"q1_us", number(t->q1_us)},
              {"q3_us", number(t->q3_us)}, {"min_us", number(t->min_us)},       {"mean_us", number(t->mean_us)}};
}

std::optional<TorchTimes> torch_times_from(const Json& j) {
  if (j.is_null()) return std::nullopt;
  return TorchTimes{j.value("samples", 0),   read_number(j, "median_us"), read_number(j, "q1_us"),
                    read_number(j, "q3_us"), read_number(j, "min_us"),    read_number(j, "mean_us")};
}

Json torch_mode_json(const std::optional<TorchModeRecord>& m) {
  if (!m) return nullptr;
  Json j{{"graph", torch_times_json(m->graph)},
         {"events", torch_times_json(m->events)},
         {"error", m->error.empty() ? Json(nullptr) : Json(m->error)}};
  if (m->compile_seconds) j["compile_seconds"] = number(*m->compile_seconds);
  return j;
}

std::optional<TorchModeRecord> torch_mode_from(const Json& j) {
  if (j.is_null()) return std::nullopt;
  TorchModeRecord m;
  if (j.contains("graph")) m.graph = torch_times_from(j.at("graph"));
  if (j.contains("events")) m.events = torch_times_from(j.at("events"));
  if (j.contains("error") && j.at("error").is_string()) m.error = j.at("error").get<std::string>();
  if (j.contains("compile_seconds") && !j.at("compile_seconds").is_null())
    m.compile_seconds = j.at("compile_seconds").get<double>();
  return m;
}

}  // namespace

Json to_json(const TorchRecord& t) {
  return Json{{"status", t.status},
              {"reason", t.reason},
              {"torch_version", t.torch_version},
              {"cuda_version", t.cuda_version},
              {"device", t.device},
              {"module_dtype", t.module_dtype},
              {"modes", t.modes},
              {"tf32", t.tf32},
              {"method", t.method},
              {"eager", torch_mode_json(t.eager)},
              {"compile", torch_mode_json(t.compile)},
              {"seconds", number(t.seconds)}};
}

TorchRecord torch_from_json(const Json& j) {
  TorchRecord t;
  t.status = j.at("status").get<std::string>();
  t.reason = j.value("reason", "");
  t.torch_version = j.value("torch_version", "");
  t.cuda_version =
      j.contains("cuda_version") && j.at("cuda_version").is_string() ? j.at("cuda_version").get<std::string>() : "";
  t.device = j.value("device", "");
  t.module_dtype = j.value("module_dtype", "");
  t.modes = j.value("modes", std::vector<std::string>{});
  t.tf32 = j.value("tf32", false);
  if (j.contains("method") && j.at("method").is_object()) t.method = j.at("method");
  if (j.contains("eager")) t.eager = torch_mode_from(j.at("eager"));
  if (j.contains("compile")) t.compile = torch_mode_from(j.at("compile"));
  t.seconds = j.contains("seconds") ? read_number(j, "seconds") : 0;
  return t;
}

Json to_json(const HarnessFloor& f) {
  return Json{{"empty_kernel_cold_us", number(f.empty_cold_us)},
              {"empty_kernel_batch_us", number(f.empty_batch_us)},
              {"empty_kernel_graph_us", number(f.empty_graph_us)}};
}

HarnessFloor harness_floor_from_json(const Json& f) {
  return HarnessFloor{read_number(f, "empty_kernel_cold_us"), read_number(f, "empty_kernel_batch_us"),
                      read_number(f, "empty_kernel_graph_us")};
}

}  // namespace tune
