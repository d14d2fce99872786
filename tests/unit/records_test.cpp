#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <vector>

#include <fmt/format.h>

#include "support/fixture_run.hpp"
#include "tune/errors.hpp"
#include "tune/io.hpp"
#include "tune/problem.hpp"
#include "tune/record.hpp"
#include "tune/tune.hpp"

namespace tune {
namespace {

// The name pick_winner gives (nullopt when no variant may win).
std::optional<std::string> picked_name(const tune::RunRecord& run) {
  const auto picked = tune::pick_winner(run);
  return picked ? std::optional<std::string>(picked->name) : std::nullopt;
}

// Issue 34: a record's variants are lowered again (header, check) with the limits they were lowered
// with: the device's as recorded, or a compile-only run's target arch; never a hidden sm_90.
TEST(Records, TheLimitsOfARecordAreItsDevicesOrItsCompileOnlyTargets) {
  RunRecord run = fixture_run();
  run.device->sm_count = 108;
  run.device->max_smem_per_block_optin = 167936;
  run.device->max_threads_per_block = 1024;
  const RunRecord back = run_from_json(to_json(run));
  EXPECT_EQ(back.limits().sm_count, 108);
  EXPECT_EQ(back.limits().max_smem_per_block, 167936);
  EXPECT_EQ(back.limits().max_threads_per_block, 1024);
  EXPECT_EQ(back.limits().compute_capability, 90);
  run.device.reset();
  run.timed = false;
  run.context.arch = "sm_80";
  EXPECT_EQ(run.limits().sm_count, DeviceLimits::for_arch(80).sm_count);
  EXPECT_EQ(run.limits().max_smem_per_block, DeviceLimits::for_arch(80).max_smem_per_block);
  run.context.arch = "compute_90";
  EXPECT_THROW((void)run.limits(), InputError);
}

TEST(Records, JsonRoundTripKeepsEverythingAndTheSchemaVersion) {
  const RunRecord run = fixture_run();
  const auto j = to_json(run);
  EXPECT_EQ(j.at("schema_version"), kResultSchemaVersion);
  const std::string text = j.dump();
  EXPECT_EQ(text.find("NaN"), std::string::npos);
  const RunRecord back = run_from_json(nlohmann::ordered_json::parse(text));
  EXPECT_EQ(to_json(back).dump(), text);
  EXPECT_EQ(back.variants.size(), 2u);
  EXPECT_EQ(back.variants[1].status, Status::kIncorrect);
  EXPECT_FALSE(back.variants[1].parity->worst_value.has_value());
  EXPECT_EQ(back.variants[0].max_registers(), 40);
}

// Issue 38: the gate verdict, the shard split and the search label are enums with one table of
// names each; the strings a record holds are those they always were, and read back to the same value.
TEST(Records, EnumFieldsWriteTheirRecordStringsAndReadBack) {
  EXPECT_EQ(gate_verdict_names(), (std::vector<std::string>{"safe", "unsafe", "incorrect", "unchecked"}));
  EXPECT_EQ(shard_split_names(), (std::vector<std::string>{"items", "variants"}));
  EXPECT_EQ(search_label_names(), (std::vector<std::string>{"exhaustive", "random", "halving", "random+halving", "warm",
                                                            "warm+halving", "model", "warm+model"}));
  for (const auto& name : gate_verdict_names()) EXPECT_EQ(to_string(gate_verdict_from_string(name)), name);
  for (const auto& name : shard_split_names()) EXPECT_EQ(to_string(shard_split_from_string(name)), name);
  for (const auto& name : search_label_names()) EXPECT_EQ(to_string(search_label_from_string(name)), name);
  EXPECT_EQ(to_string(GateVerdict::kNone), "") << "one check's findings in the verdict cache carry no verdict yet";
  EXPECT_EQ(gate_verdict_from_string(""), GateVerdict::kNone);
  EXPECT_THROW((void)gate_verdict_from_string("Safe"), InputError);
  EXPECT_THROW((void)shard_split_from_string("shapes"), InputError);
  EXPECT_THROW((void)search_label_from_string("model+halving"), InputError);
  EXPECT_EQ(with_halving(SearchLabel::kExhaustive), SearchLabel::kHalving);
  EXPECT_EQ(with_halving(SearchLabel::kRandom), SearchLabel::kRandomHalving);
  EXPECT_EQ(with_halving(SearchLabel::kWarm), SearchLabel::kWarmHalving);

  RunRecord run = fixture_run();
  run.context.search = SearchLabel::kWarmHalving;
  ShardRecord shard;
  shard.count = 2;
  shard.split = ShardSplit::kVariants;
  shard.run_key = "0123456789abcdef";
  run.context.shard = shard;
  run.variants[0].gate = GateRecord{};
  run.variants[0].gate->verdict = GateVerdict::kUnchecked;
  run.variants[0].gate->not_run = {"outputs"};
  run.context.gate.allow_unchecked = true;  // an unchecked winner, by consent
  const auto j = to_json(run);
  EXPECT_EQ(j.at("context").at("search").at("strategy"), "warm+halving");
  EXPECT_EQ(j.at("context").at("shard").at("split"), "variants");
  EXPECT_EQ(j.at("variants").at(0).at("gate").at("verdict"), "unchecked");
  const RunRecord back = run_from_json(nlohmann::ordered_json::parse(j.dump()));
  EXPECT_EQ(back.context.search, SearchLabel::kWarmHalving);
  EXPECT_EQ(back.context.shard->split, ShardSplit::kVariants);
  EXPECT_EQ(back.variants[0].gate->verdict, GateVerdict::kUnchecked);
  EXPECT_EQ(to_json(back).dump(), j.dump());
}

// Issue 35: a record older than its problem's dtype variable (contact's T, default float32) reads
// as its problem's record with the default, in the one reader that tune header and tune export
// torch go through; read_result keeps the shape as recorded, and a recorded T stays as it is.
TEST(Records, AnOlderRecordReadsAsItsProblemsRecordWithTheDtypeDefault) {
  const auto path = std::filesystem::temp_directory_path() / "tune_older_record.json";
  std::ofstream(path) << to_json(fixture_run()).dump();
  EXPECT_FALSE(read_result(path).shape.has_dtype("T"));
  const RunRecord older = read_problem_result(path);
  ASSERT_TRUE(older.shape.has_dtype("T"));
  EXPECT_EQ(older.shape.dtype("T"), DType::kFloat32);
  EXPECT_EQ(older.shape.tag(), "B4_N64_C64_H32");
  RunRecord typed = fixture_run();
  typed.shape.set_dtype("T", DType::kBFloat16);
  std::ofstream(path) << to_json(typed).dump();
  EXPECT_EQ(read_problem_result(path).shape.dtype("T"), DType::kBFloat16);
  std::filesystem::remove(path);
}

// An interrupted run names the best variant it had timed, before any gate: its record is valid
// (tune header refuses to ship it); a finished run's winner without a verdict is not.
TEST(Records, OnlyAnInterruptedRunNamesAWinnerTheGateNeverSaw) {
  RunRecord run = fixture_run();
  run.variants[0].gate.reset();
  run.variants[0].timing->profile = "search";
  EXPECT_THROW((void)run_from_json(to_json(run)), InputError);
  run.context.interrupted = true;
  EXPECT_EQ(run_from_json(to_json(run)).winner, run.winner);
}

// Adversarial round 4: a record whose shape names a dtype its tensors did not run in (float32
// tensors, shape.T bfloat16) is no record of the bfloat16 kernels, and was shipped as one.
TEST(Records, AShapeDtypeThatItsTensorsDidNotRunInIsRefused) {
  const auto path = std::filesystem::temp_directory_path() / "tune_dtype_conflict_record.json";
  RunRecord run = fixture_run();
  run.context.tensors = {{"pair_repr", "input", "float32", {4, 64, 64, 64}}};
  std::ofstream(path) << to_json(run).dump();
  EXPECT_EQ(read_problem_result(path).shape.dtype("T"), DType::kFloat32);  // the default, as its tensors ran
  run.shape.set_dtype("T", DType::kBFloat16);
  std::ofstream(path) << to_json(run).dump();
  try {
    (void)read_problem_result(path);
    ADD_FAILURE() << "a float32 record labelled bfloat16 was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("shape.T is bfloat16, but context.tensors records pair_repr as float32"),
              std::string::npos)
        << e.what();
  }
  std::filesystem::remove(path);
}

// Issue 36: the torch record round-trips, and the winner is set against it graph against graph.
TEST(Records, TheTorchRecordRoundTripsAndComparesGraphAgainstGraph) {
  RunRecord run = fixture_run();
  for (auto& v : run.variants)
    if (v.name == *run.winner) v.timing->graph_mean_us = 20;
  EXPECT_EQ(torch_comparison(run), "");  // no torch record
  TorchRecord t;
  t.status = "measured";
  t.torch_version = "2.9.0";
  t.device = "NVIDIA H200";
  t.modes = {"eager", "compile"};
  t.method = {{"graph_calls", 20}};
  t.eager = TorchModeRecord{TorchTimes{200, 50.0, 49, 51, 48, 50}, TorchTimes{200, 60.0, 59, 61, 58, 60}, "", {}};
  t.compile = TorchModeRecord{TorchTimes{200, 25.0, 24, 26, 23, 25}, std::nullopt, "events: synthetic", 12.5};
  run.torch = t;
  const std::string text = to_json(run).dump();
  const RunRecord back = run_from_json(nlohmann::ordered_json::parse(text));
  EXPECT_EQ(to_json(back).dump(), text);
  ASSERT_TRUE(back.torch && back.torch->compile && back.torch->compile->graph);
  EXPECT_EQ(back.torch->compile->graph->median_us, 25.0);
  EXPECT_EQ(back.torch->compile->compile_seconds, 12.5);
  EXPECT_FALSE(back.torch->compile->events.has_value());
  const VariantRecord* w = run.find(*run.winner);
  ASSERT_TRUE(w && w->timing && w->timing->graph_mean_us > 0);
  const double g = w->timing->graph_mean_us;
  EXPECT_EQ(torch_comparison(run),
            fmt::format("{:.2f}x over torch.compile (graph 25.00 us against the winner's {:.2f} us), {:.2f}x over "
                        "PyTorch eager (graph 50.00 us against the winner's {:.2f} us)",
                        25.0 / g, g, 50.0 / g, g));
  auto j = to_json(t);
  j["eager"]["graph"]["median_us"] = 0;
  EXPECT_THROW(validate_torch_record(j), InputError);
  j = to_json(t);
  j["status"] = "skipped";
  EXPECT_THROW(validate_torch_record(j), InputError);  // skipped without its reason
}

TEST(Records, OtherSchemaVersionsAndTruncatedFilesAreRefusedWithAReason) {
  auto j = to_json(fixture_run());
  j["schema_version"] = 99;
  EXPECT_THROW((void)run_from_json(j), InputError);
  // A version that an int would wrap to 1, a fraction, a string: refused, naming the value.
  for (const auto& bad : {nlohmann::ordered_json(4294967297LL), nlohmann::ordered_json(1.5), nlohmann::ordered_json("1")}) {
    j["schema_version"] = bad;
    try {
      (void)run_from_json(j);
      ADD_FAILURE() << bad.dump();
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("schema_version: " + bad.dump() + " is not supported"), std::string::npos)
          << e.what();
    }
  }
  auto k = to_json(fixture_run());
  k.erase("variants");
  EXPECT_THROW((void)run_from_json(k), InputError);
  const auto path = std::filesystem::temp_directory_path() / "tune_truncated.json";
  const std::string text = to_json(fixture_run()).dump();
  std::ofstream(path) << text.substr(0, text.size() / 2);
  try {
    (void)read_result(path);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos);
  }
}

// One validation for every reader (issue 22, item 11): what a hand-edit breaks is named by its JSON
// path, in one line that says what to do; tests/report/readers_test.py runs a table of such edits
// through every reader.
TEST(Records, AHandEditedRecordIsRefusedNamingItsJsonPath) {
  using Json = nlohmann::ordered_json;
  const Json good = to_json(fixture_run());
  (void)run_from_json(good);
  const std::vector<std::pair<std::function<void(Json&)>, std::string>> edits = {
      {[](Json& j) { j["shape"]["N"] = 0; }, "shape.N: 0 is below 1"},
      {[](Json& j) { j["shape"].erase("H"); }, "shape: has the dimensions B, N, C, but problem contact has B, N, C, H"},
      {[](Json& j) { j["variants"][0]["timing"]["median_us"] = -30.0; },
       "variants[0].timing.median_us: -30.0 is not a positive number"},
      {[](Json& j) { j["variants"][0]["timing"]["median_us"] = "30"; },
       "variants[0].timing.median_us: \"30\" is not a number"},
      {[](Json& j) { j["variants"][0]["timing"]["median_us"] = nullptr; },
       "variants[0].timing.median_us: null is not a number"},
      {[](Json& j) { j["variants"][0]["status"] = "crashed"; },
       "summary.winner: \"" + fixture_run().variants[0].name + "\" has status crashed"},
      {[](Json& j) {
         j["variants"].push_back(j["variants"][0]);
         j["variants"][2]["timing"]["median_us"] = 29.5;
       },
       "variants[2].name: \"" + fixture_run().variants[0].name +
           "\" is also the name of variants[0], with different contents"},
      {[](Json& j) { j["summary"]["speedup_over_baseline"] = 3.0; },
       "summary.speedup_over_baseline: 3 is not the baseline's median over the winner's (1)"},
      {[](Json& j) { j["device"]["compute_capability"] = "99999999999.0"; },
       "device.compute_capability: \"99999999999.0\" does not look like 9.0"},
      {[](Json& j) { j["context"]["jobs"] = 4294967297LL; }, "context.jobs: 4294967297 is outside 1 to 2147483647"},
      {[](Json& j) { j["context"]["gate"]["tool_s"]["memcheck"] = -1.0; }, "context.gate.tool_s.memcheck: -1.0 is negative"},
      {[](Json& j) { j["context"]["gate"]["cache_hits"] = -2; }, "context.gate.cache_hits: -2 is outside 0 to 2147483647"},
      {[](Json& j) {
         j["variants"][0]["gate"] = {{"verdict", "safe"}, {"cached", "outputs"}};
       },
       "variants[0].gate.cached: \"outputs\" is not an array"},
      // Adversarial round 4: a winner the gate or the strict re-measure never saw, and a NaN output
      // called passed, were shipped.
      {[](Json& j) { j["variants"][0]["gate"] = nullptr; },
       "summary.winner: \"" + fixture_run().variants[0].name + "\" has no gate verdict"},
      {[](Json& j) { j["variants"][0]["timing"]["profile"] = "search"; },
       "summary.winner: \"" + fixture_run().variants[0].name + "\" was not timed by the strict re-measure"},
      {[](Json& j) { j["variants"][0]["parity"]["non_finite"] = 5; },
       "variants[0].parity: 5 of 10 outputs are not finite, but the status is passed"},
  };
  for (const auto& [edit, expected] : edits) {
    Json j = good;
    edit(j);
    try {
      (void)run_from_json(j);
      ADD_FAILURE() << expected;
    } catch (const InputError& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.rfind(expected, 0), 0u) << what;
      EXPECT_NE(what.find("; restore what tune wrote, or re-tune"), std::string::npos) << what;
    }
  }
}

// Nothing measured is refused: every result of record (results/, plain and .json.gz as they are
// kept; logs and run folders left the tree with issue 23) passes the validation.
TEST(Records, EveryResultOfRecordPassesTheValidation) {
  int plain = 0, gzipped = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(std::filesystem::path(TUNE_REPO_DIR) / "results")) {
    const std::string name = e.path().filename().string();
    if (!e.is_regular_file() || name.find(".json") == std::string::npos || name.ends_with(".space.json")) continue;
    if (name.ends_with(".json.gz")) {
      const RunRecord run = read_result(e.path());  // every .json.gz there is a result
      EXPECT_TRUE(run.timed && run.winner) << e.path();
      ++gzipped;
      continue;
    }
    if (!name.ends_with(".json")) continue;
    const auto j = nlohmann::ordered_json::parse(std::ifstream(e.path()));
    if (!j.is_object() || j.value("kind", "") != "tune.result") continue;
    EXPECT_NO_THROW((void)read_result(e.path())) << e.path();
    ++plain;
  }
  // The files of record (issue 23): the results over 256 KB compressed (7 shapes, 3 plants, 2 gate runs).
  EXPECT_GE(plain + gzipped, 12);
  EXPECT_GE(gzipped, 12);
}

// One shape, one file (issue 23): tune verify and tune report find <shape>.json, else the
// <shape>.json.gz a result of record is kept as, and refuse the two side by side.
TEST(Records, AResultFileIsTheJsonOrTheJsonGzNeverBoth) {
  const auto dir = std::filesystem::temp_directory_path() / "tune_find_result";
  std::filesystem::remove_all(dir);
  const auto json = dir / "B4_N64_C64_H32.json";
  EXPECT_EQ(find_result_file(json), std::nullopt);
  write_file_atomic(compressed_result_path(json), "gz");
  EXPECT_EQ(find_result_file(json), dir / "B4_N64_C64_H32.json.gz");
  write_file_atomic(json, "{}");
  try {
    (void)find_result_file(json);
    ADD_FAILURE() << "two files of one shape were taken";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), json.string() +
                                         " and B4_N64_C64_H32.json.gz: two results files of one shape; keep "
                                         "one (a tune run that replaces the .json.gz removes it)");
  }
  std::filesystem::remove(compressed_result_path(json));
  EXPECT_EQ(find_result_file(json), json);
  std::filesystem::remove_all(dir);
}

TEST(Records, AtomicWriteReplacesTheFileWhole) {
  const auto path = std::filesystem::temp_directory_path() / "tune_atomic" / "x.json";
  write_file_atomic(path, "one");
  write_file_atomic(path, "two");
  std::ifstream in(path);
  std::string s;
  in >> s;
  EXPECT_EQ(s, "two");
  EXPECT_FALSE(std::filesystem::exists(path.string() + ".tmp"));
}

TEST(Records, DeviceSlugs) {
  EXPECT_EQ(device_slug("NVIDIA H200"), "h200");
  EXPECT_EQ(device_slug("NVIDIA GeForce RTX 4090"), "rtx-4090");
  EXPECT_EQ(device_slug("NVIDIA H100 80GB HBM3"), "h100-80gb-hbm3");
}

TEST(Header, HoldsTheWinnerAsConstexprValuesWithProvenance) {
  const RunRecord run = fixture_run();
  const Space space = load_space("contact", std::nullopt);
  const std::string h = generate_header(run, space);
  EXPECT_NE(h.find("#pragma once"), std::string::npos);
  EXPECT_NE(h.find("namespace contact"), std::string::npos);
  EXPECT_NE(h.find("inline constexpr long long kShapeN = 64;"), std::string::npos);
  EXPECT_NE(h.find("inline constexpr int kBlock = 128;"), std::string::npos) << h;
  EXPECT_NE(h.find("Fixture GPU 9000"), std::string::npos);
  EXPECT_NE(h.find("Command: tune --problem contact --B 4 --N 64 /* fixture * /"), std::string::npos) << h;
  EXPECT_EQ(generate_header(run, space), h);                // deterministic
  EXPECT_EQ(h.find("against PyTorch"), std::string::npos);  // no torch record
  RunRecord with_torch = run;
  for (auto& v : with_torch.variants)
    if (v.name == *run.winner) v.timing->graph_mean_us = 10;
  with_torch.torch =
      TorchRecord{.status = "measured", .compile = TorchModeRecord{TorchTimes{20, 40.0, 39, 41, 38, 40}, {}, "", {}}};
  EXPECT_NE(generate_header(with_torch, space)
                .find("//   against PyTorch: 4.00x over torch.compile (graph 40.00 us against the winner's 10.00 us)\n"),
            std::string::npos)
      << generate_header(with_torch, space);
  RunRecord untimed = run;
  untimed.timed = false;
  EXPECT_THROW((void)generate_header(untimed, space), InputError);
}

// Text from a results file never becomes code: the instantiations come from the configuration,
// strings are escaped, comment text cannot close its line or its comment, and a median that is not
// a positive number is refused (issue 22, item 10).
TEST(Header, HostileTextInAResultStaysInertAndABadMedianIsRefused) {
  RunRecord run = fixture_run();
  const Space space = load_space("contact", std::nullopt);
  run.device->name = "Evil GPU\nint evil_device() { return 1; }";
  run.winner_rule = "rule */ int evil_rule; /*";
  run.context.finished_at = "2026\nint evil_time;";
  for (auto& v : run.variants)
    for (auto& l : v.launches) l["kernel"] = "contact_kernel<1>; int evil_kernel() { return 2; }";
  const std::string h = generate_header(run, space);
  for (const char* evil : {"int evil_kernel", "\nint evil_device", "\nint evil_time", "*/ int evil_rule"})
    EXPECT_EQ(h.find(evil), std::string::npos) << evil << "\n" << h;
  const Lowered lowered = space.lower(space.from_json(run.find(*run.winner)->params), run.shape, run.limits());
  EXPECT_NE(h.find("    \"" + lowered.launches[0].name_expression + "\",\n"), std::string::npos) << h;
  EXPECT_NE(h.find("kDeviceName[] = \"Evil GPU int evil_device() { return 1; }\";"), std::string::npos) << h;
  for (const double bad : {std::nan(""), -1.0, 0.0}) {
    RunRecord b = fixture_run();
    b.variants[0].timing->median_us = bad;
    EXPECT_THROW((void)generate_header(b, space), InputError) << bad;
  }
}

}  // namespace
}  // namespace tune

namespace tune {
namespace {

TEST(Winner, ATieGoesToFewerRegistersAndUnknownRegistersComeLast) {
  RunRecord run = fixture_run();
  run.variants.resize(1);
  VariantRecord known = run.variants[0];  // passed, 30 us, 40 registers
  known.name = "z-known";
  VariantRecord unknown = known;
  unknown.name = "a-unknown";
  unknown.resources.clear();         // no report: max_registers() == -1
  unknown.timing->median_us = 29.9;  // fastest, but within the 0.5 % tie band
  run.variants = {known, unknown};
  EXPECT_EQ(picked_name(run), "z-known");
  EXPECT_NE(pick_winner(run)->rule.find("fewer registers"), std::string::npos);
  run.variants[1].timing->median_us = 20;  // clearly faster: no tie
  EXPECT_EQ(picked_name(run), "a-unknown");
}

// One method (issue 37): once finalists were re-measured strictly, a variant timed only by the
// search neither wins nor ties with them (on the H200 an unchecked runner-up with fewer registers
// tied by its search median and called a second gate round); when every strict one is out (the gate
// failed them), the search-timed ones compete again.
TEST(Winner, StrictlyReMeasuredFinalistsAreComparedOnlyWithEachOther) {
  RunRecord run = fixture_run();
  run.variants.resize(1);
  VariantRecord finalist = run.variants[0];  // passed, 30 us, 40 registers
  finalist.name = "z-finalist";
  finalist.baseline = false;
  finalist.search_timing = finalist.timing;
  VariantRecord searched = run.variants[0];
  searched.name = "a-searched";
  searched.baseline = false;
  searched.resources.begin()->second.registers = 8;
  for (const double median : {29.95, 25.0}) {  // within the tie band, and clearly faster by the search's method
    searched.timing->median_us = median;
    run.variants = {finalist, searched};
    EXPECT_EQ(picked_name(run), "z-finalist") << median;
  }
  EXPECT_NE(pick_winner(run)->rule.find("strictly re-measured"), std::string::npos);
  run.variants[0].status = Status::kUnsafe;  // the gate failed the only strict one
  EXPECT_EQ(picked_name(run), "a-searched");
  // The baseline, strict for its speedup, does not keep the rule alone: once the finalist failed,
  // the faster variant the search timed is the would-be winner (the gate gates it next), and a
  // slower one leaves the baseline the winner.
  VariantRecord baseline = finalist;
  baseline.name = "m-baseline";
  baseline.baseline = true;
  baseline.timing->median_us = baseline.search_timing->median_us = 28.0;
  run.variants.push_back(baseline);
  EXPECT_EQ(picked_name(run), "a-searched");
  run.variants[1].timing->median_us = 35.0;
  EXPECT_EQ(picked_name(run), "m-baseline");
  run.variants[0].status = Status::kPassed;  // with a finalist that may win, strict medians only
  run.variants[1].timing->median_us = 25.0;
  EXPECT_EQ(picked_name(run), "m-baseline") << "28 us strict against the finalist's 30 us strict";
}

// The tie band is the uncertainty of the medians (their notches), not the samples' spread: 2.9 %
// apart with a 6 % interquartile range is a clear difference over thousands of samples (the faster
// wins though it has more registers), and a tie over ten (fewer registers win).
TEST(Winner, MediansTieWithinTheirNotchesNotWithinTheSamplesSpread) {
  RunRecord run = fixture_run();
  run.variants.resize(1);
  VariantRecord fast = run.variants[0];
  fast.name = "fast";
  fast.timing->median_us = 19.904;
  fast.timing->q1_us = 19.584;
  fast.timing->q3_us = 20.352;
  fast.resources.begin()->second.registers = 96;
  VariantRecord lean = fast;
  lean.name = "lean";
  lean.timing->median_us = 20.48;
  lean.timing->q1_us = 20.192;
  lean.timing->q3_us = 21.408;
  lean.resources.begin()->second.registers = 64;
  for (const int samples : {5592, 10}) {
    run.variants = {fast, lean};
    for (auto& v : run.variants) v.timing->samples = samples;
    EXPECT_EQ(picked_name(run), samples > 1000 ? "fast" : "lean") << samples << " samples";
  }
  EXPECT_NE(pick_winner(run)->rule.find("notch"), std::string::npos);
}

// A NaN compares false both ways: taken for the best, everything ties with it; taken for a
// contender, it ties with the best. Neither may happen, nor may an infinite, zero or negative median win.
TEST(Winner, NonFiniteOrNonPositiveMediansNeverWinTieOrGiveASpeedup) {
  RunRecord run = fixture_run();
  run.variants.resize(1);
  VariantRecord good = run.variants[0];  // passed, 30 us, 40 registers
  good.name = "z-good";
  good.baseline = false;
  for (const double bad_median : {std::nan(""), std::numeric_limits<double>::infinity(), 0.0, -5.0}) {
    VariantRecord bad = good;
    bad.name = "a-bad";                           // the smaller name wins a tie
    bad.resources.begin()->second.registers = 8;  // and so do fewer registers
    bad.timing->median_us = bad_median;
    for (const bool bad_first : {true, false}) {
      run.variants = bad_first ? std::vector{bad, good} : std::vector{good, bad};
      EXPECT_EQ(picked_name(run), "z-good") << bad_median << (bad_first ? " first" : " second");
    }
    run.variants = {bad};
    EXPECT_EQ(picked_name(run), std::nullopt) << bad_median;
    // A baseline without a usable median gives no speedup.
    VariantRecord base = bad;
    base.name = "baseline";
    base.baseline = true;
    run.variants = {base, good};
    run.baseline = "baseline";
    name_winner(run);
    EXPECT_EQ(run.winner, "z-good") << bad_median;
    EXPECT_FALSE(run.speedup.has_value()) << bad_median;
    // A damaged interquartile range (NaN) widens no tie band.
    run.variants = {good, good};
    run.variants[1].name = "a-close";
    run.variants[1].timing->median_us = 31.5;  // 5 % slower: ties only under a wide band
    run.variants[1].timing->q1_us = std::nan("");
    EXPECT_EQ(picked_name(run), "z-good") << bad_median;
    EXPECT_FALSE(has_usable_timing(bad));
    EXPECT_TRUE(has_usable_timing(good));
  }
  // The strict re-measure's and halving's selection leaves such medians out (a NaN in the sort is
  // undefined behaviour).
  EXPECT_EQ(best_by_median({std::nan(""), 3.0, -1.0, 0.0, std::numeric_limits<double>::infinity(), 2.0}, 4),
            (std::vector<std::size_t>{5, 1}));
}

// A shape with a dtype variable: the single-result header names its dtype (issue 35).
TEST(Header, NamesTheShapesDtypeVariables) {
  RunRecord run = fixture_run();
  run.shape.set_dtype("T", DType::kBFloat16);
  const std::string h = generate_header(run, load_space("contact", std::nullopt));
  EXPECT_NE(h.find("inline constexpr const char kShapeT[] = \"bfloat16\";  // __nv_bfloat16\n"), std::string::npos) << h;
  EXPECT_EQ(generate_header(fixture_run(), load_space("contact", std::nullopt)).find("kShapeT"), std::string::npos);
}

// The headers of record (results/h200/<problem>/<shape>.hpp, written by the tune that measured
// them) regenerate byte for byte from their results: a problem without dtype variables gets the
// header it always had (issue 35). ln_linear_gelu's predate kSmCount and kSynthetic (an older tune).
TEST(Header, TheHeadersOfRecordRegenerateByteForByte) {
  for (const char* shape : {"contact/B4_N64_C64_H32", "contact/B2_N512_C64_H32", "contact/B1_N1024_C128_H32",
                            "scene_graph/B4_N24_D96_heads4_P16", "scene_graph/B16_N64_D256_heads8_P32"}) {
    const auto base = std::filesystem::path(TUNE_REPO_DIR) / "results/h200" / shape;
    const RunRecord run = read_result(base.string() + ".json.gz");
    const Space space = load_space(problem_spec_of(run), std::nullopt);
    std::ifstream in(base.string() + ".hpp", std::ios::binary);
    const std::string kept((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_FALSE(kept.empty()) << shape;
    std::string made = generate_header(run, space);
    // contact gained its dtype variable T after these were measured: its kernels are now
    // contact_kernel<float, ...> (the same machine code, shown by tools/cubin_identity.py), and
    // that is the only difference an older float32 record's header may have (a record tuned with T
    // names it, as its header does).
    if (std::string(shape).starts_with("contact/") && kept.find("contact_kernel<float,") == std::string::npos) {
      EXPECT_NE(made.find("contact_kernel<float,"), std::string::npos) << shape;
      for (std::size_t at; (at = made.find("contact_kernel<float,")) != std::string::npos;)
        made.replace(at, std::string("contact_kernel<float,").size(), "contact_kernel<");
    }
    EXPECT_EQ(made, kept) << shape;
  }
}

// tune header of contact's float32 record of record (older than T) and its bfloat16 one: read
// through read_problem_result, the older one is the entry of T's default, beside the bfloat16 one.
TEST(Header, AnOlderRecordMergesAsAnEntryOfItsDtypeVariablesDefault) {
  const auto dir = std::filesystem::path(TUNE_REPO_DIR) / "results/h200/contact";
  const std::string h = merge_result_files({dir / "B4_N64_C64_H32.json.gz", dir / "B4_N64_C64_H32_bfloat16.json.gz"},
                                           std::nullopt, /*allow_synthetic=*/false);
  EXPECT_NE(h.find("\"B4_N64_C64_H32\", {4, 64, 64, 32, DType::float32}"), std::string::npos) << h;
  EXPECT_NE(h.find("\"B4_N64_C64_H32_bfloat16\", {4, 64, 64, 32, DType::bfloat16}"), std::string::npos) << h;
}

}  // namespace
}  // namespace tune
