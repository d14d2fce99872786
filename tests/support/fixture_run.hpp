#pragma once
// A synthetic result, labelled as a fixture everywhere it appears: never a measurement.
#include "tune/record.hpp"
#include "tune/space.hpp"
#include "tune/tune.hpp"

namespace tune {

// A timing whose statistics sit around the median as one sample set's do (min <= q1 <= median <= q3
// <= max): the readers of results refuse any other order.
inline void set_median(TimingRecord& t, double median) {
  t.min_us = median * 0.96;
  t.q1_us = median * 0.98;
  t.median_us = t.mean_us = median;
  t.q3_us = median * 1.02;
  t.max_us = median * 1.04;
}

inline RunRecord fixture_run() {
  RunRecord run;
  run.problem = "contact";
  run.shape = Shape({{"B", 4}, {"N", 64}, {"C", 64}, {"H", 32}});
  run.seed = 5;
  run.timed = true;
  run.complete = true;
  run.context.tool_version = "0.0.0-test";
  run.context.git_commit = "fixture";
  run.context.command_line = "tune --problem contact --B 4 --N 64 /* fixture */";
  run.context.started_at = "2026-01-01T00:00:00Z";
  run.context.nvrtc_version = "13.0";
  run.context.arch = "sm_90";
  run.context.compile_options = {"-arch=sm_90", "-std=c++17"};
  DeviceInfo d;
  d.name = "Fixture GPU 9000";
  d.uuid = "GPU-00000000-0000-0000-0000-000000000000";
  d.cc_major = 9;
  d.sm_count = 132;
  d.max_threads_per_block = 1024;  // the configurations' constraints read the device's limits
  d.max_smem_per_block_optin = 232448;
  run.device = d;
  const Space space = load_space("contact", std::nullopt);
  VariantRecord base;
  base.params = space.to_json(space.baseline());
  base.name = space.name(space.baseline());
  base.baseline = true;
  base.status = Status::kPassed;
  base.resources["k"] = Resources{40, 0, 0, 0, 0, 1};
  base.parity = ParityRecord{};
  base.parity->elements = 10;
  base.timing = TimingRecord{};
  base.timing->profile = "strict";
  set_median(*base.timing, 30);
  base.timing->noise = 0.01;
  base.timing->samples = 10;
  base.launches.push_back({{"kernel", "contact_kernel<1>"}, {"grid", {1, 1, 1}}, {"block", {128, 1, 1}}});
  base.gate = GateRecord{};  // a finished run's winner went through the gate
  base.gate->verdict = GateVerdict::kSafe;
  base.gate->reason = "fixture";
  run.variants.push_back(base);
  VariantRecord bad = base;
  bad.gate.reset();
  bad.params["block"] = 64;
  bad.name = space.name(space.from_json(bad.params));
  bad.baseline = false;
  bad.status = Status::kIncorrect;
  bad.timing.reset();
  bad.parity->worst_value = std::nullopt;  // NaN output: null, never NaN in JSON
  bad.parity->max_abs_error = std::nan("");
  run.variants.push_back(bad);
  run.winner = base.name;
  run.baseline = base.name;
  run.speedup = 1.0;
  return run;
}

}  // namespace tune
