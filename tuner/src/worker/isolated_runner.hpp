#pragma once
// The GPU side of a timed run: the worker process behind a deadline (IsolatedRunner).
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cmath>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <ctime>
#include <deque>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <random>
#include <ranges>
#include <set>
#include <thread>

#include <cuda.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tune/compile.hpp"
#include "tune/device.hpp"
#include "tune/errors.hpp"
#include "tune/measure.hpp"
#include "tune/problem.hpp"
#include "tune/record.hpp"
#include "tune/space.hpp"
#include "tune/worker_client.hpp"
#include "tune/worker_protocol.hpp"

namespace tune {

// What a lost worker leaves of a variant: the status, and a reason that says how it was lost.
inline void record_loss(VariantRecord& rec, const FaultRecord& f, const std::string& when) {
  rec.status = f.kind == FaultKind::kTimeout ? Status::kTimeout : Status::kCrashed;
  const std::string phase = f.phase.empty() ? "before its first phase" : "during " + f.phase;
  if (f.kind == FaultKind::kTimeout)
    rec.reason = fmt::format("no answer within {:g} s ({}){}; the worker process was killed", f.deadline_s, phase, when);
  else if (f.kind == FaultKind::kError)
    rec.reason = fmt::format("the worker process failed {}{}: {}", phase, when, f.message);
  else if (f.kind == FaultKind::kSignal)
    rec.reason = fmt::format("the worker process was killed by {} {}{}", f.signal, phase, when);
  else
    rec.reason = fmt::format("the worker process exited with code {} {}{}", f.exit_code, phase, when);
  rec.fault = f;
}

// The GPU side of a timed run: loading, parity and timing in a worker process, a fresh one after a
// variant kills it or misses its deadline. A lost variant is recorded, never retried.
class IsolatedRunner {
 public:
  IsolatedRunner(WorkerInit init, double timeout_override_s, RunContext& ctx, std::function<void(const std::string&)> log)
      : init_(std::move(init)),
        override_s_(timeout_override_s),
        iso_(&ctx.isolation),
        reference_(&ctx.reference),
        log_(std::move(log)) {
    iso_->first_variant_timeout_s = override_s_ > 0 ? override_s_ : kFirstDeadlineS;
    iso_->variant_timeout_s = iso_->first_variant_timeout_s;
    iso_->timeout_rule =
        override_s_ > 0
            ? "--variant-timeout for each variant (times the variant count for the strict re-measure)"
            : "10 s until the baseline is timed; then max(5 s, 2 s + 2 x the stop rule's wall cap + 50 x the launches of "
              "one evaluation x the baseline's median), times the variant count for the strict re-measure";
  }

  // The next pass of the same run (an adaptive search strategy) keeps this worker, its data and its
  // reference. detach() at the end of a pass keeps what it recorded in the pass's context (which
  // goes with the pass); rebind() moves that to the next pass's context and records into it.
  void detach() {
    own_iso_ = *iso_;
    own_reference_ = *reference_;
    iso_ = &own_iso_;
    reference_ = &own_reference_;
  }
  void rebind(RunContext& ctx) {
    ctx.isolation = *iso_;
    ctx.reference = *reference_;
    iso_ = &ctx.isolation;
    reference_ = &ctx.reference;
  }

  // Starts a worker (its init, data and CPU reference overlap the compiles) if none runs.
  void start() {
    if (worker_) return;
    worker_.emplace(init_);
    ready_ = false;
    ++iso_->worker_starts;
  }

  // Called once a worker started with WorkerInit::check_reference is ready: its reference repeated.
  void on_reference_checked(std::function<void()> f) { reference_checked_ = std::move(f); }

  HarnessFloor floor() {
    // The first start, before anything of the run is measured: a stop while reference.py runs ends it at once.
    auto [floor, fault, culprit] = ready(/*stoppable=*/true).measure_floor(kFloorDeadlineS);
    if (!floor) {
      worker_.reset();
      VariantRecord r;
      record_loss(r, fault, "");
      throw DeviceError("measuring the harness floor: " + r.reason);
    }
    return *floor;
  }

  void set_baseline_median(double us) {
    baseline_us_ = us;
    iso_->variant_timeout_s = deadline(DeviceRunner::Options{});
  }

  void evaluate(const CompileResult& compiled, const Lowered& lowered, VariantRecord& rec,
                const DeviceRunner::Options& options) {
    const WorkerProcess::RunReply r = ready().run("evaluate", {{&compiled, &lowered, &rec}}, options, deadline(options));
    if (!r.ok) {
      worker_.reset();
      record_loss(rec, r.fault, "");
    } else if (r.exiting) {
      worker_.reset();  // it reported a sticky CUDA error and exits
    }
  }

  // Re-measures the items in rounds; one that kills the worker is recorded and the rest are
  // re-measured in a fresh one (each alone when the culprit cannot be told).
  void remeasure(std::vector<WorkerItem> items, const DeviceRunner::Options& options) {
    while (!items.empty()) {
      const double d = deadline(options) * static_cast<double>(items.size());
      const WorkerProcess::RunReply r = ready().run("remeasure", items, options, d);
      const int culprit = r.culprit;
      const FaultRecord& f = r.fault;
      if (r.ok) {
        if (r.exiting) worker_.reset();
        return;
      }
      worker_.reset();
      if (culprit < 0 || culprit >= static_cast<int>(items.size())) {
        for (const WorkerItem& it : items) remeasure({it}, options);
        return;
      }
      VariantRecord& lost = *items[static_cast<std::size_t>(culprit)].record;
      record_loss(lost, f, " in the strict re-measure");
      log_(fmt::format("strict re-measure: {} {}; the others are re-measured in a fresh worker", lost.name, lost.reason));
      items.erase(items.begin() + culprit);
    }
  }

 private:
  static constexpr double kFirstDeadlineS = 10, kMinDeadlineS = 5, kInitDeadlineS = 300, kFloorDeadlineS = 120;

  WorkerProcess& ready(bool stoppable = false) {
    start();
    if (!ready_) {
      // The start runs the reference (twice where it is checked to repeat itself): its own deadline
      // (reference.py named, exit 2) comes first.
      const double references = init_.check_reference ? 2 : 1;
      *reference_ = worker_->wait_ready(std::max(kInitDeadlineS, references * reference_timeout_s() + 60), stoppable);
      ready_ = true;
      if (init_.check_reference) {  // once: a fresh worker after a crash runs the reference once
        init_.check_reference = false;
        if (reference_checked_) reference_checked_();
      }
    }
    return *worker_;
  }

  [[nodiscard]] double deadline(const DeviceRunner::Options& o) const {
    if (override_s_ > 0) return override_s_;
    if (!baseline_us_) return kFirstDeadlineS;
    const double launches = o.warmup_launches + 2 + o.rule.min_samples + 11.0 * o.batch_launches;
    return std::max(kMinDeadlineS, 2 + 2 * o.rule.wall_cap_seconds + 50 * launches * *baseline_us_ * 1e-6);
  }

  WorkerInit init_;
  double override_s_;
  RunContext::Isolation* iso_;
  std::string* reference_;
  RunContext::Isolation own_iso_;
  std::string own_reference_;
  std::function<void(const std::string&)> log_;
  std::optional<WorkerProcess> worker_;
  bool ready_ = false;
  std::optional<double> baseline_us_;
  std::function<void()> reference_checked_;
};

}  // namespace tune
