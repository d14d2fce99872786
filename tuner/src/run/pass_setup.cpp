// The start of a pass (PassRun): the plan's device, the variants chosen and lowered, the worker.
#include "run/pass_run.hpp"

#include <algorithm>
#include <thread>

#include <fmt/format.h>

#include "run/run_common.hpp"
#include "search/progress_log.hpp"
#include "search/strategy.hpp"
#include "tune/compile.hpp"
#include "tune/compile_cache.hpp"
#include "tune/compile_pool.hpp"
#include "tune/device.hpp"
#include "tune/errors.hpp"
#include "tune/gate.hpp"
#include "tune/problem.hpp"
#include "tune/run_plan.hpp"
#include "tune/space.hpp"
#include "tune/sweep.hpp"
#include "tune/verdict_cache.hpp"
#include "tune/worker_client.hpp"
#include "tune/worker_protocol.hpp"

namespace tune {

// The plan's device (plan_run said what it is; a later pass says it again).
void PassRun::open_device() {
  if (pass && pass->passes_done > 0 && !plan.device_note.empty()) log(plan.device_note);
  run.device = plan.device;
  run.untimed_reason = plan.untimed_reason;
  run.timed = !compile_only;
}

// The variants, chosen before anything is written: a space too large to enumerate, or a run of
// more variants than --max-variants, is refused in one line and leaves no file behind.
void PassRun::choose_variants() {
  Chosen chosen_configs = choose_configs(o, run.problem, space, shape, limits, ctx, log, pass, strategy);
  chosen = std::move(chosen_configs.configs);
  chosen_how = std::move(chosen_configs.how);
  ctx.shard = o.shard;
  if (o.shard && o.shard->split == ShardSplit::kVariants) {
    ShardPart part = shard_configs(chosen, space.baseline(), *o.shard);
    chosen = std::move(part.configs);
    ctx.shard = std::move(part.shard);
    log(fmt::format("shard {}/{}: {} of {} variants", o.shard->index, o.shard->count, chosen.size(), ctx.shard->variants));
  }
  if (chosen.size() > o.max_variants)
    throw InputError(
        fmt::format("{} {}: {} variants ({}) are more than --max-variants {} a run compiles and times (each "
                    "keeps its record in memory; at {:.1f} s a compile, {} of one core); {}",
                    o.problem, shape.describe(), chosen.size(), chosen_how, o.max_variants, kSecondsPerCompile,
                    format_duration(kSecondsPerCompile * static_cast<double>(chosen.size())), max_variants_remedy(o)));
  if (compile_only) say_compile_only();
}

// A compile-only sweep says, once its variants are counted, how long it may take and where its
// results go, before anything compiles (issue 34); with more than a sample, how to make it short.
void PassRun::say_compile_only() const {
  const int jobs = CompilePool::jobs_for(o.jobs);
  const double seconds = kSecondsPerCompile * static_cast<double>(chosen.size()) / jobs;
  const auto dir = o.out_dir / ("compile-only-" + arch_name(cc)) / run.problem;
  const bool sample = o.budget <= 0 && chosen.size() > kSuggestedSample;
  log(
      fmt::format("compile-only sweep: {} variants for {} on {} compile job(s), about {} ({:.1f} s a compile a job; "
                  "less from the compile cache), results into {}/{}",
                  chosen.size(), arch_name(cc), jobs, format_duration(seconds), kSecondsPerCompile, dir.string(),
                  sample ? fmt::format("; --budget {} compiles a sample", kSuggestedSample) : std::string()));
}

// Records for every variant up front: an interrupted run shows what was never reached.
void PassRun::lower_variants() {
  ProgressLog lowering(log, "lowering the variants");
  for (const Config& c : chosen) {
    lowering.tick(lowered.size(), chosen.size(), "");
    VariantRecord r;
    r.name = space.name(c);
    r.params = space.to_json(c);
    r.baseline = c == space.baseline();
    Lowered l = space.lower(c, shape, limits);
    for (const auto& k : l.launches)
      r.launches.push_back(
          {{"kernel", k.name_expression}, {"grid", k.grid}, {"block", k.block}, {"dynamic_smem_bytes", k.dynamic_smem}});
    run.variants.push_back(std::move(r));
    lowered.push_back(std::move(l));
  }
  n = run.variants.size();
  find_baseline();
  log(fmt::format("{} {}: {} variants ({}), {} compile jobs, {}", o.problem, shape.describe(), n, chosen_how, ctx.jobs,
                  run.device ? run.device->name + " (" + ctx.arch + ")" : ctx.arch + ", compile only"));
}

// The baseline among the variants; else, in a search pass that defers it, its compile started on a
// thread of its own (the last pass times it); else a note that no speedup will be reported.
void PassRun::find_baseline() {
  const auto it = std::find_if(run.variants.begin(), run.variants.end(), [](const auto& v) { return v.baseline; });
  if (it != run.variants.end()) {
    run.baseline = it->name;
    baseline_index = static_cast<std::size_t>(it - run.variants.begin());
  } else if (pass && pass->defer_baseline && pass->search_only) {
    if (!pass->baseline_compile.joinable() &&
        std::find(pass->all.begin(), pass->all.end(), space.baseline()) != pass->all.end())
      pass->baseline_compile =
          std::jthread([request = compile_request(space.lower(space.baseline(), shape, limits), ctx.compile_options),
                        cache = compile_cache_for(o.no_cache, o.cache_dir), jobs = o.jobs] {
            const CompilePool baseline_pool(cache, jobs, nullptr);
            bool cached = false;
            (void)baseline_pool.compile(request, &cached);
          });
  } else if (const std::string violated = space.violated_constraint(space.baseline(), shape, limits); !violated.empty()) {
    log(fmt::format("note: the baseline violates '{}' at this shape; no speedup will be reported", violated));
  } else {
    log("note: the baseline is not among this run's variants; no speedup will be reported");
  }
}

// The worker process starts now: its data and float64 reference are prepared while compilation runs.
// A later pass of an adaptive search keeps the worker of the first (gpu holds it).
void PassRun::start_worker() {
  ctx.isolation.test_hooks = worker_test_hooks();
  if (!gpu)
    for (const auto& h : ctx.isolation.test_hooks) log("test hook active: " + h);
  if (run.timed && gpu) {
    gpu->rebind(ctx);
  } else if (run.timed) {
    ctx.isolation.worker = fake ? "fake (TUNE_WORKER_FAKE: synthetic results, nothing measured)" : "process";
    WorkerInit init{problem.file().string(), shape, o.seed, o.device};
    init.max_smem_per_block = limits.max_smem_per_block;
    // reference.py runs twice on the parity data unless this reference was seen to repeat itself.
    // The identity open_outputs recorded: reference.py and its modules are not read again.
    auto memo = ReferenceRepeatMemo::open(verdict_cache_for(o.no_cache, o.cache_dir), problem, ctx.reference_identity);
    init.check_reference = !memo || !memo->known();
    gpu.emplace(std::move(init), o.variant_timeout_s, ctx, log);
    if (memo) gpu->on_reference_checked([memo = std::move(*memo)] { memo.remember(); });
  }
  if (run.timed) gpu->start();
}

}  // namespace tune
