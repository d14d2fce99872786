// One host, many GPUs: the device list, the results folders, and the per-device threads.
#include "tune/devices.hpp"
#include "tune/run_plan.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <condition_variable>
#include <deque>
#include <exception>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tune/errors.hpp"
#include "tune/journal.hpp"
#include "tune/problem.hpp"
#include "tune/stop.hpp"
#include "tune/worker_protocol.hpp"

namespace tune {

DeviceSelection parse_devices(const std::string& text) {
  DeviceSelection s;
  if (text == "all") {
    s.all = true;
    return s;
  }
  const std::string usage =
      fmt::format("--devices {}: expected all or a comma list of device ordinals, e.g. --devices 0,2", text);
  std::set<int> seen;
  for (std::size_t pos = 0; pos <= text.size();) {
    std::size_t end = text.find(',', pos);
    if (end == std::string::npos) end = text.size();
    int d = -1;
    const auto r = std::from_chars(text.data() + pos, text.data() + end, d);
    if (end == pos || r.ec != std::errc() || r.ptr != text.data() + end || d < 0) throw InputError(usage);
    if (!seen.insert(d).second)
      throw InputError(fmt::format("--devices {}: device {} is listed twice; list each once", text, d));
    s.ordinals.push_back(d);
    pos = end + 1;
  }
  return s;
}

std::string describe_device(const DeviceInfo& device) {
  return fmt::format("device {} ({}, {})", device.ordinal, device.name, device.uuid);
}

namespace {
// A UUID's first 8 hex digits ("" when it has none).
std::string uuid8(const std::string& uuid) {
  std::string hex;
  const std::string body = uuid.rfind("GPU-", 0) == 0 ? uuid.substr(4) : uuid;
  for (const char c : body) {
    if (hex.size() == 8 || c == '-') break;
    if (!std::isxdigit(static_cast<unsigned char>(c))) return std::string();
    hex += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return hex.size() == 8 ? hex : std::string();
}
}  // namespace

std::vector<std::string> device_folder_names(const DeviceInfo& device) {
  std::vector<std::string> names{device.slug()};
  if (const std::string hex = uuid8(device.uuid); !hex.empty()) names.push_back(device.slug() + "-" + hex);
  names.push_back(fmt::format("{}-{}", device.slug(), device.ordinal));
  return names;
}

bool is_model_folder(const std::string& name, const std::string& slug) {
  if (name == slug) return true;
  if (name.size() <= slug.size() + 1 || name.compare(0, slug.size() + 1, slug + "-") != 0) return false;
  const std::string tail = name.substr(slug.size() + 1);
  const bool ordinal =
      std::all_of(tail.begin(), tail.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; });
  return ordinal || (tail.size() == 8 && uuid8(tail) == tail);
}

std::vector<std::string> device_dirs(const std::vector<DeviceInfo>& devices) {
  std::map<std::string, int> slugs;
  for (const auto& d : devices) ++slugs[d.slug()];
  std::vector<std::string> dirs;
  for (const auto& d : devices)
    dirs.push_back(slugs[d.slug()] == 1 || uuid8(d.uuid).empty() ? d.slug() : d.slug() + "-" + uuid8(d.uuid));
  // Two UUIDs that share their first 8 digits (or lack them): the ordinal tells the cards apart.
  std::map<std::string, int> used;
  for (const auto& dir : dirs) ++used[dir];
  for (std::size_t i = 0; i < dirs.size(); ++i)
    if (used[dirs[i]] > 1) dirs[i] = fmt::format("{}-{}", devices[i].slug(), devices[i].ordinal);
  return dirs;
}

std::vector<SweepDevice> resolve_devices(const DeviceSelection& selection, int arch) {
  const bool fake = worker_fake_mode();
  std::string why;
  const int count = fake ? fake_device_count() : device_count(&why);
  if (count == 0 && selection.all) return {};
  std::vector<int> ordinals = selection.ordinals;
  if (selection.all)
    for (int d = 0; d < count; ++d) ordinals.push_back(d);
  std::vector<DeviceInfo> infos;
  for (const int d : ordinals) {
    if (d >= count)
      throw InputError(count == 0 ? fmt::format("--devices: device {} does not exist, this machine has no CUDA device ({}); "
                                                "leave out --devices to run the compile-only sweep",
                                                d, why)
                                  : fmt::format("--devices: device {} does not exist (this machine has {}: 0 to {}); "
                                                "pass --devices all or ordinals below {}",
                                                d, count, count - 1, count));
    if (fake) {
      infos.push_back(fake_device(arch, d));
    } else {
      auto info = query_device(d, &why);
      if (!info) throw InputError(fmt::format("--devices: device {} cannot be used ({})", d, why));
      infos.push_back(std::move(*info));
    }
  }
  const auto dirs = device_dirs(infos);
  std::vector<SweepDevice> out;
  for (std::size_t i = 0; i < infos.size(); ++i) out.push_back({infos[i], dirs[i]});
  return out;
}

namespace {

// The snapshot a failed device left of its item (<shape>.json.partial, complete: false) and its
// journal: the item runs again on another device, so the failed card's folder keeps no half-run
// file (results it finished earlier stay). Returns a note for the log ("" when there was none).
// Under --resume both stay: the device that takes the item next continues from them (issue 34 #8).
std::string remove_incomplete(const TuneOptions& o, const ShapeResolution& shape, const std::string& dir) {
  if (o.resume) return "";
  try {
    const ProblemShape& at = shape.get();
    const auto results = results_path(o, std::string(at.problem->name()), at.shape, dir);
    const auto json = partial_results_path(results);
    std::ifstream in(json);
    if (!in) return "";
    const auto j = nlohmann::json::parse(in, nullptr, false);
    if (j.is_discarded() || j.value("complete", true)) return "";
    in.close();
    std::error_code ec;
    std::filesystem::remove(json, ec);
    std::filesystem::remove(Journal::path_for(results), ec);
    return fmt::format(" (its incomplete {} was removed)", json.string());
  } catch (const std::exception&) {
    return "";
  }
}

// The sweep's items served by one thread per device, from one shared queue (or with replicate a
// queue per device); a device that fails gives its item back to the others.
class DeviceSweep {
 public:
  using OnDone = std::function<void(const SweepWork&, const SweepDevice&, const TuneOutcome&)>;
  DeviceSweep(const std::vector<SweepWork>& work, const TuneOptions& base, const std::vector<SweepDevice>& devices,
              bool replicate, const OnDone& on_done)
      : work_(work),
        base_(base),
        devices_(devices),
        replicate_(replicate),
        on_done_(on_done),
        queues_(replicate ? devices.size() : 1, std::deque<SweepWork>(work.begin(), work.end())) {}

  SweepResult run() {
    {
      const StopScope stop_scope;  // one Ctrl-C stops every device, and no device takes another item
      std::vector<std::jthread> threads;
      for (std::size_t k = 0; k < devices_.size(); ++k) threads.emplace_back([this, k] { serve(k); });
    }
    if (error_) std::rethrow_exception(error_);
    result_.not_run = dropped_;
    if (result_.interrupted)  // the items the stop left in the queues
      for (std::size_t q = 0; q < queues_.size(); ++q)
        for (const SweepWork& w : queues_[q]) result_.not_started.push_back(named(w, q));
    else if (!replicate_)
      result_.not_run += queues_[0].size();
    std::sort(result_.failed.begin(), result_.failed.end());
    if (result_.failed.size() == devices_.size() && (result_.not_run > 0 || result_.ran == 0))
      throw DeviceError(
          fmt::format("every device failed ({} of {}), {} of {} items not run (results already written "
                      "stay); last: {}",
                      devices_.size(), devices_.size(), result_.not_run, work_.size() * (replicate_ ? devices_.size() : 1),
                      last_failure_));
    return result_;
  }

 private:
  void log(const std::string& line) const {
    if (base_.log) base_.log(line);
  }

  // An item as the sweep's last line names it: with replicate, the device whose replica it is.
  std::string named(const SweepWork& w, std::size_t k) const {
    return replicate_ ? fmt::format("{} on device {}", w.item.describe(), devices_[k].info.ordinal) : w.item.describe();
  }

  // The options of device k's runs: its ordinal and folder, and with several devices a log prefix.
  TuneOptions options_of(std::size_t k) const {
    TuneOptions o = base_;
    o.device = devices_[k].info.ordinal;
    o.device_dir = devices_[k].dir;
    // A resumed item may land on another card than before: its results or journal may be in any
    // device's folder (with replicate each device runs every item in its own).
    o.replica = replicate_;
    if (!replicate_)
      for (const auto& d : devices_)
        if (d.dir != o.device_dir) o.resume_dirs.push_back(d.dir);
    if (devices_.size() > 1 && base_.log) {
      const std::string prefix = fmt::format("[gpu {}] ", devices_[k].info.ordinal);
      o.log = [&base = base_, prefix](const std::string& line) { base.log(prefix + line); };
      // A progress line fits the terminal with its prefix.
      if (o.line_width > 0) o.line_width = o.line_width > prefix.size() + 20 ? o.line_width - prefix.size() : 20;
    }
    return o;
  }

  void serve(std::size_t k) {
    const SweepDevice& device = devices_[k];
    std::deque<SweepWork>& queue = queues_[replicate_ ? k : 0];
    const TuneOptions o = options_of(k);
    const RunDevice opened = open_run_device(o);  // once for every item this device runs
    for (;;) {
      SweepWork w;
      {
        std::unique_lock lock(mutex_);
        // An empty shared queue may refill: an item in flight on a device that fails comes back.
        changed_.wait(lock, [&] { return stop_ || !queue.empty() || replicate_ || in_flight_ == 0; });
        if (stop_requested()) result_.interrupted = true;
        if (stop_ || queue.empty() || result_.interrupted) return;
        w = std::move(queue.front());
        queue.pop_front();
        ++in_flight_;
      }
      TuneOptions item = options_for(o, w);
      try {
        const TuneOutcome outcome = run_tune(item, w.shape, &opened);
        const std::lock_guard lock(mutex_);
        --in_flight_;
        ++result_.ran;
        if (on_done_) on_done_(w, device, outcome);
        if (outcome.run.context.interrupted) {
          result_.interrupted = true;
          result_.cut_short.push_back(cut_short_item(w, outcome));  // its file names the device's folder
          stop_ = true;
        }
        changed_.notify_all();
      } catch (const ResultsHeldError& e) {  // no other device would fare better: the item is skipped
        const std::lock_guard lock(mutex_);
        --in_flight_;
        result_.held.push_back(held_item(w, e, o.log));
        changed_.notify_all();
      } catch (const ShapeError& e) {  // no device would fare better either: the item is skipped
        const std::lock_guard lock(mutex_);
        --in_flight_;
        result_.unrunnable.push_back(unrunnable_item(w, e, o.log));
        changed_.notify_all();
      } catch (const Interrupted& e) {  // a stop before the item had a variant: nothing of it was written
        const std::lock_guard lock(mutex_);
        --in_flight_;
        stopped_item(w, e, o.log);
        result_.not_started.push_back(named(w, k));
        result_.interrupted = true;
        stop_ = true;
        changed_.notify_all();
      } catch (const DeviceError& e) {
        std::string removed = remove_incomplete(item, w.shape, device.dir);  // before w moves back to the queue
        device_failed(device, queue, std::move(w), removed, e.what());
        return;
      } catch (...) {
        const std::lock_guard lock(mutex_);
        --in_flight_;
        if (!error_) error_ = std::current_exception();
        stop_ = true;
        changed_.notify_all();
        return;
      }
    }
  }

  // The device is left out: its item goes back to the others (with replicate, its queue is dropped).
  void device_failed(const SweepDevice& device, std::deque<SweepWork>& queue, SweepWork w, const std::string& removed,
                     const std::string& what) {
    const std::lock_guard lock(mutex_);
    --in_flight_;
    result_.failed.push_back(device.info.ordinal);
    last_failure_ = fmt::format("{} failed: {}", describe_device(device.info), what);
    const bool others = result_.failed.size() < devices_.size();
    const std::string described = w.item.describe();
    if (replicate_)
      ++dropped_;
    else
      queue.push_front(std::move(w));
    log(fmt::format("{} failed: {}; {}", describe_device(device.info), what,
                    !others      ? "no device is left to run its work"
                    : replicate_ ? fmt::format("its replica of {} and the rest of its items are not run", described)
                                 : "its work goes to the others") +
        removed);
    if (replicate_) dropped_ += queue.size();
    changed_.notify_all();
  }

  const std::vector<SweepWork>& work_;
  const TuneOptions& base_;
  const std::vector<SweepDevice>& devices_;
  const bool replicate_;
  const OnDone& on_done_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::deque<SweepWork>> queues_;
  std::size_t in_flight_ = 0, dropped_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
  std::string last_failure_;
  SweepResult result_;
};

}  // namespace

SweepResult run_sweep_on_devices(
    const std::vector<SweepWork>& work, const TuneOptions& base, const std::vector<SweepDevice>& devices, bool replicate,
    const std::function<void(const SweepWork&, const SweepDevice&, const TuneOutcome&)>& on_done) {
  return DeviceSweep(work, base, devices, replicate, on_done).run();
}

}  // namespace tune
