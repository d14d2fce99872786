// The problem's PyTorch module timed beside the tune (tune/torch_compare.hpp, issue 36).
#include "tune/torch_compare.hpp"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/enum_names.hpp"
#include "core/json_file.hpp"
#include "core/layout.hpp"
#include "core/subprocess.hpp"
#include "problem/python_reference.hpp"
#include "tune/compile_cache.hpp"
#include "tune/errors.hpp"
#include "tune/io.hpp"
#include "tune/journal.hpp"
#include "tune/problem.hpp"
#include "tune/stop.hpp"

namespace tune {

namespace {

using Json = nlohmann::ordered_json;
using LogFn = std::function<void(const std::string&)>;

constexpr EnumName<TorchModes> kModeNames[] = {{TorchModes::kOff, "off"},
                                               {TorchModes::kEager, "eager"},
                                               {TorchModes::kCompile, "compile"},
                                               {TorchModes::kAll, "all"}};

// v1: issue 36. Raise it when what a stored measurement means changes.
constexpr const char* kTorchCacheVersion = "tune-torch-cache-v1";
// The harness's settings (torch_baseline.py's defaults): samples, wall cap after 10, calls per graph.
constexpr int kSamples = 200;
constexpr double kMaxSeconds = 2.0;
constexpr int kGraphCalls = 20;
constexpr double kProbeTimeoutS = 60;
constexpr double kDefaultTimeoutS = 900;

std::string slurp(const std::filesystem::path& file) {
  std::ifstream f(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

std::vector<std::string> mode_list(TorchModes m) {
  if (m == TorchModes::kAll) return {"eager", "compile"};
  if (m == TorchModes::kOff) return {};
  return {to_string(m)};
}

// What runs the harness: the reference's Python and the harness script.
struct Harness {
  std::string python;
  std::filesystem::path script;
};

// $TUNE_TORCH_HARNESS, else report/torch_baseline.py of tune's own files; nullopt when neither is there.
std::optional<Harness> find_harness() {
  const char* py = std::getenv("TUNE_PYTHON");
  Harness h{py && *py ? py : "python3", {}};
  if (const char* env = std::getenv("TUNE_TORCH_HARNESS"); env && *env)
    h.script = env;
  else if (const auto dir = own_data_dir())
    h.script = *dir / "report" / "torch_baseline.py";
  std::error_code ec;
  if (h.script.empty() || !std::filesystem::is_regular_file(h.script, ec)) return std::nullopt;
  return h;
}

double harness_timeout_s() {
  const char* env = std::getenv("TUNE_TORCH_TIMEOUT");
  if (!env || !*env) return kDefaultTimeoutS;
  char* end = nullptr;
  const double s = std::strtod(env, &end);
  return *end == '\0' && std::isfinite(s) && s > 0 ? s : kDefaultTimeoutS;
}

// Why a harness run gave nothing, in one line; "" when it exited 0.
std::string child_failure(const ChildResult& r, const Harness& h, double deadline_s) {
  std::string said = last_line(r.err);
  if (said.empty()) said = last_line(r.out);
  if (r.stopped)
    return fmt::format("stopped: the run was asked to stop (SIGINT or SIGTERM) while {} ran", h.script.filename().string());
  switch (r.end) {
    case ChildEnd::kTimedOut:
      return fmt::format("{} did not finish within {:g} s and was stopped (TUNE_TORCH_TIMEOUT)",
                         h.script.filename().string(), deadline_s);
    case ChildEnd::kNotStarted:
      return fmt::format("cannot run '{}' ({}); set TUNE_PYTHON to a python3", h.python, std::strerror(r.error));
    case ChildEnd::kSignaled:
      return fmt::format("{} was killed by signal {}{}", h.script.filename().string(), r.signal,
                         said.empty() ? "" : ": " + said);
    case ChildEnd::kExited:
      break;
  }
  if (r.exit_code == 0) return {};
  return fmt::format("{} failed: {}", h.script.filename().string(),
                     said.empty() ? fmt::format("exit code {}, no output", r.exit_code) : said);
}

// hold: a held harness (TorchBeside) has its deadline from the moment it is released (the go file
// appears): the gate it waits for has deadlines of its own. Then a run past it is kTimedOut too.
ChildResult run_harness(const Harness& h, const std::vector<std::string>& args, double deadline_s, const LogFn& log,
                        const TorchCompare& c, const std::filesystem::path& hold = {}) {
  ChildOptions o;
  o.argv = {h.python, h.script.string()};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  o.deadline_s = hold.empty() ? deadline_s : 0;
  const auto t0 = std::chrono::steady_clock::now();
  double released_at = -1;  // seconds after the start
  bool past_deadline = false;
  o.progress_every_s = std::max(1.0, std::min(30.0, std::floor(deadline_s / 4)));
  o.on_progress = [&](double s) {  // held: silent while it waits (the gate says what runs)
    if (!hold.empty() && released_at < 0) return;
    log(fmt::format("torch: still timing the module ({:.0f} s of {:g} s)", s - std::max(0.0, released_at), deadline_s));
  };
  o.stop_when = [&] {  // a Ctrl-C does not wait for torch.compile
    if (stop_requested() || (c.cancel && *c.cancel)) return true;
    if (hold.empty()) return false;
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::error_code ec;
    if (released_at < 0 && std::filesystem::exists(hold, ec)) released_at = s;
    past_deadline = released_at >= 0 && s > released_at + deadline_s;
    return past_deadline;
  };
  ChildResult r = run_child(o);
  if (past_deadline) {
    r.stopped = false;
    r.end = ChildEnd::kTimedOut;
  }
  return r;
}

// The cache's key: everything that decides the module's times.
std::string cache_key_of(const Problem& problem, const Shape& shape, const DeviceInfo& device, const TorchCompare& o,
                         const std::string& torch_version, const Harness& h) {
  return cache_key({kTorchCacheVersion, device.name, std::to_string(device.compute_capability()), torch_version,
                    std::string(problem.name()),
                    content_hash({problem.json().dump(), problem.reference_identity(ReferenceBackend::kPython)}),
                    shape_to_json(shape).dump(), std::to_string(o.seed),
                    fmt::format("{}", fmt::join(mode_list(o.modes), ",")), "tf32 off",
                    fmt::format("{} {} {}", kSamples, kMaxSeconds, kGraphCalls), content_hash({slurp(h.script)})});
}

// request.json and the run's timing draw, each tensor a .npy file, for torch_baseline.py --one; the
// problem as tune reads it at the shape (problem_facts) rides along, so the harness runs no tune.
void write_request(const std::filesystem::path& dir, const Problem& problem, const Shape& shape, const TorchCompare& o) {
  const ProblemData data = problem.make_data(shape, o.seed, DataPurpose::kTiming);
  Json request{{"problem", std::string(problem.name())},
               {"folder", problem.dir().string()},
               {"shape", shape_to_json(shape)},
               {"modes", mode_list(o.modes)},
               {"device", o.device},
               {"tf32", false},
               {"samples", kSamples},
               {"max_seconds", kMaxSeconds},
               {"graph_calls", kGraphCalls},
               {"seed", o.seed},
               {"problem_show", problem_facts(problem, shape)},
               {"tensors", Json::array()}};
  if (!o.hold.empty()) request["hold"] = o.hold.string();
  std::size_t n = 0;
  for (const auto* group : {&data.params, &data.inputs})
    for (const HostTensor& t : *group) {
      const std::string file = fmt::format("t{}.npy", n++);
      write_npy(dir / file, t.spec.shape, t.spec.dtype, t.data);
      request["tensors"].push_back({{"name", t.spec.name}, {"dtype", dtype_name(t.spec.dtype)}, {"file", file}});
    }
  write_file_atomic(dir / "request.json", request.dump(1));
}

// The record of the harness's result.json (its modes as time_modes writes them).
TorchRecord record_of(const Json& result, const TorchCompare& o) {
  Json j{{"status", result.value("status", "skipped")},
         {"reason", result.value("reason", "")},
         {"torch_version", result.value("torch_version", "")},
         {"cuda_version",
          result.contains("cuda_version") && result.at("cuda_version").is_string() ? result.at("cuda_version") : Json("")},
         {"device", result.value("device", "")},
         {"module_dtype", result.value("module_dtype", "")},
         {"modes", mode_list(o.modes)},
         {"tf32", result.value("tf32", false)},
         {"method", result.contains("method") ? result.at("method") : Json::object()},
         {"eager", result.contains("eager") ? result.at("eager") : Json(nullptr)},
         {"compile", result.contains("compile") ? result.at("compile") : Json(nullptr)}};
  return torch_from_json(j);
}

bool has_error(const TorchRecord& r) {
  for (const auto* m : {&r.eager, &r.compile})
    if (*m && (!(*m)->error.empty() || !(*m)->graph)) return true;
  return false;
}

std::string times_text(const TorchRecord& r) {
  std::string parts;
  for (const auto& [label, m] : {std::pair{"eager", &r.eager}, std::pair{"torch.compile", &r.compile}}) {
    if (!*m) continue;
    parts += parts.empty() ? "" : ", ";
    parts +=
        (*m)->graph ? fmt::format("{} graph {:.2f} us", label, (*m)->graph->median_us) : fmt::format("{} not timed", label);
    if (!(*m)->error.empty()) parts += fmt::format(" ({})", (*m)->error);
  }
  return fmt::format("{} (torch {}, {})", parts, r.torch_version, r.device);
}

// The measurement: the request, the harness, its result; "failed" with why when it gave none.
TorchRecord measure(const Problem& problem, const Shape& shape, const TorchCompare& o, const Harness& h, const LogFn& log) {
  const TempDir dir("torch");
  write_request(dir.path(), problem, shape, o);
  const double deadline_s = harness_timeout_s();
  log(fmt::format("torch: timing {}'s PyTorch module at {} ({}), on the run's inputs", problem.name(), shape.describe(),
                  fmt::join(mode_list(o.modes), " and ")));
  const ChildResult r = run_harness(h, {"--one", dir.path().string()}, deadline_s, log, o, o.hold);
  TorchRecord rec;
  rec.modes = mode_list(o.modes);
  rec.seconds = r.seconds;
  std::string why = child_failure(r, h, deadline_s);
  if (why.empty() && !std::filesystem::exists(dir.path() / "result.json"))
    why = fmt::format("{} exited 0 without writing its result.json", h.script.filename().string());
  if (why.empty()) {
    try {
      const Json result = json_file::read(dir.path() / "result.json");
      rec = record_of(result, o);
      rec.seconds = r.seconds;
      if (const auto held = result.find("held_s"); held != result.end() && held->is_number())
        rec.held_s = held->get<double>();
      validate_torch_record(to_json(rec));
      return rec;
    } catch (const std::exception& e) {
      why = fmt::format("{}'s result.json is not what tune reads ({})", h.script.filename().string(), e.what());
    }
  }
  rec.status = "failed";
  rec.reason = why;
  return rec;
}

std::optional<TorchRecord> load_cached(const std::filesystem::path& dir, const std::string& key) {
  std::error_code ec;
  if (dir.empty() || !std::filesystem::is_regular_file(dir / (key + ".json"), ec)) return std::nullopt;
  try {
    const Json entry = json_file::read(dir / (key + ".json"));
    if (entry.value("key", "") != key || !entry.contains("record")) return std::nullopt;
    validate_torch_record(entry.at("record"));
    return torch_from_json(entry.at("record"));
  } catch (const std::exception&) {  // damaged, another key's: a miss, replaced by the store
    return std::nullopt;
  }
}

void store_cached(const std::filesystem::path& dir, const std::string& key, const TorchRecord& rec, const LogFn& log) {
  if (dir.empty()) return;
  try {
    std::filesystem::create_directories(dir);
    write_file_atomic(dir / (key + ".json"), Json{{"key", key}, {"record", to_json(rec)}}.dump());
  } catch (const std::exception& e) {  // read-only, full: the measurement itself stands
    log(fmt::format("torch: the measurement is not cached ({})", e.what()));
  }
}

TorchRecord skipped(std::vector<std::string> modes, std::string why) {
  TorchRecord r;
  r.status = "skipped";
  r.reason = std::move(why);
  r.modes = std::move(modes);
  return r;
}

// What stops the module from being timed before the harness runs, or "".
std::string skip_reason(const Problem& problem, const TorchCompare& o, const std::optional<Harness>& h) {
  if (o.fake_device && !std::getenv("TUNE_TORCH_HARNESS"))
    return "TUNE_WORKER_FAKE: a synthetic device, no PyTorch module to time on it";
  if (!problem.python_reference()) return "the problem has no reference.py (a built-in C++ reference only)";
  if (!h) return "no report/torch_baseline.py beside this tune (install tune, or set TUNE_TORCH_HARNESS)";
  return {};
}

TorchRecord compare(const Problem& problem, const Shape& shape, const DeviceInfo& device, const TorchCompare& o,
                    const LogFn& log) {
  const std::vector<std::string> modes = mode_list(o.modes);
  const std::optional<Harness> h = find_harness();
  if (const std::string why = skip_reason(problem, o, h); !why.empty()) return skipped(modes, why);
  const ChildResult r = run_harness(*h, {"--probe", problem.python_reference()->string()}, kProbeTimeoutS, log, o);
  std::string why = child_failure(r, *h, kProbeTimeoutS);
  Json probe;
  try {
    if (why.empty()) probe = Json::parse(last_line(r.out, 4096));
  } catch (const Json::exception&) {
    why = fmt::format("{} --probe printed no JSON", h->script.filename().string());
  }
  if (!why.empty()) return TorchRecord{.status = "failed", .reason = why, .modes = modes};
  if (const std::string skip = probe.value("skip", ""); !skip.empty()) return skipped(modes, skip);
  const std::string version = probe.value("torch_version", "");
  const std::string key = cache_key_of(problem, shape, device, o, version, *h);
  if (auto cached = load_cached(o.cache_dir, key)) {
    cached->status = "cached";
    return *cached;
  }
  TorchRecord rec = measure(problem, shape, o, *h, log);
  if (rec.status == "measured" && !has_error(rec)) store_cached(o.cache_dir, key, rec, log);
  return rec;
}

}  // namespace

std::string to_string(TorchModes modes) { return std::string(enum_name(kModeNames, modes).value_or("?")); }
TorchModes torch_modes_from_string(const std::string& text) {
  if (const auto v = enum_value(kModeNames, text)) return *v;
  throw InputError(fmt::format("--torch {}: expected one of {}", text, fmt::join(torch_mode_names(), ", ")));
}
std::vector<std::string> torch_mode_names() { return {"off", "eager", "compile", "all"}; }

std::filesystem::path torch_cache_for(bool no_cache, const std::optional<std::filesystem::path>& cache_dir) {
  if (no_cache) return {};
  return (cache_dir ? *cache_dir : CompileCache::default_dir()) / "torch";
}

TorchRecord time_torch_module(const Problem& problem, const Shape& shape, const DeviceInfo& device,
                              const TorchCompare& options, const LogFn& log) {
  if (options.modes == TorchModes::kOff) return skipped({}, "--torch off");
  TorchRecord rec;
  try {
    rec = compare(problem, shape, device, options, log);
  } catch (const std::exception& e) {  // the data could not be written, the cache key not read: the run goes on
    rec = TorchRecord{.status = "failed", .reason = e.what(), .modes = mode_list(options.modes)};
  }
  if (rec.status == "measured" || rec.status == "cached")
    log(fmt::format("torch: {}{}", times_text(rec), rec.status == "cached" ? ", cached (--no-cache times it again)" : ""));
  else
    log(fmt::format("torch: {}: {}", rec.status, rec.reason));
  return rec;
}

TorchBeside::TorchBeside(const Problem& problem, const Shape& shape, const DeviceInfo& device, TorchCompare options,
                         std::function<void(const std::string&)> log) {
  if (options.modes == TorchModes::kOff) {
    record_ = skipped({}, "--torch off");
    released_ = true;
    return;
  }
  // A name of its own in the temporary folder: the harness polls for it (and gives up when this
  // process is gone), so no pipe is held open across the gate's processes.
  go_ = std::filesystem::temp_directory_path() /
        fmt::format("tune-torch-go-{}-{}", getpid(), reinterpret_cast<std::uintptr_t>(this));
  std::error_code ec;
  std::filesystem::remove(go_, ec);
  options.hold = go_;
  options.cancel = &cancelled_;
  thread_ = std::jthread([this, &problem, shape, device, options, log = std::move(log)] {
    record_ = time_torch_module(problem, shape, device, options, log);
    done_ = true;
  });
}

void TorchBeside::quiet() {
  std::error_code ec;
  while (!released_ && !done_ && !std::filesystem::exists(go_.string() + ".ready", ec))
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

void TorchBeside::release() {
  if (released_) return;
  released_ = true;
  std::ofstream(go_) << "go\n";
}

TorchRecord TorchBeside::wait() {
  if (!cancelled_) release();
  if (thread_.joinable()) thread_.join();
  std::error_code ec;
  if (!go_.empty()) {
    std::filesystem::remove(go_, ec);
    std::filesystem::remove(go_.string() + ".ready", ec);
  }
  return record_;
}

TorchBeside::~TorchBeside() {
  if (!released_) cancelled_ = true;
  (void)wait();
}

std::string torch_comparison(const RunRecord& run) {
  const VariantRecord* w = run.winner ? run.find(*run.winner) : nullptr;
  if (!run.torch || !w || !w->timing || !(w->timing->graph_mean_us > 0)) return {};
  std::vector<std::string> out;
  for (const auto& [label, m] :
       {std::pair{"torch.compile", &run.torch->compile}, std::pair{"PyTorch eager", &run.torch->eager}})
    if (*m && (*m)->graph && (*m)->graph->median_us > 0)
      out.push_back(fmt::format("{:.2f}x over {} (graph {:.2f} us against the winner's {:.2f} us)",
                                (*m)->graph->median_us / w->timing->graph_mean_us, label, (*m)->graph->median_us,
                                w->timing->graph_mean_us));
  return fmt::format("{}", fmt::join(out, ", "));
}

}  // namespace tune
