#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <limits>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "space/kernel_scan.hpp"
#include "tune/errors.hpp"
#include "tune/io.hpp"
#include "tune/problem.hpp"
#include "tune/record.hpp"
#include "tune/space.hpp"
#include "tune/tune.hpp"

namespace tune {
namespace {

using Json = nlohmann::ordered_json;

Json small_space() {
  return Json::parse(R"json({
    "schema_version": 1, "problem": "toy", "template": "toy.cuh",
    "shape": {"dims": ["B", "N"], "defaults": {"N": 8},
              "constraints": [{"expr": "N <= 64", "message": "N must be at most 64"}]},
    "parameters": [
      {"name": "strategy", "values": ["thread", "warp"]},
      {"name": "block", "values": [32, 48, 64, 2048]},
      {"name": "smem", "values": [false, true]}],
    "derived": [{"name": "bytes", "expr": "smem ? block * 4 : 0"},
                {"name": "pairs", "expr": "strategy == warp ? block / 32 : block"}],
    "constraints": ["block % 32 == 0", "block <= dev_max_threads", "!(strategy == warp && smem)"],
    "launches": [
      {"kernel": "k1", "when": "1", "template_args": ["B", "N", "strategy", "block", "smem"],
       "grid": ["cdiv(B*N*N, pairs)"], "block": ["block", 1, 1], "dynamic_smem": "bytes",
       "args": ["x", "out"]},
      {"kernel": "k2", "when": "strategy == warp", "template_args": ["N"],
       "grid": "B", "block": "32", "args": ["out"]}],
    "scratch": [{"name": "tmp", "elements": "B*N", "when": "strategy == warp"}],
    "baseline": {"strategy": "thread", "block": 64, "smem": true}
  })json");
}

Shape shape(std::int64_t b, std::int64_t n) { return Shape({{"B", b}, {"N", n}}); }

// A space of 100,000 configurations, half of them valid, for the held sample of a large enumeration.
Json wide_space() {
  Json j = Json::parse(R"json({
    "schema_version": 1, "problem": "wide", "template": "toy.cuh",
    "shape": {"dims": ["B", "N"], "defaults": {"N": 8}},
    "parameters": [{"name": "a", "values": []}, {"name": "b", "values": []}],
    "constraints": ["(a + b) % 2 == 0"],
    "launches": [{"kernel": "k", "template_args": ["a", "b"], "grid": ["B"], "block": [32, 1, 1], "args": []}],
    "baseline": {"a": 399, "b": 249}
  })json");
  for (int v = 0; v < 400; ++v) j["parameters"][0]["values"].push_back(v);
  for (int v = 0; v < 250; ++v) j["parameters"][1]["values"].push_back(v);
  return j;
}

// Round 9: --search model and --warm-start held every valid configuration while enumerating, so a
// raised --max-space could take all memory. Past Holding::most, a uniform sample of that many is
// held (reservoir sampling from the seed), the pinned ones besides; the count is still every one.
TEST(Space, AnEnumerationPastItsHoldingKeepsAUniformSampleOfThatManyAndCountsEveryValidOne) {
  const Space s = Space::parse(wide_space(), "wide.json");
  const DeviceLimits limits = DeviceLimits::for_arch(90);
  const Config base = s.baseline();
  const Holding holding{500, 3, [&](const Config& c) { return c == base; }};
  const Enumeration e = s.enumerate(shape(2, 8), limits, kDefaultMaxSpace, {}, holding);
  EXPECT_EQ(e.valid, 50000u);
  EXPECT_GE(e.configs.size(), 500u);
  EXPECT_LE(e.configs.size(), 501u) << "the sample and the pinned baseline, nothing more";
  EXPECT_TRUE(std::binary_search(e.configs.begin(), e.configs.end(), base)) << "the pinned baseline is held";
  double mean_a = 0;
  for (std::size_t i = 0; i < e.configs.size(); ++i) {
    EXPECT_TRUE(s.violated_constraint(e.configs[i], shape(2, 8), limits).empty());
    if (i > 0) {
      EXPECT_TRUE(e.configs[i - 1] < e.configs[i]) << "enumeration order, no repeats";
    }
    mean_a += static_cast<double>(e.configs[i].choice[0]) / static_cast<double>(e.configs.size());
  }
  EXPECT_NEAR(mean_a, 199.5, 25) << "drawn from the whole space, not its first 500";
  EXPECT_EQ(s.enumerate(shape(2, 8), limits, kDefaultMaxSpace, {}, holding).configs, e.configs) << "the same seed";
  EXPECT_NE(s.enumerate(shape(2, 8), limits, kDefaultMaxSpace, {}, Holding{500, 4, {}}).configs, e.configs);
  const Enumeration every = s.enumerate(shape(2, 8), limits);
  EXPECT_EQ(every.configs.size(), 50000u) << "without a holding, every valid one, as before";
  EXPECT_EQ(every.valid, 50000u);
}

TEST(Space, EnumeratesTheConfigsThatSatisfyEveryConstraint) {
  const Space s = Space::parse(small_space(), "toy.json");
  const Enumeration e = s.enumerate(shape(2, 8), DeviceLimits::for_arch(90));
  EXPECT_EQ(e.total, 2u * 4u * 2u);
  // thread: blocks 32, 64 x smem {0,1} = 4; warp: blocks 32, 64 x smem 0 = 2.
  ASSERT_EQ(e.configs.size(), 6u);
  EXPECT_EQ(s.name(e.configs.front()), "strategy=thread,block=32,smem=false");
  std::size_t rejected = 0;
  for (const auto& [c, n] : e.rejected_by) rejected += n;
  EXPECT_EQ(rejected, e.total - e.configs.size());
  EXPECT_EQ(e.rejected_by.front().first, "block % 32 == 0");
}

TEST(Space, DeviceLimitsAreConstraintsToo) {
  const Space s = Space::parse(small_space(), "toy.json");
  DeviceLimits small = DeviceLimits::for_arch(90);
  small.max_threads_per_block = 32;
  EXPECT_EQ(s.enumerate(shape(2, 8), small).configs.size(), 3u);  // block 32 only
}

TEST(Space, LowersToLaunchesWithShapesAndParametersBakedIn) {
  const Space s = Space::parse(small_space(), "toy.json");
  const Config warp = s.from_json(Json{{"strategy", "warp"}, {"block", 64}, {"smem", false}});
  const Lowered l = s.lower(warp, shape(3, 8), DeviceLimits::for_arch(90));
  ASSERT_EQ(l.launches.size(), 2u);
  EXPECT_EQ(l.launches[0].name_expression, "k1<3,8,1,64,0>");
  EXPECT_EQ(l.launches[0].grid[0], 3u * 64u / 2u);
  EXPECT_EQ(l.launches[0].block[0], 64u);
  EXPECT_EQ(l.launches[0].dynamic_smem, 0u);
  EXPECT_EQ(l.launches[1].name_expression, "k2<8>");
  EXPECT_EQ(l.launches[1].grid[0], 3u);
  ASSERT_EQ(l.scratch.size(), 1u);
  EXPECT_EQ(l.scratch[0].elements(), 24);

  const Lowered base = s.lower(s.baseline(), shape(3, 8), DeviceLimits::for_arch(90));
  ASSERT_EQ(base.launches.size(), 1u);
  EXPECT_EQ(base.launches[0].dynamic_smem, 256u);
  EXPECT_EQ(base.launches[0].grid[0], 3u);  // cdiv(192, 64)
  EXPECT_TRUE(base.scratch.empty());
}

// A launch that passes a scratch buffer whose `when` does not hold for a configuration would launch
// with no buffer there: refused when that configuration is lowered (adversarial round 3).
TEST(Space, ALaunchTakingAScratchBufferAbsentFromTheConfigurationIsRefused) {
  Json j = small_space();
  j["launches"][0]["args"] = Json::array({"x", "out", "tmp"});
  const Space s = Space::parse(j, "toy.json");
  EXPECT_NO_THROW((void)s.lower(s.from_json(Json{{"strategy", "warp"}, {"block", 64}, {"smem", false}}), shape(3, 8),
                                DeviceLimits::for_arch(90)));
  try {
    (void)s.lower(s.baseline(), shape(3, 8), DeviceLimits::for_arch(90));
    ADD_FAILURE() << "lowered";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("launch 'k1' takes scratch buffer 'tmp', whose when 'strategy == warp' does "
                                         "not hold for configuration strategy=thread"),
              std::string::npos)
        << e.what();
  }
}

// A grid, a scratch size or a template argument that one configuration gets wrong names that
// configuration and the shape, and says what to do (adversarial round 6: the line gave the expression
// alone, and a user of a space of thousands had no way to find the configuration).
TEST(Space, ALoweringErrorNamesTheConfigurationTheShapeAndTheFix) {
  Json j = small_space();
  j["scratch"][0]["elements"] = "B * N / 3";
  const Space s = Space::parse(j, "toy.json");
  const Config warp = s.from_json(Json{{"strategy", "warp"}, {"block", 64}, {"smem", false}});
  try {
    (void)s.lower(warp, shape(2, 8), DeviceLimits::for_arch(90));
    ADD_FAILURE() << "lowered";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("scratch 'tmp' elements 'B * N / 3' gives 5.33"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("make it a whole number (cdiv, floor) or constrain the shape or the parameters "
                                         "(configuration " +
                                         s.name(warp) + " at B=2 N=8)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_NO_THROW((void)s.lower(warp, shape(3, 8), DeviceLimits::for_arch(90))) << "24 / 3 is whole";
}

TEST(Space, ConfigJsonRoundTripsAndRejectsUnknownValues) {
  const Space s = Space::parse(small_space(), "toy.json");
  const Config c = s.baseline();
  EXPECT_EQ(s.from_json(s.to_json(c)), c);
  EXPECT_THROW((void)s.from_json(Json{{"strategy", "block"}, {"block", 64}, {"smem", true}}), InputError);
  EXPECT_THROW((void)s.from_json(Json{{"strategy", "thread"}, {"block", 64}}), InputError);
  EXPECT_THROW((void)s.from_json(Json{{"strategy", "thread"}, {"block", 64}, {"smem", true}, {"x", 1}}), InputError);
  EXPECT_EQ(s.numeric(c, "strategy"), 0);
  EXPECT_EQ(s.numeric(c, "smem"), 1);
}

TEST(Space, AParameterAddedLaterTakesItsAbsentValueInOlderConfigs) {
  Json j = small_space();
  j["parameters"][2]["absent"] = true;  // results recorded before `smem` existed meant smem = true
  const Space s = Space::parse(j, "toy.json");
  const Config old = s.from_json(Json{{"strategy", "thread"}, {"block", 64}});
  EXPECT_EQ(s.numeric(old, "smem"), 1);
  EXPECT_EQ(old, s.baseline());
  EXPECT_THROW((void)s.from_json(Json{{"strategy", "thread"}}), InputError);  // block has no absent value

  j["parameters"][2]["absent"] = "maybe";
  try {
    (void)Space::parse(j, "bad.json");
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("'absent' value \"maybe\" is not one of its values"), std::string::npos)
        << e.what();
  }
}

TEST(Space, ShapeConstraintsReportTheirMessage) {
  const Space s = Space::parse(small_space(), "toy.json");
  EXPECT_NO_THROW(s.check_shape(shape(1, 64)));
  try {
    s.check_shape(shape(1, 65));
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("N must be at most 64"), std::string::npos) << e.what();
  }
}

void expect_config_error(Json j, const std::string& needle) {
  try {
    (void)Space::parse(j, "bad.json");
    FAIL() << "expected ConfigError containing: " << needle;
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("bad.json: ", 0), 0u) << what;
    EXPECT_NE(what.find(needle), std::string::npos) << what;
  }
}

TEST(Space, MalformedFilesGiveOneLineErrorsNamingFileAndReason) {
  Json j = small_space();
  j["schema_version"] = 7;
  expect_config_error(j, "schema_version 7");

  j = small_space();
  j["parameters"][1]["values"] = Json::array();
  expect_config_error(j, "parameter 'block' has no values");

  j = small_space();
  j["parameters"].push_back(Json{{"name", "block"}, {"values", {1}}});
  expect_config_error(j, "parameter 'block' is defined twice");
  // A name already taken says what holds it (a string value is a constant of every expression).
  j = small_space();
  j["derived"].push_back(Json{{"name", "warp"}, {"expr", "1"}});
  expect_config_error(j,
                      "derived value 'warp' has the name of a value of the parameter 'strategy' (\"warp\", a constant "
                      "of expressions); rename it");
  j = small_space();
  j["derived"].push_back(Json{{"name", "block"}, {"expr", "1"}});
  expect_config_error(j, "derived value 'block' has the name of the parameter 'block'; rename it");
  j = small_space();
  j["derived"].push_back(Json{{"name", "N"}, {"expr", "1"}});
  expect_config_error(j, "derived value 'N' has the name of the dimension 'N'; rename it");
  j = small_space();
  j["derived"].push_back(Json{{"name", "bytes"}, {"expr", "1"}});
  expect_config_error(j, "derived value 'bytes' is defined twice; rename one");
  j = small_space();
  j["parameters"].push_back(Json{{"name", "thread"}, {"values", {1}}});
  expect_config_error(j, "parameter 'thread' has the name of a value of the parameter 'strategy'");
  j = small_space();
  j["parameters"].push_back(Json{{"name", "B"}, {"values", {1}}});
  expect_config_error(j, "parameter 'B' has the name of the dimension 'B'; rename it");

  // A device limit's name is reserved (it escaped as an internal error), and the 256-name limit
  // says what it is (it was reported as "defined twice").
  j = small_space();
  j["parameters"].push_back(Json{{"name", "dev_cc"}, {"values", {1}}});
  expect_config_error(j, "parameter 'dev_cc': names starting with dev_ are the device's limits");
  j = small_space();
  j["derived"] = Json::array({Json{{"name", "dev_sm_count"}, {"expr", "1"}}});
  expect_config_error(j, "derived value 'dev_sm_count': names starting with dev_ are the device's limits");
  // A string value is a constant of every expression: one named like a device limit escaped as an
  // internal error ("'dev_cc' is defined twice").
  j = small_space();
  j["parameters"][0]["values"] = Json::array({"thread", "dev_cc"});
  expect_config_error(j, "parameter 'strategy' value \"dev_cc\": names starting with dev_ are the device's limits");
  // A dtype variable is a name of every expression too: dev_ escaped as an internal error (exit 4).
  j = small_space();
  j["dtypes"] = Json{{"dev_max_threads", Json{{"values", {"float32", "bfloat16"}}, {"default", "float32"}}}};
  expect_config_error(j, "dtypes.dev_max_threads: names starting with dev_ are the device's limits");
  // Derived values are computed in order: one that names itself or a later one read the value left
  // from the configuration evaluated before (grids that grew from one configuration to the next).
  j = small_space();
  j["derived"] = Json::array({Json{{"name", "d"}, {"expr", "d + 1"}}});
  expect_config_error(j, "derived value 'd' uses 'd', itself; a derived value may use only");
  j = small_space();
  j["derived"] = Json::array({Json{{"name", "d"}, {"expr", "e + 1"}}, Json{{"name", "e"}, {"expr", "block"}}});
  expect_config_error(j, "derived value 'd' uses 'e', which is declared after it; a derived value may use only");
  // The generated header computes the geometry in constexpr C++: a muParser function it cannot
  // translate is refused at load, not when a tuned record is shipped.
  j = small_space();
  j["launches"][1]["grid"] = "B + rint(sqrt(4))";
  expect_config_error(j, "function 'sqrt' has no constexpr C++ translation");
  // A name longer than expressions take (it was refused as "Identifier too long" in a `when` that
  // the file never wrote).
  j = small_space();
  j["parameters"].push_back(Json{{"name", std::string(120, 'p')}, {"values", {1}}});
  expect_config_error(j, "is 120 characters long, more than the 100 a name of expressions may have");
  j = small_space();
  for (int i = 0; i < 300; ++i) {
    char name[16];
    std::snprintf(name, sizeof(name), "p%d", i);
    j["parameters"].push_back(Json{{"name", name}, {"values", {1}}});
  }
  expect_config_error(j, "more than 256 names");

  j = small_space();
  j["constraints"].push_back("block %% 2 ==");
  expect_config_error(j, "constraint 'block %% 2 =='");

  j = small_space();
  j["constraints"].push_back("blocks > 2");
  expect_config_error(j, "blocks");

  j = small_space();
  j["baseline"]["block"] = 96;
  expect_config_error(j, "'baseline' is not in the space");

  j = small_space();
  j.erase("launches");
  expect_config_error(j, "has no 'launches'");

  j = small_space();
  j["launches"][0]["template_args"].push_back("nope");
  expect_config_error(j, "template argument \"nope\"");
}

// A name a space gives must not shadow a constant expressions already know (issue 22, low): a
// string value "true" redefined `true` in every expression (and "false" likewise), and a parameter
// named "true" clashed with it in each. Each is refused at load, naming the thing and the name.
TEST(Space, NamesThatShadowABuiltinConstantOfExpressionsAreRefused) {
  Json j = small_space();
  j["parameters"][2] = Json{{"name", "smem"}, {"values", {"off", "true"}}};
  j["baseline"]["smem"] = "true";
  expect_config_error(j, "parameter 'smem' value \"true\": 'true' is a built-in constant of expressions");
  j["parameters"][2] = Json{{"name", "smem"}, {"values", {"off", "false"}}};
  j["baseline"]["smem"] = "off";
  expect_config_error(j, "parameter 'smem' value \"false\": 'false' is a built-in constant of expressions");
  j["parameters"][2] = Json{{"name", "smem"}, {"values", {"off", "_pi"}}};
  expect_config_error(j, "value \"_pi\": '_pi' is a built-in constant of expressions");
  for (const char* name : {"true", "false", "_e"}) {
    j = small_space();
    j["parameters"].push_back(Json{{"name", name}, {"values", {1}}});
    j["baseline"][name] = 1;
    expect_config_error(j, fmt::format("parameter '{}': '{}' is a built-in constant", name, name));
    j = small_space();
    j["derived"].push_back(Json{{"name", name}, {"expr", "1"}});
    expect_config_error(j, fmt::format("derived value '{}': '{}' is a built-in constant", name, name));
    j = small_space();
    j["shape"]["dims"].push_back(name);
    expect_config_error(j, fmt::format("'shape.dims': '{}' is a built-in constant", name));
  }
  // A string value expressions cannot name.
  j = small_space();
  j["parameters"][0]["values"] = Json::array({"thread", "warp-2"});
  expect_config_error(j, "'warp-2' is not a name expressions can use");
  // `true` still means 1 where the space does not redefine it, and a name of a built-in function
  // is a variable without parentheses and the function with them (contact's parameter `ln`).
  j = small_space();
  j["constraints"].push_back("true");
  j["parameters"].push_back(Json{{"name", "min"}, {"values", {16, 64}}});
  j["baseline"]["min"] = 64;
  j["constraints"].push_back("min(min, 32) == 32");
  EXPECT_EQ(Space::parse(j, "ok.json").enumerate(shape(2, 8), DeviceLimits::for_arch(90)).configs.size(), 6u);
}

// A space is counted before it is enumerated (issue 22, item 5): the product saturates instead of
// overflowing, one larger than the limit is refused, and a sample draws without enumerating.
Json wide_space(int extra_parameters, int values) {
  Json j = small_space();
  for (int p = 0; p < extra_parameters; ++p) {
    Json v = Json::array();
    for (int i = 0; i < values; ++i) v.push_back(i);
    j["parameters"].push_back(Json{{"name", fmt::format("x{}", p)}, {"values", v}});
    j["baseline"][fmt::format("x{}", p)] = 0;
  }
  return j;
}

TEST(Space, SizeIsTheProductAndSaturatesInsteadOfOverflowing) {
  EXPECT_EQ(Space::parse(small_space(), "toy.json").size(), 16u);
  EXPECT_EQ(Space::parse(wide_space(5, 100), "wide.json").size(), 16u * 10'000'000'000ull);
  EXPECT_EQ(Space::parse(wide_space(12, 100), "wide.json").size(), std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(describe_count(16), "16");
  EXPECT_EQ(describe_count(160'000'000'000ull), "160000000000 (1.6e+11)");
  EXPECT_EQ(describe_count(std::numeric_limits<std::uint64_t>::max()), "at least 1.8e+19");
}

TEST(Space, ASpaceLargerThanTheLimitIsRefusedBeforeEnumerating) {
  const Space s = Space::parse(wide_space(5, 100), "wide.json");
  try {
    (void)s.enumerate(shape(2, 8), DeviceLimits::for_arch(90));
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("wide.json: the space has 160000000000 (1.6e+11) configurations"), std::string::npos) << what;
    EXPECT_NE(what.find("--max-space 4000000"), std::string::npos) << what;
    EXPECT_NE(what.find("--budget N"), std::string::npos) << what;
  }
  EXPECT_THROW((void)Space::parse(small_space(), "toy.json").enumerate(shape(2, 8), DeviceLimits::for_arch(90), 15),
               InputError);
  // Progress comes every 65536 configurations checked.
  std::vector<SpaceProgress> seen;
  const Enumeration e = Space::parse(wide_space(2, 128), "w.json")
                            .enumerate(shape(2, 8), DeviceLimits::for_arch(90), kDefaultMaxSpace,
                                       [&](const SpaceProgress& p) { seen.push_back(p); });
  EXPECT_EQ(e.total, 16u * 128u * 128u);
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[1].checked, 2u * 65536u);
  EXPECT_EQ(seen[1].of, e.total);
  EXPECT_LE(seen[1].valid, e.configs.size());
}

TEST(Space, ASampleDrawsDistinctValidConfigsWithoutEnumerating) {
  const Space s = Space::parse(wide_space(5, 100), "wide.json");
  const auto limits = DeviceLimits::for_arch(90);
  const Enumeration a = s.sample(shape(2, 8), limits, 20, 42, 1'000'000);
  ASSERT_EQ(a.configs.size(), 20u);
  EXPECT_EQ(a.total, s.size());
  EXPECT_GE(a.draws, 20u);
  EXPECT_LT(a.draws, 1000u) << "6 of the small space's 16 are valid";
  for (std::size_t i = 0; i < a.configs.size(); ++i) {
    EXPECT_EQ(s.violated_constraint(a.configs[i], shape(2, 8), limits), "");
    if (i) {
      EXPECT_LT(a.configs[i - 1], a.configs[i]) << "enumeration order, no repeats";
    }
  }
  EXPECT_EQ(a.configs, s.sample(shape(2, 8), limits, 20, 42, 1'000'000).configs) << "the same seed, the same sample";
  EXPECT_NE(a.configs, s.sample(shape(2, 8), limits, 20, 43, 1'000'000).configs);
  // The draws are bounded: a space with fewer valid configurations than asked stops there.
  const Enumeration few = Space::parse(small_space(), "toy.json").sample(shape(2, 8), limits, 50, 1, 5000);
  EXPECT_EQ(few.configs.size(), 6u);
  EXPECT_EQ(few.draws, 5000u);
  std::size_t rejected = 0;
  for (const auto& [c, n] : few.rejected_by) rejected += n;
  EXPECT_GT(rejected, 5000u / 2) << "10 of 16 are invalid; each rejected draw is counted";
  EXPECT_LT(rejected, 5000u - 6);
}

TEST(Space, TheShippedSpacesParseAndTheirBaselinesAreValid) {
  for (const auto& [problem, dims] : std::vector<std::pair<std::string, std::vector<std::pair<std::string, std::int64_t>>>>{
           {"contact", {{"B", 4}, {"N", 64}}}, {"scene_graph", {{"B", 4}, {"N", 24}}}}) {
    const Space s = load_space(problem, std::nullopt);
    const Shape sh = resolve_shape(find_problem(problem), s, dims);
    const Enumeration e = s.enumerate(sh, DeviceLimits::for_arch(90));
    EXPECT_GT(e.configs.size(), 4u) << problem;
    EXPECT_EQ(s.violated_constraint(s.baseline(), sh, DeviceLimits::for_arch(90)), "") << problem;
    // Every valid configuration lowers to at least one launch with a non-empty grid.
    for (const Config& c : e.configs) {
      const Lowered l = s.lower(c, sh, DeviceLimits::for_arch(90));
      ASSERT_FALSE(l.launches.empty());
      for (const auto& k : l.launches) EXPECT_GT(k.grid[0] * k.block[0], 0u) << s.name(c);
    }
  }
}

}  // namespace
}  // namespace tune

namespace tune {
namespace {

std::vector<Config> numbered(int n) {
  std::vector<Config> all;
  for (int i = 0; i < n; ++i) all.push_back(Config{{static_cast<std::size_t>(i)}});
  return all;
}

TEST(Sample, ABudgetDrawsThatManyDistinctConfigsInEnumerationOrderPlusTheBaseline) {
  const auto all = numbered(50);
  const Config baseline = all[7];
  const auto a = sample_configs(all, baseline, 10, 42);
  ASSERT_GE(a.size(), 10u);
  ASSERT_LE(a.size(), 11u);
  EXPECT_NE(std::find(a.begin(), a.end(), baseline), a.end());
  for (std::size_t i = 1; i < a.size(); ++i)
    EXPECT_LT(a[i - 1].choice.at(0), a[i].choice.at(0)) << "order of `all`, no repeats";
  EXPECT_EQ(a, sample_configs(all, baseline, 10, 42)) << "the same seed draws the same sample";
  EXPECT_NE(a, sample_configs(all, baseline, 10, 43)) << "another seed draws another sample";
}

TEST(Sample, NoBudgetOrOneAsLargeAsTheSpaceKeepsEverything) {
  const auto all = numbered(12);
  EXPECT_EQ(sample_configs(all, all[0], 0, 1), all);
  EXPECT_EQ(sample_configs(all, all[0], 12, 1), all);
  EXPECT_EQ(sample_configs(all, all[0], 40, 1), all);
}

TEST(Sample, AnInvalidBaselineIsNotAdded) {
  const auto all = numbered(30);
  const auto a = sample_configs(all, Config{{std::size_t{99}}}, 5, 7);
  EXPECT_EQ(a.size(), 5u);
}

}  // namespace
}  // namespace tune

namespace tune {
namespace {

// The launch-argument check reads the template: the first __global__ function of that name,
// whatever its attributes, with template-argument commas, comments and strings left out.
TEST(KernelScan, CountsTheParametersOfTheNamedGlobalFunction) {
  KernelSources s;
  s.main =
      "// __global__ void k(int a);  a comment is not a declaration\n"
      "const char* text = \"__global__ void k(int, int, int)\";\n"
      "template <int B, int N>\n"
      "__global__ void __launch_bounds__(B, 1) __maxnreg__(N > 2 ? 128 : 255)\n"
      "    k(const float* __restrict__ x, Pair<int, float> p, /* int ignored, */ float* out) {}\n"
      "__global__ void empty() {}\n"
      "__global__ void v(void);\n"
      "__device__ void helper(int a, int b);\n";
  s.headers = {{"more.cuh", "__global__ void in_header(int a,\n int b) {}\n"}};
  const auto stripped = stripped_sources(s);
  EXPECT_EQ(kernel_parameter_count(stripped, "k"), 3);
  EXPECT_EQ(kernel_parameter_count(stripped, "empty"), 0);
  EXPECT_EQ(kernel_parameter_count(stripped, "v"), 0);
  EXPECT_EQ(kernel_parameter_count(stripped, "in_header"), 2);
  EXPECT_EQ(kernel_parameter_count(stripped, "helper"), std::nullopt);  // not a kernel
  EXPECT_EQ(kernel_parameter_count(stripped, "kk"), std::nullopt);
}

// A declaration under `#if 0` is not the kernel compiled, and a parameter list written as one macro
// cannot be counted at load (both refused a valid folder: adversarial round 3).
TEST(KernelScan, SkipsIfZeroBlocksAndLeavesAMacroParameterListUncounted) {
  KernelSources s;
  s.main =
      "#if 0\n__global__ void k(int a);\n#  if X\n__global__ void k(int a, int b);\n#  endif\n#else\n"
      "__global__ void other(int a);\n#endif\n"
      "__global__ void k(const float* w, const float* x, float* out) {}\n"
      "#define ARGS const float* w, const float* x, float* out\n"
      "__global__ void m(ARGS) {}\n";
  const auto stripped = stripped_sources(s);
  EXPECT_EQ(kernel_parameter_count(stripped, "k"), 3);
  EXPECT_EQ(kernel_parameter_count(stripped, "other"), 1) << "an #else of #if 0 is compiled";
  EXPECT_EQ(kernel_parameter_count(stripped, "m"), kUncounted);
}

}  // namespace
}  // namespace tune

#include <unistd.h>

#include <fstream>

#include "space/sources.hpp"

namespace tune {
namespace {

namespace fs = std::filesystem;

// A folder with the toy space's problem file, its template toy.cuh (k1, k2) beginning with
// `head`, and `files` beside it (paths relative to the folder's parent, so outside ones too).
fs::path toy_folder(const std::string& head, const std::vector<std::pair<std::string, std::string>>& files = {},
                    const Json& include_dirs = Json::array()) {
  const fs::path root = fs::temp_directory_path() / ("tune_sources_" + std::to_string(getpid())) /
                        ::testing::UnitTest::GetInstance()->current_test_info()->name();
  fs::remove_all(root);
  const fs::path dir = root / "toy";
  fs::create_directories(dir);
  for (const auto& [name, text] : files) {
    fs::create_directories((root / name).parent_path());
    std::ofstream(root / name, std::ios::binary) << text;
  }
  std::ofstream(dir / "toy.cuh", std::ios::binary)
      << head << "\n__global__ void k1(float* x, float* out) {}\n__global__ void k2(float* out) {}\n";
  Json j = small_space();
  j["include_dirs"] = include_dirs;
  std::ofstream(dir / "problem.json") << j.dump();
  return dir;
}

Space load_toy(const fs::path& dir) { return Space::load(dir / "problem.json"); }

// What NVRTC is given is all it may read (compile() passes -no-source-include): an #include of a
// file outside the template's folder and include_dirs is refused when the folder loads.
TEST(KernelSources, AnIncludeOutsideTheFoldersIsRefusedWithTheIncludeDirsAdvice) {
  const std::vector<std::pair<std::string, std::string>> outside{{"outside/val.cuh", "#define VAL 1\n"}};
  for (const char* head : {"#include \"../outside/val.cuh\"", "#  include <../outside/val.cuh>"}) {
    const fs::path dir = toy_folder(head, outside);
    try {
      (void)load_toy(dir);
      ADD_FAILURE() << head << " was accepted";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("toy.cuh:1: #include"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("outside the template's folder and include_dirs"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("add its folder to 'include_dirs'"), std::string::npos) << e.what();
    }
  }
  const fs::path absolute = toy_folder("");
  std::ofstream(absolute / "toy.cuh", std::ios::app)
      << "#include \"" << (absolute.parent_path() / "none.cuh").string() << "\"\n";
  EXPECT_THROW((void)load_toy(absolute), ConfigError);
  // Other spellings of an include, which a preprocessor reads as one (%: is #; comments and line
  // continuations go before directives are read), and #include_next / #import, are refused as
  // written: they got an absolute path past the check into NVRTC and out of the cache key.
  const std::string val = (absolute.parent_path() / "none.cuh").string();
  for (const std::string& head :
       {"%:include \"" + val + "\"", "# /**/ include \"" + val + "\"", "#\\\ninclude \"" + val + "\"",
        "#inc\\\nlude \"" + val + "\"", "#include_next \"" + val + "\"", "#import \"" + val + "\"",
        std::string("%:include \"sub.cuh\"")}) {
    try {
      (void)load_toy(toy_folder(head, {{"toy/sub.cuh", "#define S 1\n"}}));
      ADD_FAILURE() << head << " was accepted";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("toy.cuh:1: "), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("write it as #include \"file\""), std::string::npos) << e.what();
    }
  }
  // A comment after the file's name is an #include like any other.
  EXPECT_NO_THROW((void)load_toy(toy_folder("#include \"sub.cuh\"  /* S */ // S", {{"toy/sub.cuh", "#define S 1\n"}})));
  // A computed include cannot be checked.
  EXPECT_THROW((void)load_toy(toy_folder("#define H \"x.cuh\"\n#include H")), ConfigError);
  // In a comment or a string it is no include.
  EXPECT_NO_THROW((void)load_toy(
      toy_folder("// #include \"/etc/passwd\"\nconst char* s = \"#include </x>\";\n/*\n#include \"/y\"\n*/")));
}

// A relative include resolves against the including file (as a C preprocessor's does), then the
// folders; NVRTC matches names literally, so the directive is rewritten to the header's name.
TEST(KernelSources, ARelativeIncludeResolvesAgainstTheIncludingFileNotTheWorkingDirectory) {
  const fs::path dir = toy_folder("#include \"sub/a.cuh\"\n#include \"../outside/val.cuh\"",
                                  {{"toy/sub/a.cuh", "#include \"b.cuh\"\n#include \"../c.cuh\"\n"},
                                   {"toy/sub/b.cuh", "#define B 2\n"},
                                   {"toy/b.cuh", "#define B 3\n"},
                                   {"toy/c.cuh", "#define C 1\n"},
                                   {"outside/val.cuh", "#define VAL 1\n"}},
                                  Json::array({"../outside"}));
  const Space s = load_toy(dir);
  const auto src = s.sources();
  EXPECT_NE(src->main.find("#include \"sub/a.cuh\"\n#include \"val.cuh\""), std::string::npos) << src->main;
  const auto a =
      std::find_if(src->headers.begin(), src->headers.end(), [](const auto& h) { return h.first == "sub/a.cuh"; });
  ASSERT_NE(a, src->headers.end());
  EXPECT_EQ(a->second, "#include \"sub/b.cuh\"\n#include \"c.cuh\"\n");
  // For nvcc (tune export torch writes the headers under their names), relative to the header again.
  EXPECT_EQ(header_for_nvcc(*src, static_cast<std::size_t>(a - src->headers.begin())),
            "#include \"b.cuh\"\n#include \"../c.cuh\"\n");
  // The same from another working directory.
  const fs::path cwd = fs::current_path();
  fs::current_path(dir.parent_path() / "outside");
  const Space again = load_toy(dir);
  fs::current_path(cwd);
  EXPECT_EQ(again.sources()->main, src->main);
  EXPECT_EQ(again.source_hash(), s.source_hash());
}

// A header that is a symlink is passed when it resolves inside the folders; one that points out
// is not, and an #include of it says so.
TEST(KernelSources, ASymlinkHeaderIsPassedWhenItResolvesInsideTheFolders) {
  const fs::path in = toy_folder("#include \"link.h\"", {{"toy/sub/real.h", "#define R 1\n"}});
  fs::create_symlink("sub/real.h", in / "link.h");
  const auto headers = load_toy(in).sources()->headers;
  EXPECT_TRUE(std::any_of(headers.begin(), headers.end(),
                          [](const auto& h) { return h.first == "link.h" && h.second == "#define R 1\n"; }));

  const fs::path out = toy_folder("#include \"secret.h\"", {{"outside/secret.h", "#define S 1\n"}});
  fs::create_symlink("../outside/secret.h", out / "secret.h");
  try {
    (void)load_toy(out);
    ADD_FAILURE() << "a symlink to outside was included";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("secret.h is a symlink to "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("not passed to NVRTC"), std::string::npos) << e.what();
  }
}

// A UTF-8 byte-order mark is removed; a byte that ends NVRTC's reading (0xFF, NUL) is refused with
// where it is.
TEST(KernelSources, ABomIsRemovedAndABytesNvrtcStopsAtIsRefusedWithItsPlace) {
  const fs::path bom = toy_folder("\xEF\xBB\xBF// kernel", {{"toy/h.cuh", "\xEF\xBB\xBF#define H 1\n"}});
  // toy_folder writes the head first: the template starts with the BOM.
  const Space s = load_toy(bom);
  EXPECT_EQ(s.sources()->main.rfind("// kernel", 0), 0u);
  EXPECT_EQ(s.sources()->headers.at(0).second, "#define H 1\n");
  for (const char bad : {'\xFF', '\0'}) {
    const fs::path dir = toy_folder("", {{"toy/h.cuh", std::string("#define H 1\n// a ") + bad + " b\n"}});
    try {
      (void)load_toy(dir);
      ADD_FAILURE() << "byte accepted";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(fmt::format("h.cuh:2:6: byte 0x{:02X}: NVRTC stops reading the file there",
                                                       static_cast<unsigned char>(bad))),
                std::string::npos)
          << e.what();
    }
  }
}

// include_dirs ["/"] is refused in one line (the walk is bounded and skips what it cannot read).
TEST(KernelSources, AnIncludeDirThatIsTheWholeFileSystemIsRefused) {
  try {
    (void)load_toy(toy_folder("", {}, Json::array({"/"})));
    ADD_FAILURE() << "/ was walked";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("the folder / holds more than 256 headers"), std::string::npos) << e.what();
  }
}

TEST(KernelSources, IncludeDirectivesAreFoundWithTheirLines) {
  const auto d = include_directives(
      "#include \"a.cuh\"\n  #  include <b.h> // c\n#include_next \"n\"\n#define X \"#include\"\n"
      "/* #include \"no\" */ #include \"c.cuh\"\n#include MACRO \n");
  ASSERT_EQ(d.size(), 5u);
  EXPECT_EQ(d[0].name, "a.cuh");
  EXPECT_EQ(d[0].delimiter, '"');
  EXPECT_TRUE(d[0].refused.empty());
  EXPECT_EQ(d[1].name, "b.h");
  EXPECT_EQ(d[1].line, 2u);
  EXPECT_EQ(d[1].delimiter, '<');
  EXPECT_EQ(d[2].line, 3u);  // #include_next: found, and refused as written
  EXPECT_NE(d[2].refused.find("#include_next is not taken"), std::string::npos) << d[2].refused;
  EXPECT_EQ(d[3].name, "c.cuh");
  EXPECT_EQ(d[3].line, 5u);
  EXPECT_TRUE(d[3].refused.empty());
  EXPECT_EQ(d[4].delimiter, 0);
  EXPECT_EQ(d[4].name, "MACRO");
}

// examples/ln_linear_gelu's split-K (issue 36): split_k 2 lowers to the LayerNorm, the split GEMM
// (a grid of tiles x splits into the scratch `partial`, split_k x M x N floats) and the epilogue that
// sums the slices; split_k 1 (absent from older records) lowers the H200 winner of record to the very
// launches it was measured with, so its name expressions (and machine code) stay those of the record.
TEST(LnLinearGeluSpace, SplitKAddsAnEpilogueLaunchAndTheWinnerOfRecordLowersAsRecorded) {
  const std::filesystem::path dir = std::filesystem::path(TUNE_REPO_DIR) / "examples" / "ln_linear_gelu";
  const Space space = load_space(dir.string(), std::nullopt);
  const RunRecord run =
      read_result(std::filesystem::path(TUNE_REPO_DIR) / "results/h200/ln_linear_gelu/M1024_K1024_N1024.json.gz");
  ASSERT_TRUE(run.winner.has_value());
  const VariantRecord* winner = run.find(*run.winner);
  ASSERT_NE(winner, nullptr);
  if (winner->params.contains("split_k")) {
    ASSERT_EQ(winner->params.at("split_k"), 1);  // or absent: 1
  }
  const DeviceLimits limits = run.limits();
  const Config config = space.from_json(winner->params);
  ASSERT_EQ(space.violated_constraint(config, run.shape, limits), "");
  const Lowered unsplit = space.lower(config, run.shape, limits);
  ASSERT_EQ(unsplit.launches.size(), winner->launches.size());
  for (std::size_t i = 0; i < unsplit.launches.size(); ++i) {
    const nlohmann::ordered_json& kept = winner->launches[i];
    EXPECT_EQ(unsplit.launches[i].name_expression, kept.at("kernel").get<std::string>());
    EXPECT_EQ(unsplit.launches[i].grid[0], kept.at("grid")[0].get<unsigned>());
    EXPECT_EQ(unsplit.launches[i].dynamic_smem, kept.at("dynamic_smem_bytes").get<unsigned>());
  }
  ASSERT_EQ(unsplit.scratch.size(), 1u);  // xn only

  nlohmann::ordered_json params = space.to_json(config);
  params["split_k"] = 2;
  params["corr"] = "tf32";  // split-K keeps 3xTF32
  const Config split = space.from_json(params);
  ASSERT_EQ(space.violated_constraint(split, run.shape, limits), "");
  const Lowered lowered = space.lower(split, run.shape, limits);
  ASSERT_EQ(lowered.launches.size(), 3u);
  EXPECT_EQ(lowered.launches[0].name_expression, "ln_rows_kernel<1024,1024>");
  const KernelLaunch& gemm = lowered.launches[1];
  // The winner's tile and pipeline (stages 3 or 4 tie at this shape: the record says which won).
  const int stages = winner->params.at("stages").get<int>();
  EXPECT_EQ(gemm.name_expression,
            "ln_linear_gelu_mma_splitk_kernel<1024,1024,1024,64,64,32,32,32," + std::to_string(stages) + ",8,0,2>");
  EXPECT_EQ(gemm.grid, (std::array<unsigned, 3>{256, 2, 1}));  // 16 x 16 tiles, 2 splits
  EXPECT_EQ(gemm.block, unsplit.launches[1].block);
  EXPECT_EQ(gemm.dynamic_smem, unsplit.launches[1].dynamic_smem);  // the same stages
  EXPECT_EQ(gemm.args, (std::vector<std::string>{"xn", "norm.weight", "norm.bias", "fc.weight", "partial"}));
  const KernelLaunch& epilogue = lowered.launches[2];
  EXPECT_EQ(epilogue.name_expression, "ln_linear_gelu_splitk_epilogue<1024,1024,2>");
  EXPECT_EQ(epilogue.grid, (std::array<unsigned, 3>{1024, 1, 1}));  // a float4 a thread, 256 threads
  EXPECT_EQ(epilogue.args, (std::vector<std::string>{"partial", "fc.bias", "out"}));
  ASSERT_EQ(lowered.scratch.size(), 2u);
  EXPECT_EQ(lowered.scratch[1].name, "partial");
  EXPECT_EQ(lowered.scratch[1].elements(), 2 * 1024 * 1024);
}

// What the split-K and 16-wide warp tiles may combine with, at a ragged shape (M 1000, K 260, N 301:
// no tile divides it, N odd), and the valid variants at the shapes of record stay under 2,500.
TEST(LnLinearGeluSpace, SplitKAndNarrowWarpTilesKeepToWhatPaysAndTheSpaceStaysTractable) {
  const std::string dir = (std::filesystem::path(TUNE_REPO_DIR) / "examples" / "ln_linear_gelu").string();
  const Space space = load_space(dir, std::nullopt);
  const DeviceLimits limits = DeviceLimits::for_arch(90);
  const auto at = [&](std::int64_t m, std::int64_t k, std::int64_t n) {
    return resolve_shape(find_problem(dir), space, {{"M", m}, {"K", k}, {"N", n}});
  };
  const Shape ragged = at(1000, 260, 301);
  const auto mma = [&](const nlohmann::ordered_json& edits) {
    nlohmann::ordered_json j = space.to_json(space.baseline());
    j.update({{"bm", 64}, {"bn", 64}, {"bk", 16}, {"algo", "mma"}, {"stages", 4}, {"group_m", 8}, {"split_k", 2}});
    if (edits.is_object()) j.update(edits);  // {} is null
    return space.from_json(j);
  };
  EXPECT_EQ(space.violated_constraint(mma({}), ragged, limits), "");
  const Lowered lowered = space.lower(mma({}), ragged, limits);
  ASSERT_EQ(lowered.launches.size(), 3u);
  EXPECT_EQ(lowered.launches[1].grid, (std::array<unsigned, 3>{16 * 5, 2, 1}));
  EXPECT_EQ(lowered.launches[2].grid[0], (1000u * 301u + 255u) / 256u);  // N odd: an element a thread
  EXPECT_EQ(lowered.scratch.back().elements(), 2 * 1000 * 301);
  EXPECT_EQ(space.lower(mma({}), at(1000, 260, 300), limits).launches[2].grid[0], (1000u * 300u + 1023u) / 1024u);
  EXPECT_EQ(space.violated_constraint(mma({{"bk", 64}}), ragged, limits),
            "split_k == 1 || cdiv(K, bk) >= 4 * split_k");  // 5 k-tiles: fewer than 4 a split
  EXPECT_EQ(space.violated_constraint(mma({{"ln", "fused"}}), ragged, limits), "split_k == 1 || ln == separate");
  EXPECT_EQ(space.violated_constraint(mma({{"split_k", 4}}), at(4096, 1024, 4096), limits),
            "split_k == 1 || grid_tiles * split_k <= 4 * dev_sm_count");  // enough tiles without it
  nlohmann::ordered_json simt = space.to_json(space.baseline());
  simt["split_k"] = 2;
  EXPECT_EQ(space.violated_constraint(space.from_json(simt), ragged, limits), "algo == mma || split_k == 1");
  // 16-wide warp tiles: only to make a block of 8 warps, never 16 x 64.
  EXPECT_EQ(space.violated_constraint(mma({{"wm", 16}, {"wn", 32}}), ragged, limits), "");
  EXPECT_EQ(space.violated_constraint(mma({{"bn", 32}, {"wm", 16}, {"wn", 16}, {"split_k", 1}}), ragged, limits), "");
  EXPECT_EQ(space.violated_constraint(mma({{"bm", 32}, {"bn", 32}, {"wm", 16}, {"wn", 32}, {"group_m", 1}}), ragged, limits),
            "algo == simt || (wm >= 32 && wn >= 32) || threads == 256");
  EXPECT_EQ(space.violated_constraint(mma({{"bm", 128}, {"wm", 16}, {"wn", 64}, {"group_m", 1}}), ragged, limits),
            "algo == simt || (wm <= 2 * wn && wn <= 2 * wm)");

  for (const Shape& shape : {at(1024, 1024, 1024), at(4096, 256, 256)}) {
    const auto configs = space.enumerate(shape, limits).configs;
    std::size_t split = 0, narrow = 0;
    for (const Config& c : configs) {
      split += space.numeric(c, "split_k") > 1;
      narrow += space.numeric(c, "algo") == 1 && (space.numeric(c, "wm") == 16 || space.numeric(c, "wn") == 16);
    }
    EXPECT_LE(configs.size(), 2500u);
    EXPECT_GT(split, 100u);
    EXPECT_GT(narrow, 100u);
  }
}

// corr bf16 (issue 36): the same GEMM launch, block, grid and shared memory as corr tf32, in
// ln_linear_gelu_mma_bf16c_kernel (its own name, so that tf32 records keep their kernel and machine
// code); records without corr read as tf32; split-K and the SIMT path keep tf32.
TEST(LnLinearGeluSpace, Bf16CorrectionIsItsOwnKernelWithTheTf32Geometry) {
  const std::string dir = (std::filesystem::path(TUNE_REPO_DIR) / "examples" / "ln_linear_gelu").string();
  const Space space = load_space(dir, std::nullopt);
  const DeviceLimits limits = DeviceLimits::for_arch(90);
  const Shape shape = resolve_shape(find_problem(dir), space, {{"M", 1000}, {"K", 260}, {"N", 301}});
  nlohmann::ordered_json j = space.to_json(space.baseline());
  EXPECT_EQ(j.at("corr"), "tf32");
  j.update({{"bm", 64}, {"bn", 64}, {"bk", 32}, {"algo", "mma"}, {"stages", 3}, {"group_m", 8}});
  for (const char* ln : {"separate", "fused"}) {
    j["ln"] = ln;
    j["corr"] = "tf32";
    const Lowered tf32 = space.lower(space.from_json(j), shape, limits);
    j["corr"] = "bf16";
    ASSERT_EQ(space.violated_constraint(space.from_json(j), shape, limits), "");
    const Lowered bf16 = space.lower(space.from_json(j), shape, limits);
    ASSERT_EQ(bf16.launches.size(), tf32.launches.size());
    const KernelLaunch& a = tf32.launches.back();
    const KernelLaunch& b = bf16.launches.back();
    const std::string fused = std::string(ln) == "fused" ? "1" : "0";
    EXPECT_EQ(a.name_expression, "ln_linear_gelu_mma_kernel<1000,260,301,64,64,32,32,32,3,8," + fused + ">");
    EXPECT_EQ(b.name_expression, "ln_linear_gelu_mma_bf16c_kernel<1000,260,301,64,64,32,32,32,3,8," + fused + ">");
    EXPECT_EQ(b.grid, a.grid);
    EXPECT_EQ(b.block, a.block);
    EXPECT_EQ(b.dynamic_smem, a.dynamic_smem);
    EXPECT_EQ(b.args, a.args);
  }
  j["ln"] = "separate";
  j["split_k"] = 2;
  EXPECT_EQ(space.violated_constraint(space.from_json(j), shape, limits), "corr == tf32 || (algo == mma && split_k == 1)");
  nlohmann::ordered_json simt = space.to_json(space.baseline());
  simt["corr"] = "bf16";
  EXPECT_EQ(space.violated_constraint(space.from_json(simt), shape, limits),
            "corr == tf32 || (algo == mma && split_k == 1)");
  nlohmann::ordered_json old = space.to_json(space.baseline());
  old.erase("corr");  // a record from before corr
  EXPECT_EQ(space.to_json(space.from_json(old)).at("corr"), "tf32");
}

}  // namespace
}  // namespace tune
