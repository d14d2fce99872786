// Sweeps, shards and tune merge on the host: item expansion, the split, and merging synthetic
// timed shards (fixtures, never measurements) back into the unsharded record.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include <unistd.h>

#include "support/fixture_run.hpp"
#include "tune/errors.hpp"
#include "tune/io.hpp"
#include "tune/problem.hpp"
#include "tune/sweep.hpp"

namespace tune {
namespace {

// This process's scratch folder, removed when the process ends.
struct ScratchRoot {
  std::filesystem::path dir = std::filesystem::temp_directory_path() / ("tune_sweep_test_" + std::to_string(::getpid()));
  ScratchRoot() = default;
  ScratchRoot(const ScratchRoot&) = delete;
  ScratchRoot& operator=(const ScratchRoot&) = delete;
  ~ScratchRoot() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

std::filesystem::path scratch(const std::string& name) {
  static const ScratchRoot root;
  const auto dir = root.dir / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no InputError)";
}

// --transfer's order: each problem's shapes together, cheapest first by the problem's own work
// counts (contact's grow with B and N squared), whatever order the lists or the file gave.
TEST(Sweep, TransferOrdersEachProblemsShapesCheapestFirst) {
  auto item = [](const std::string& problem, std::int64_t b, std::int64_t n) {
    return SweepItem{problem, {{"B", b}, {"N", n}}};
  };
  const std::vector<SweepItem> given{item("contact", 4, 64), item("scene_graph", 8, 24), item("contact", 1, 1024),
                                     item("contact", 4, 24), item("scene_graph", 4, 24), item("contact", 2, 512)};
  std::vector<std::string> order;
  for (const auto& w : order_for_transfer(resolve_items(given, std::nullopt))) order.push_back(w.item.describe());
  EXPECT_EQ(order, (std::vector<std::string>{"contact B=4 N=24", "contact B=4 N=64", "contact B=2 N=512",
                                             "contact B=1 N=1024", "scene_graph B=4 N=24", "scene_graph B=8 N=24"}));
  try {
    (void)order_for_transfer(resolve_items({item("contact", 4, 64), item("contact", 0, 64)}, std::nullopt));
    ADD_FAILURE() << "a shape the problem refuses was ordered";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("sweep item 1 (contact B=0 N=64): ", 0), 0u) << e.what();
  }
}

// A plan loads each problem's space once for all its shapes (a sweep file of 100,000 shapes held a
// space per shape: gigabytes before the first tune, adversarial round 3).
TEST(Sweep, TheShapesOfOneProblemShareOneLoadedSpace) {
  const auto work = resolve_items({SweepItem{"contact", {{"B", 4}, {"N", 64}}}, SweepItem{"contact", {{"B", 2}, {"N", 512}}},
                                   SweepItem{"scene_graph", {{"B", 4}, {"N", 24}}}},
                                  std::nullopt);
  ASSERT_EQ(work.size(), 3u);
  EXPECT_EQ(work[0].shape.get().shared_space, work[1].shape.get().shared_space);
  EXPECT_NE(work[0].shape.get().shared_space, work[2].shape.get().shared_space);
  EXPECT_EQ(&work[1].shape.get().space, work[1].shape.get().shared_space.get());
  EXPECT_EQ(work[1].shape.get().shape.at("N"), 512);
}

TEST(Sweep, ShardTextIsKOverN) {
  EXPECT_EQ(parse_shard("2/4").index, 2);
  EXPECT_EQ(parse_shard("2/4").count, 4);
  for (const char* bad : {"4/4", "-1/2", "1", "a/b", "1/0", "1/2/3", ""})
    EXPECT_NE(message_of([&] { parse_shard(bad); }).find("expected K/N"), std::string::npos) << bad;
}

TEST(Sweep, ListsExpandInTheProblemsDimensionOrderLastFastest) {
  // Given N before B: the items still go B-major, as the problem orders its dimensions.
  const auto items = expand_dims("contact", {{"N", {64, 256}}, {"B", {1, 4}}});
  ASSERT_EQ(items.size(), 4u);
  EXPECT_EQ(items[0].describe(), "contact B=1 N=64");
  EXPECT_EQ(items[1].describe(), "contact B=1 N=256");
  EXPECT_EQ(items[3].describe(), "contact B=4 N=256");
  EXPECT_EQ(expand_dims("contact", {}).size(), 1u);
  EXPECT_NE(message_of([] { expand_dims("contact", {{"N", {64, 64}}}); }).find("--N repeats a value"), std::string::npos);
  // A dtype variable's values by their names, not the codes they travel as.
  const std::int64_t f32 = dtype_flag_value(DType::kFloat32), bf16 = dtype_flag_value(DType::kBFloat16);
  EXPECT_NE(message_of([&] {
              expand_dims("contact", {{"T", {f32, bf16, f32}}});
            }).find("--T repeats a value (float32,bfloat16,float32)"),
            std::string::npos);
}

TEST(Sweep, ASweepFileExpandsEachEntryAndNamesTheFieldItRefuses) {
  const auto dir = scratch("file");
  auto write = [&](const std::string& text) {
    std::ofstream(dir / "s.json") << text;
    return dir / "s.json";
  };
  const auto items = load_sweep_file(
      write(R"({"items": [{"problem": "contact", "B": [1, 4], "N": 64}, {"problem": "scene_graph", "B": 2}]})"));
  ASSERT_EQ(items.size(), 3u);
  EXPECT_EQ(items[1].describe(), "contact B=4 N=64");
  EXPECT_EQ(items[2].describe(), "scene_graph B=2");
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"{", "not valid JSON"},
      {R"({"items": []})", "needs \"items\""},
      {R"({"items": [3]})", "items[0]: must be an object"},
      {R"({"items": [{"B": 1}]})", "items[0].problem: must be a string"},
      {R"({"items": [{"problem": "nope"}]})", "items[0].problem: unknown problem 'nope'"},
      {R"({"items": [{"problem": "contact", "D": 4}]})", "items[0].D: not a dimension of problem contact"},
      {R"({"items": [{"problem": "contact", "N": [1.5]}]})", "items[0].N: must be an integer"},
      {R"({"items": [{"problem": "contact", "N": []}]})", "items[0]: --N has no values"},
      // Adversarial round 6: a dtype's list is shown by its dtypes, and a dimension given a dtype, or
      // an integer that travels as a dtype's code, is refused here, not as --N float32 on its own line.
      {R"({"items": [{"problem": "contact", "N": 64, "T": []}]})",
       "items[0]: --T has no values; give one or more, e.g. --T float32,bfloat16"},
      {R"({"items": [{"problem": "contact", "N": "bfloat16"}]})",
       "items[0].N: \"bfloat16\" is not a dimension's value; a dimension is a positive integer"},
      {R"({"items": [{"problem": "contact", "N": -9223372036854775806}]})",
       "items[0].N: -9223372036854775806 is not a dimension's value"},
  };
  for (const auto& [text, needle] : bad) {
    const std::string m = message_of([&] { load_sweep_file(write(text)); });
    EXPECT_NE(m.find("s.json"), std::string::npos) << m;
    EXPECT_NE(m.find(needle), std::string::npos) << text << " -> " << m;
  }
  EXPECT_NE(message_of([&] { load_sweep_file(dir / "missing.json"); }).find("cannot be read"), std::string::npos);
}

TEST(Sweep, ShardsOfASweepTakeEveryNthItemAndOneShapeSplitsItsVariants) {
  const auto items = expand_dims("contact", {{"B", {1, 2, 3, 4, 5}}, {"N", {64}}});
  const auto part = plan_sweep(resolve_items(items, std::nullopt), {1, 3}, "key");
  ASSERT_EQ(part.size(), 2u);
  EXPECT_EQ(part[0].index, 1u);
  EXPECT_EQ(part[1].index, 4u);
  EXPECT_EQ(part[1].shard->split, ShardSplit::kItems);
  EXPECT_EQ(part[1].shard->items, 5);
  EXPECT_EQ(part[1].shard->run_key, "key");
  EXPECT_FALSE(
      plan_sweep(resolve_items(items, std::nullopt), {0, 1}, "key").front().shard.has_value());  // 0/1: an ordinary run
  const auto one = plan_sweep(resolve_items({items[0]}, std::nullopt), {2, 3}, "key");
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].shard->split, ShardSplit::kVariants);
  EXPECT_NE(message_of([&] {
              plan_sweep(resolve_items({items[0], items[0]}, std::nullopt), {0, 1}, "k");
            }).find("repeats item 0"),
            std::string::npos);
}

TEST(Sweep, VariantShardsCoverTheListOnceAndEachHasTheBaseline) {
  std::vector<Config> chosen;
  for (std::size_t i = 0; i < 7; ++i) chosen.push_back(Config{{i}});
  const Config baseline = chosen[4];
  std::multiset<std::size_t> seen;
  for (int k = 0; k < 3; ++k) {
    const auto [part, r] = shard_configs(chosen, baseline, ShardRecord{k, 3, ShardSplit::kVariants});
    EXPECT_EQ(r.variants, 7);
    EXPECT_EQ(r.baseline_index, 4);
    EXPECT_NE(std::find(part.begin(), part.end(), baseline), part.end()) << "shard " << k;
    for (const auto& c : part)
      if (c != baseline) seen.insert(c.choice.at(0));
  }
  EXPECT_EQ(seen.size(), 6u);
  EXPECT_EQ(std::set<std::size_t>(seen.begin(), seen.end()).size(), 6u);
}

TEST(Sweep, TheRunKeyChangesWithWhatDecidesTheVariants) {
  TuneOptions o;
  const auto items = resolve_items(expand_dims("contact", {{"B", {1}}, {"N", {64}}}), std::nullopt);
  const std::string key = sweep_run_key(o, items);
  EXPECT_EQ(key.size(), 16u);
  EXPECT_EQ(sweep_run_key(o, items), key);
  TuneOptions seeded = o;
  seeded.seed = 7;
  EXPECT_NE(sweep_run_key(seeded, items), key);
  EXPECT_NE(sweep_run_key(o, resolve_items(expand_dims("contact", {{"B", {2}}, {"N", {64}}}), std::nullopt)), key);
  TuneOptions elsewhere = o;
  elsewhere.out_dir = "other";
  elsewhere.device = 3;
  EXPECT_EQ(sweep_run_key(elsewhere, items), key);
  // The model's options choose the variants too (round 8: shards of other --model-rounds merged as one run).
  TuneOptions model = o;
  model.search = SearchMode::kModel;
  const std::string model_key = sweep_run_key(model, items);
  model.model_rounds = 3;
  EXPECT_NE(sweep_run_key(model, items), model_key);
  TuneOptions jobs = model;
  jobs.jobs = 7;  // the default model batch is the compile jobs, but a node of other cores is the same run
  EXPECT_EQ(sweep_run_key(jobs, items), sweep_run_key(model, items));
  // Each variant's deadline decides which ones time out (round 9: shards of other deadlines merged).
  TuneOptions deadline = o;
  deadline.variant_timeout_s = 30;
  EXPECT_NE(sweep_run_key(deadline, items), key);
}

// Timed shards of one shape, built as run_tune would write them: real configurations of the
// embedded space, synthetic timings (this is a fixture).
std::vector<RunRecord> timed_shards(int count, const std::vector<double>& medians, std::size_t baseline_at) {
  const Space space = load_space("contact", std::nullopt);
  RunRecord proto = fixture_run();
  proto.variants.clear();
  proto.context.config_file = "configs/contact.json (embedded)";
  std::vector<Config> configs;
  for (const Config& c : space.enumerate(proto.shape, DeviceLimits::for_arch(90)).configs)
    if (c != space.baseline() && configs.size() < medians.size()) configs.push_back(c);
  configs[baseline_at] = space.baseline();
  std::vector<RunRecord> shards;
  for (int k = 0; k < count; ++k) {
    RunRecord r = proto;
    const auto [part, s] =
        shard_configs(configs, space.baseline(), ShardRecord{k, count, ShardSplit::kVariants, 1, 0, "key"});
    for (const Config& c : part) {
      const auto i = static_cast<std::size_t>(std::find(configs.begin(), configs.end(), c) - configs.begin());
      VariantRecord v = fixture_run().variants.front();
      v.name = space.name(c);
      v.params = space.to_json(c);
      v.baseline = i == baseline_at;
      set_median(*v.timing, medians[i] + (v.baseline ? k * 0.001 : 0));  // each shard times the baseline itself
      v.launches.clear();
      for (const auto& l : space.lower(c, proto.shape, proto.limits()).launches)
        v.launches.push_back(
            {{"kernel", l.name_expression}, {"grid", l.grid}, {"block", l.block}, {"dynamic_smem_bytes", l.dynamic_smem}});
      r.variants.push_back(v);
    }
    r.context.shard = s;
    r.baseline = space.name(space.baseline());
    name_winner(r);
    shards.push_back(r);
  }
  return shards;
}

std::vector<std::filesystem::path> write_all(const std::vector<RunRecord>& runs, const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> files;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    files.push_back(dir / ("shard" + std::to_string(i) + ".json"));
    write_file_atomic(files.back(), to_json(runs[i]).dump(2));
  }
  return files;
}

TEST(Merge, TimedShardsGiveTheUnshardedOrderTheWinnerAcrossShardsAndAHeader) {
  const auto dir = scratch("timed");
  const std::vector<double> medians = {50, 40, 30, 12, 45, 60, 35};
  const auto shards = timed_shards(3, medians, 1);
  const auto written = merge_shards(write_all(shards, dir / "in"), dir / "out", std::nullopt, {});
  ASSERT_EQ(written.size(), 2u);
  EXPECT_EQ(written[0].filename(), "B4_N64_C64_H32.json");
  EXPECT_EQ(written[1].extension(), ".hpp");
  const RunRecord merged = read_result(written[0]);
  ASSERT_EQ(merged.variants.size(), medians.size());
  for (std::size_t i = 0; i < medians.size(); ++i) EXPECT_NEAR(merged.variants[i].timing->median_us, medians[i], 0.01) << i;
  EXPECT_EQ(merged.winner, merged.variants[3].name);               // shard 0's, the fastest of all shards
  EXPECT_DOUBLE_EQ(merged.variants[1].timing->median_us, 40.001);  // the baseline's owner is shard 1
  EXPECT_NEAR(*merged.speedup, 40.001 / 12, 1e-9);
  EXPECT_FALSE(merged.context.shard.has_value());
  EXPECT_EQ(written[0].parent_path().parent_path().parent_path().filename(), "out");
}

// A shard whose passed variant has a null (NaN when written), zero or negative median is a damaged
// file: the merge refuses it in one line naming the shard and the field, and writes nothing
// (issue 22, item 11; the winner rule itself never ranks such a median: Winner.*).
TEST(Merge, AShardWithANullZeroOrNegativeMedianIsRefusedNamingTheField) {
  const std::vector<double> medians = {50, 40, 30, 12, 45, 60, 35};
  for (const double bad : {std::nan(""), 0.0, -3.0}) {
    const auto dir = scratch("null_median");
    auto shards = timed_shards(3, medians, 1);
    shards[2].variants[0].timing->median_us = bad;
    const auto files = write_all(shards, dir / "in");
    const std::string what = message_of([&] { merge_shards(files, dir / "out", std::nullopt, {}); });
    EXPECT_EQ(what.rfind(files[2].string() + ": variants[0].timing.median_us: ", 0), 0u) << what;
    EXPECT_FALSE(std::filesystem::exists(dir / "out")) << bad;
  }
}

TEST(Merge, RefusesShardsOfOtherRunsAndIncompleteSets) {
  const auto dir = scratch("refuse");
  const std::vector<double> medians = {50, 40, 30, 12};
  auto shards = timed_shards(2, medians, 0);
  EXPECT_NE(message_of([&] {
              merge_shards(write_all({shards[0]}, dir / "a"), dir / "o", std::nullopt, {});
            }).find("incomplete set of shards: shard(s) 1 of 2 are missing"),
            std::string::npos);
  auto other = shards;
  other[1].device->name = "Another GPU";
  EXPECT_NE(message_of([&] {
              merge_shards(write_all(other, dir / "b"), dir / "o", std::nullopt, {});
            }).find("differ in device model (Fixture GPU 9000 vs Another GPU)"),
            std::string::npos);
  other = shards;
  other[1].context.git_commit = "elsewhere";
  EXPECT_NE(message_of([&] {
              merge_shards(write_all(other, dir / "c"), dir / "o", std::nullopt, {});
            }).find("differ in git commit"),
            std::string::npos);
  other = shards;
  other[1].context.shard->run_key = "other";
  EXPECT_NE(message_of([&] { merge_shards(write_all(other, dir / "d"), dir / "o", std::nullopt, {}); }).find("run key"),
            std::string::npos);
  other = shards;
  other[1].complete = false;
  EXPECT_NE(message_of([&] {
              merge_shards(write_all(other, dir / "e"), dir / "o", std::nullopt, {});
            }).find("did not finish"),
            std::string::npos);
  other = shards;
  other[1].variants.pop_back();
  other[1].winner.reset();
  other[1].speedup.reset();
  EXPECT_NE(message_of([&] {
              merge_shards(write_all(other, dir / "f"), dir / "o", std::nullopt, {});
            }).find("pass unchanged shard results"),
            std::string::npos);
  // Adversarial round 4: shards of other kernel sources under one run key, and a shard holding a
  // pending variant, were merged (into a record marked complete).
  other = shards;
  other[1].context.source_hash = "edited";
  EXPECT_NE(message_of([&] {
              merge_shards(write_all(other, dir / "h"), dir / "o", std::nullopt, {});
            }).find("differ in kernel sources (context.source_hash)"),
            std::string::npos);
  // Adversarial round 6: shards checked against two references (reference.py edited between two
  // shards' jobs) were merged, the record naming shard 0's.
  other = shards;
  other[1].context.reference_identity = "reference.py xxh3:0123456789abcdef (numpy or torch)";
  EXPECT_NE(message_of([&] {
              merge_shards(write_all(other, dir / "j"), dir / "o", std::nullopt, {});
            }).find("differ in reference (context.reference_identity)"),
            std::string::npos);
  other = shards;
  for (VariantRecord& v : other[1].variants)
    if (!v.baseline && v.name != other[1].winner) {
      v.status = Status::kPending;
      v.timing.reset();
      v.gate.reset();
      break;
    }
  EXPECT_NE(message_of([&] {
              merge_shards(write_all(other, dir / "i"), dir / "o", std::nullopt, {});
            }).find("is still pending, which no finished shard leaves"),
            std::string::npos);
  other = shards;
  other[1].context.shard.reset();
  EXPECT_NE(message_of([&] {
              merge_shards(write_all(other, dir / "g"), dir / "o", std::nullopt, {});
            }).find("not a shard's result"),
            std::string::npos);
  EXPECT_NE(message_of([&] { merge_shards({dir / "nothing"}, dir / "o", std::nullopt, {}); }).find("no such file or folder"),
            std::string::npos);
}

}  // namespace
}  // namespace tune
