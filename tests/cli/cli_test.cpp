// The tune command line, end to end, as a user runs it.
#include <gtest/gtest.h>

#include <unistd.h>

#include <sys/wait.h>
#include <array>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "support/cli_run.hpp"
#include "support/fixture_problem.hpp"
#include "support/paths.hpp"
#include "tune/compile.hpp"
#include "tune/device.hpp"
#include "tune/io.hpp"

namespace {

TEST(Cli, UnknownProblemListsTheKnownOnes) {
  expect_error("--problem nope --B 1 --N 8", "known problems: contact, scene_graph");
}

TEST(Cli, NonPositiveShapeNamesTheDimension) {
  expect_error("--problem contact --B 4 --N 0", "--N must be a positive integer");
  expect_error("--problem contact --B -1 --N 8", "--B must be a positive integer");
}

TEST(Cli, ADimensionOfAnotherProblemIsRefused) {
  expect_error("--problem contact --B 4 --N 8 --D 16", "--D is not a dimension of problem contact");
}

TEST(Cli, AMissingDimensionIsNamed) { expect_error("--problem contact --B 4", "needs --N"); }

TEST(Cli, AShapeTheTemplateCannotTakeIsRefusedWithTheReason) {
  expect_error("--problem contact --B 1 --N 8 --C 100000 --H 32", "is not supported");
}

TEST(Cli, UnreadableAndMalformedConfigsNameTheFileAndTheReason) {
  expect_error("--problem contact --B 1 --N 8 --config /nonexistent/space.json", "/nonexistent/space.json: cannot be read");
  const std::string broken = std::string(TUNE_FIXTURES) + "/broken_space.json";
  expect_error("--problem contact --B 1 --N 8 --config " + broken, "broken_space.json: not valid JSON");
  const std::string bad = std::string(TUNE_FIXTURES) + "/bad_constraint_space.json";
  expect_error("--problem contact --B 1 --N 8 --config " + bad, "bad_constraint_space.json: constraint");
}

TEST(Cli, AnArchNvrtcCannotCompileForIsRefusedBeforeAnythingCompiles) {
  const std::string out = out_dir("bad_arch");
  for (const char* arch : {"0", "999", "-90", "91"}) {
    for (const std::string env : {"", "TUNE_WORKER_FAKE=1"}) {
      const std::string args = "--problem contact --B 1 --N 8 --out " + out + " --no-cache --arch " + arch +
                               (env.empty() ? " --compile-only" : "");
      const Result r = run_with(env, args);
      EXPECT_EQ(r.code, 2) << args << "\n" << r.output;
      expect_error_output(r, std::string("--arch ") + arch + ": NVRTC " + tune::nvrtc_version() +
                                 " cannot compile for compute capability " + arch + "; it supports ");
      EXPECT_NE(r.output.find("90"), std::string::npos) << r.output;
      EXPECT_FALSE(std::filesystem::exists(out)) << "nothing runs: " << r.output;
    }
  }
  // A sweep on fake devices is refused the same way.
  expect_error("--problem contact --B 1,2 --N 8 --devices all --arch 999", "--arch 999: NVRTC");
}

// --arch takes the forms NVRTC and nvcc users write (90, sm_90, sm90, compute_90), all meaning 90;
// anything else is refused in one line that names the forms (it was "Could not convert").
TEST(Cli, ArchTakesSm90AndItsOtherSpellings) {
  const std::string base = "--problem contact --B 2 --N 8 --C 16 --H 8 --compile-only --budget 1 --no-cache --config " +
                           std::string(TUNE_FIXTURES) + "/contact_small_space.json";
  for (const std::string arch : {"90", "sm_90", "sm90", "compute_90", "sm_090"}) {
    const std::string out = out_dir("arch_" + arch);
    const Result r = run(base + " --out " + out + " --arch " + arch);
    EXPECT_EQ(r.code, 0) << arch << "\n" << r.output;
    EXPECT_TRUE(std::filesystem::exists(out + "/compile-only-sm_90/contact/B2_N8_C16_H8.json")) << arch << "\n" << r.output;
  }
  expect_error(base + " --arch sm_999", "--arch 999: NVRTC");
  for (const std::string arch : {"hopper", "sm_9x", "sm_", "sm_90a", "9.0"}) {
    const Result r = run(base + " --out " + out_dir("arch_bad") + " --arch " + arch);
    EXPECT_EQ(r.code, 2) << arch << "\n" << r.output;
    expect_error_output(r, "--arch: " + arch + " is not a compute capability; give it as 90, sm_90 or sm90");
  }
  // tune export torch takes the same forms: past the option, the missing file is what it refuses.
  const Result e = run("export torch /nonexistent/r.json -o " + out_dir("arch_export") + " --arch sm_90");
  EXPECT_EQ(e.code, 2) << e.output;
  EXPECT_EQ(e.output.find("--arch"), std::string::npos) << e.output;
  expect_error("export torch /nonexistent/r.json -o " + out_dir("arch_export") + " --arch hopper",
               "--arch: hopper is not a compute capability");
}

TEST(Cli, OptionValuesOutsideTheirRangeAreOneLineAndExitCode2) {
  const std::string out = out_dir("bad_options");
  const std::string base = "--problem contact --B 2 --N 8 --C 16 --H 8 --compile-only --config " +
                           std::string(TUNE_FIXTURES) + "/contact_small_space.json";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--jobs -1", "--jobs -1: expected 1 to 1024 parallel compiles"},
      {"--jobs 0", "--jobs 0: expected 1 to 1024"},
      {"--jobs 2000000000", "--jobs 2000000000: expected 1 to 1024"},
      {"--top -1", "--top -1: expected 0 or more"},
      {"--time-budget=-5", "--time-budget -5: expected a positive number of seconds"},
      {"--time-budget nan", "--time-budget nan: expected a positive number of seconds"},
      {"--time-budget inf", "--time-budget inf: expected a positive number of seconds"},
      {"--variant-timeout=-1", "--variant-timeout -1: expected a positive number of seconds"},
      {"--variant-timeout nan", "--variant-timeout nan: expected a positive number of seconds"},
      {"--variant-timeout 0", "--variant-timeout 0: expected a positive number of seconds"},
      {"--seed=-1", "--seed -1: expected an integer from 0 to 18446744073709551615"},
      {"--seed 18446744073709551616", "--seed 18446744073709551616: expected an integer from 0 to"},
      {"--seed 99999999999999999999999", "--seed 99999999999999999999999: expected an integer"},
      {"--seed 7x", "--seed 7x: expected an integer"},
      {"--device=-1", "--device -1: expected a CUDA device ordinal, 0 or more"},
      {"--cache-dir ''", "--cache-dir is given an empty value"},
      {"--header ''", "--header is given an empty value"},
  };
  for (const auto& [option, needle] : cases) {
    for (const std::string env : {"", "TUNE_WORKER_FAKE=1"}) {
      const Result r = run_with(env, base + " --out " + out + " " + option);
      EXPECT_EQ(r.code, 2) << env << " " << option << "\n" << r.output;
      SCOPED_TRACE(option);
      expect_error_output(r, needle);
      EXPECT_FALSE(std::filesystem::exists(out)) << option << ": nothing runs\n" << r.output;
    }
  }
  expect_error("--problem contact --B 2 --N 8 --compile-only --out " + out + " --config ''",
               "--config is given an empty value");
  expect_error(base + " --out ''", "--out is given an empty value");
  expect_error("merge " + out + " --out ''", "--out is given an empty value");
  expect_error("verify " + tune::test::golden_file("contact_B3_N5_C8_H4.json").string() + " --device=-1",
               "--device -1: expected a CUDA device ordinal");
  // The ends of the ranges are taken.
  const Result r =
      run(base + " --out " + out + " --seed 18446744073709551615 --jobs 1 --top 0 --cache-dir " + out + "/cache");
  EXPECT_EQ(r.code, 0) << r.output;
}

TEST(Cli, AnUnwritableOutputDirectoryIsReportedBeforeTheTune) {
  expect_error("--problem contact --B 1 --N 8 --compile-only --out /proc/tune-results", "--out");
  // A --header under a file names --header (it said --out), and a written file under a file or onto
  // a folder names the path given and why (it named a temporary file, or said "permissions").
  const std::string out = out_dir("unwritable_places");
  std::filesystem::create_directories(out);
  std::ofstream(out + "/afile") << "x";
  expect_error("--problem contact --B 1 --N 8 --compile-only --out " + out + "/r --header " + out + "/afile/h.hpp",
               "cannot create output directory " + out + "/afile (Not a directory); pass --header to choose another");
  const std::string contact = std::string(TUNE_FIXTURES) + "/merge/contact/synthetic_gpu_a_B4_N64_C64_H32.json";
  expect_error("header " + contact + " --allow-synthetic -o " + out + "/afile/x.hpp",
               "cannot write " + out + "/afile/x.hpp: " + out + "/afile is not a folder");
  expect_error("header " + contact + " --allow-synthetic -o " + out,
               "cannot write " + out + ": it is a folder; name a file");
}

TEST(Cli, CompileOnlySweepRecordsResourcesAndWritesNoHeader) {
  const std::string out = out_dir("compile_only");
  const std::string space = std::string(TUNE_FIXTURES) + "/contact_small_space.json";
  std::string why;
  const bool has_device = tune::query_device(0, &why).has_value();
  // Without a device, tune says so in one line and runs the compile-only sweep; --compile-only forces it.
  const std::string args = "--problem contact --B 2 --N 8 --C 16 --H 8 --config " + space + " --out " + out +
                           " --cache-dir " + out + "/cache" + (has_device ? " --compile-only" : "");
  const Result r = run(args);
  ASSERT_EQ(r.code, 0) << r.output;
  if (!has_device) {
    EXPECT_NE(r.output.find("no CUDA device"), std::string::npos) << r.output;
  }
  const auto json_path = std::filesystem::path(out) / "compile-only-sm_90" / "contact" / "B2_N8_C16_H8.json";
  ASSERT_TRUE(std::filesystem::exists(json_path)) << r.output;
  const auto j = nlohmann::ordered_json::parse(std::ifstream(json_path));
  EXPECT_EQ(j.at("timed"), false);
  EXPECT_EQ(j.at("complete"), true);
  EXPECT_TRUE(j.at("device").is_null());
  ASSERT_GE(j.at("variants").size(), 2u);
  for (const auto& v : j.at("variants")) {
    EXPECT_EQ(v.at("status"), "compiled") << v.dump();
    EXPECT_GT(v.at("max_registers").get<int>(), 0);
    EXPECT_TRUE(v.at("timing").is_null());
  }
  EXPECT_FALSE(std::filesystem::exists(json_path.parent_path() / "B2_N8_C16_H8.hpp"));
  for (const auto& v : j.at("variants")) EXPECT_EQ(v.at("compile_cached"), false);

  // The same run again compiles nothing: every CUBIN comes from the cache, resources intact.
  const Result again = run(args);
  ASSERT_EQ(again.code, 0) << again.output;
  const auto k = nlohmann::ordered_json::parse(std::ifstream(json_path));
  for (const auto& v : k.at("variants")) {
    EXPECT_EQ(v.at("compile_cached"), true) << v.dump();
    EXPECT_GT(v.at("max_registers").get<int>(), 0);
  }
  // --no-cache compiles again.
  const Result fresh = run(args + " --no-cache");
  ASSERT_EQ(fresh.code, 0) << fresh.output;
  const auto f = nlohmann::ordered_json::parse(std::ifstream(json_path));
  EXPECT_EQ(f.at("context").at("compile_cache"), "off");
  for (const auto& v : f.at("variants")) EXPECT_EQ(v.at("compile_cached"), false);
}

TEST(Cli, ACompileCacheThatCannotBeWrittenIsOneWarningAndTheCompilesStand) {
  const std::string out = out_dir("read_only_cache");
  const std::string space = std::string(TUNE_FIXTURES) + "/contact_small_space.json";
  // /proc exists and takes no new files, even from root; a folder without write permission does the
  // same for anyone else.
  std::vector<std::string> caches = {"/proc"};
  if (geteuid() != 0) {
    const auto ro = std::filesystem::path(out) / "read_only";
    std::filesystem::create_directories(ro);
    std::filesystem::permissions(ro, std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
    caches.push_back(ro.string());
  }
  for (const auto& cache : caches) {
    const Result r = run("--problem contact --B 2 --N 8 --C 16 --H 8 --compile-only --config " + space + " --out " + out +
                         " --cache-dir " + cache);
    ASSERT_EQ(r.code, 0) << cache << "\n" << r.output;
    std::size_t warnings = 0;
    for (std::size_t pos = 0; (pos = r.output.find("cannot be written", pos)) != std::string::npos; ++pos) ++warnings;
    EXPECT_EQ(warnings, 1u) << "one warning per run\n" << r.output;
    EXPECT_NE(r.output.find("warning: the compile cache " + cache), std::string::npos) << r.output;
    const auto j = nlohmann::ordered_json::parse(
        std::ifstream(std::filesystem::path(out) / "compile-only-sm_90" / "contact" / "B2_N8_C16_H8.json"));
    ASSERT_GE(j.at("variants").size(), 2u);
    for (const auto& v : j.at("variants")) {
      EXPECT_EQ(v.at("status"), "compiled") << v.dump();
      EXPECT_EQ(v.at("compile_cached"), false) << v.dump();
    }
  }
  if (geteuid() != 0)
    std::filesystem::permissions(std::filesystem::path(out) / "read_only", std::filesystem::perms::owner_all);
}

// What two runs of the same work share: every variant's name, status, resources and launches, in order.
nlohmann::ordered_json comparable(const std::filesystem::path& file) {
  auto j = nlohmann::ordered_json::parse(std::ifstream(file));
  for (auto& v : j.at("variants")) {
    v.erase("compile_seconds");
    v.erase("compile_cached");
  }
  return nlohmann::ordered_json{{"shape", j.at("shape")},
                                {"summary", j.at("summary")},
                                {"variants", j.at("variants")},
                                {"shard", j.at("context").value("shard", nlohmann::ordered_json())}};
}

// --transfer: the sweep's shapes cheapest first, each warm-started from the results of the ones
// before it (the fake worker: no GPU); one line and exit 2 beside what it cannot go with.
TEST(CliSweep, TransferTunesTheCheapShapesFirstAndEachLaterOneFromTheirResults) {
  const std::string out = out_dir("sweep_transfer");
  const std::string base = "--problem contact --B 4,1,2 --N 16 --sanitize off --config " + std::string(TUNE_FIXTURES) +
                           "/contact_sweep_space.json --cache-dir " + out + "/cache --transfer";
  const Result r = run_with("TUNE_WORKER_FAKE=1", base + " --out " + out);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("transfer: 3 shapes, cheapest first per problem: contact B=1 N=16; contact B=2 N=16; "
                          "contact B=4 N=16"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("sweep: 3 of 3 items run in "), std::string::npos) << r.output;
  const auto dir = std::filesystem::path(out) / "fake-gpu" / "contact";
  std::vector<std::string> taught;
  for (const char* tag : {"B1_N16_C64_H32", "B2_N16_C64_H32", "B4_N16_C64_H32"}) {
    const auto file = dir / (std::string(tag) + ".json");
    const auto j = nlohmann::ordered_json::parse(std::ifstream(file));
    const auto& search = j.at("context").at("search");
    if (taught.empty()) {
      EXPECT_EQ(search.at("strategy"), "exhaustive") << tag;
    } else {
      EXPECT_EQ(search.at("strategy"), "warm") << tag;
      EXPECT_EQ(search.at("warm_start").at("files").get<std::vector<std::string>>(), taught) << tag;
    }
    taught.push_back(file.string());
  }
  for (const auto& [extra, clash] :
       std::vector<std::pair<std::string, std::string>>{{"--budget 2", "--budget (the warm start chooses the variants)"},
                                                        {"--shard 0/2",
                                                         "--shard (a shard does not see the others' results)"}}) {
    const Result bad = run_with("TUNE_WORKER_FAKE=1", base + " " + extra + " --out " + out + "/bad");
    EXPECT_EQ(bad.code, 2) << bad.output;
    expect_error_output(bad, "--transfer tunes the sweep's shapes in one sequence; leave out " + clash);
  }
}

TEST(CliSweep, ShardsOfASweepAndOfOneShapeMergeIntoTheUnshardedFiles) {
  const std::string out = out_dir("sweep");
  const std::string base = "--problem contact --B 1,2 --N 16 --compile-only --config " + std::string(TUNE_FIXTURES) +
                           "/contact_sweep_space.json --cache-dir " + out + "/cache";
  const Result whole = run(base + " --out " + out + "/whole");
  ASSERT_EQ(whole.code, 0) << whole.output;
  EXPECT_NE(whole.output.find("sweep: 2 of 2 items run"), std::string::npos) << whole.output;
  const auto dir = std::filesystem::path("compile-only-sm_90") / "contact";
  for (const char* tag : {"B1_N16_C64_H32", "B2_N16_C64_H32"})
    ASSERT_TRUE(std::filesystem::exists(std::filesystem::path(out) / "whole" / dir / (std::string(tag) + ".json")));

  // Two shards of the sweep (a shape each), then three of one shape (its variants split).
  for (int k = 0; k < 2; ++k) {
    const Result r = run(fmt::format("{} --shard {}/2 --out {}/s{}", base, k, out, k));
    ASSERT_EQ(r.code, 0) << r.output;
  }
  const std::string one = "--problem contact --B 2 --N 16 --compile-only --config " + std::string(TUNE_FIXTURES) +
                          "/contact_sweep_space.json --cache-dir " + out + "/cache";
  for (int k = 0; k < 3; ++k) {
    const Result r = run(fmt::format("{} --shard {}/3 --out {}/v{}", one, k, out, k));
    ASSERT_EQ(r.code, 0) << r.output;
    EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(out) / fmt::format("v{}", k) / dir /
                                        fmt::format("B2_N16_C64_H32.shard-{}-of-3.json", k)))
        << r.output;
  }
  const Result m1 = run("merge " + out + "/s0 " + out + "/s1 --out " + out + "/merged_sweep");
  ASSERT_EQ(m1.code, 0) << m1.output;
  const Result m2 = run("merge " + out + "/v0 " + out + "/v2 " + out + "/v1 --out " + out + "/merged_one");
  ASSERT_EQ(m2.code, 0) << m2.output;
  for (const char* tag : {"B1_N16_C64_H32.json", "B2_N16_C64_H32.json"})
    EXPECT_EQ(comparable(std::filesystem::path(out) / "merged_sweep" / dir / tag),
              comparable(std::filesystem::path(out) / "whole" / dir / tag))
        << tag;
  EXPECT_EQ(comparable(std::filesystem::path(out) / "merged_one" / dir / "B2_N16_C64_H32.json"),
            comparable(std::filesystem::path(out) / "whole" / dir / "B2_N16_C64_H32.json"));

  // An incomplete set, and shards of another run, are refused in one line.
  expect_error("merge " + out + "/v0 " + out + "/v1 --out " + out + "/x", "shard(s) 2 of 3 are missing");
  const Result seeded = run(one + " --seed 7 --shard 2/3 --out " + out + "/seeded");
  ASSERT_EQ(seeded.code, 0) << seeded.output;
  expect_error("merge " + out + "/v0 " + out + "/v1 " + out + "/seeded --out " + out + "/x", "differ in seed (42 vs 7)");
  // Timed shards gated otherwise: the merged winner would be one that the merged record's gate never
  // checked (adversarial round 3: merged, exit 0).
  const std::string fake =
      std::string("TUNE_WORKER_FAKE=1 TUNE_SANITIZER=") + TUNE_REPO_DIR + "/tests/support/fake-compute-sanitizer";
  const std::string timed = "--problem contact --B 2 --N 16 --torch off --config " + std::string(TUNE_FIXTURES) +
                            "/contact_sweep_space.json --cache-dir " + out + "/cache";
  ASSERT_EQ(run_with(fake, timed + " --shard 0/2 --out " + out + "/g0").code, 0);
  ASSERT_EQ(run_with(fake, timed + " --shard 1/2 --sanitize off --out " + out + "/g1").code, 0);
  expect_error("merge " + out + "/g0 " + out + "/g1 --out " + out + "/x", "differ in gate (--sanitize) (winner vs off)");
  // A part of a shape's variants is no result to build a header or a report from.
  const auto part = std::filesystem::path(out) / "v0" / dir / "B2_N16_C64_H32.shard-0-of-3.json";
  expect_error("header " + part.string() + " -o " + out + "/x.hpp", "combine the shards with tune merge");
  // Nor to ship: the exports took a timed shard's own best, of half the space (adversarial round 5).
  const auto timed_part = std::filesystem::path(out) / "g0" / "fake-gpu" / "contact" / "B2_N16_C64_H32.shard-0-of-2.json";
  ASSERT_TRUE(std::filesystem::exists(timed_part));
  expect_error("export torch " + timed_part.string() + " --allow-synthetic -o " + out + "/pkg",
               timed_part.string() + ": one shard of a shape's variants (tune --shard); combine the shards with tune merge");
  expect_error("export nvrtc " + timed_part.string(), "combine the shards with tune merge");
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::path(out) / "pkg"));
}

// --devices on fake devices (TUNE_WORKER_FAKE_DEVICES): no GPU needed. Two fake devices share the
// name "Fake GPU", so each writes under fake-gpu-<first 8 hex of its UUID>.
namespace multi {

const char* kDevice0 = "GPU-fa4e0000-0000-0000-0000-000000000000";
const char* kDevice1 = "GPU-fa4e0001-0000-0000-0000-000000000000";
const std::vector<std::string> kTags = {"B1_N16_C64_H32", "B2_N16_C64_H32", "B3_N16_C64_H32", "B4_N16_C64_H32"};

std::string sweep(const std::string& out) {
  return "--problem contact --B 1,2,3,4 --N 16 --config " + std::string(TUNE_FIXTURES) +
         "/contact_sweep_space.json --cache-dir " + out + "/cache";
}

Result run_fake(const std::string& env, const std::string& args) {
  return run_with("TUNE_WORKER_FAKE=1 TUNE_WORKER_FAKE_DELAY_MS=20 " + env, args);
}

// comparable() less what differs between devices and runs: the timings (the fake's are made up).
nlohmann::ordered_json same_work(const std::filesystem::path& file) {
  auto j = comparable(file);
  for (auto& v : j.at("variants")) {
    for (const char* k : {"timing", "search_timing", "throughput", "load_seconds", "first_launch_ms", "evaluate_ms",
                          "parity_ms", "unload_ms"})
      v.erase(k);
    if (v.contains("gate") && v.at("gate").is_object()) v.at("gate").erase("seconds");  // wall time
  }
  return j;
}

}  // namespace multi

TEST(CliDevices, ASweepOnTwoDevicesSpreadsItsShapesAndMatchesTheSerialRun) {
  const std::string out = out_dir("devices_all");
  const Result serial = multi::run_fake("", multi::sweep(out) + " --out " + out + "/serial");
  ASSERT_EQ(serial.code, 0) << serial.output;
  const Result r =
      multi::run_fake("TUNE_WORKER_FAKE_DEVICES=2", multi::sweep(out) + " --devices all --out " + out + "/multi");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("sweep: 4 items run on 2 devices"), std::string::npos) << r.output;
  std::map<std::string, int> per_device;
  for (const auto& tag : multi::kTags) {
    int found = 0;
    for (const auto& [dir, uuid, ordinal] :
         {std::tuple{"fake-gpu-fa4e0000", multi::kDevice0, 0}, std::tuple{"fake-gpu-fa4e0001", multi::kDevice1, 1}}) {
      const auto file = std::filesystem::path(out) / "multi" / dir / "contact" / (tag + ".json");
      if (!std::filesystem::exists(file)) continue;
      ++found;
      ++per_device[dir];
      const auto j = nlohmann::ordered_json::parse(std::ifstream(file));
      EXPECT_EQ(j.at("complete"), true) << file;
      EXPECT_EQ(j.at("device").at("uuid"), uuid) << file;
      EXPECT_EQ(j.at("device").at("ordinal"), ordinal) << file;
      EXPECT_EQ(multi::same_work(file),
                multi::same_work(std::filesystem::path(out) / "serial" / "fake-gpu" / "contact" / (tag + ".json")))
          << tag;
    }
    EXPECT_EQ(found, 1) << tag << " is measured once, on one device\n" << r.output;
  }
  EXPECT_EQ(per_device.size(), 2u) << "both devices take items\n" << r.output;
}

TEST(CliDevices, AFailingDeviceHandsItsWorkToTheOther) {
  const std::string out = out_dir("devices_fail");
  const Result r = multi::run_fake("TUNE_WORKER_FAKE_DEVICES=2 TUNE_WORKER_FAKE_FAIL_DEVICE=1",
                                   multi::sweep(out) + " --devices all --out " + out + "/multi");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find(std::string("device 1 (Fake GPU, ") + multi::kDevice1 + ") failed: "), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("its work goes to the others"), std::string::npos) << r.output;
  for (const auto& tag : multi::kTags) {
    const auto file = std::filesystem::path(out) / "multi" / "fake-gpu-fa4e0000" / "contact" / (tag + ".json");
    ASSERT_TRUE(std::filesystem::exists(file)) << tag << "\n" << r.output;
    EXPECT_EQ(nlohmann::ordered_json::parse(std::ifstream(file)).at("complete"), true) << file;
  }
  // The failed card keeps no half-run file of the item it dropped (nor the snapshot a run keeps
  // beside the results while it goes).
  for (const auto& tag : multi::kTags)
    for (const char* ext : {".json", ".json.partial", ".journal.jsonl"})
      EXPECT_FALSE(
          std::filesystem::exists(std::filesystem::path(out) / "multi" / "fake-gpu-fa4e0001" / "contact" / (tag + ext)))
          << tag << ext;

  // Every device failing: one error line, a non-zero exit.
  const Result all = multi::run_fake("TUNE_WORKER_FAKE_DEVICES=1 TUNE_WORKER_FAKE_FAIL_DEVICE=0",
                                     multi::sweep(out) + " --devices all --out " + out + "/none");
  EXPECT_EQ(all.code, 3) << all.output;
  EXPECT_NE(all.output.find("tune: every device failed (1 of 1), 4 of 4 items not run"), std::string::npos) << all.output;
}

TEST(CliDevices, ReplicateRunsEveryShapeOnEveryDevice) {
  const std::string out = out_dir("devices_replicate");
  const Result r = multi::run_fake("TUNE_WORKER_FAKE_DEVICES=2", "--problem contact --B 1,2 --N 16 --config " +
                                                                     std::string(TUNE_FIXTURES) +
                                                                     "/contact_sweep_space.json --cache-dir " + out +
                                                                     "/cache --devices 0,1 "
                                                                     "--replicate --out " +
                                                                     out);
  ASSERT_EQ(r.code, 0) << r.output;
  for (const char* dir : {"fake-gpu-fa4e0000", "fake-gpu-fa4e0001"})
    for (const char* tag : {"B1_N16_C64_H32", "B2_N16_C64_H32"})
      EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(out) / dir / "contact" / (std::string(tag) + ".json")))
          << dir << "/" << tag << "\n"
          << r.output;
}

TEST(CliDevices, UnknownDevicesAreOneLineAndExitCode2) {
  const std::string out = out_dir("devices_unknown");
  const Result r = multi::run_fake("TUNE_WORKER_FAKE_DEVICES=2", multi::sweep(out) + " --devices 5 --out " + out);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("tune: --devices: device 5 does not exist (this machine has 2"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::path(out) / "fake-gpu-fa4e0000")) << "nothing ran";
  expect_error("--problem contact --B 1 --N 16 --devices 0,x", "expected all or a comma list");
  expect_error("--problem contact --B 1 --N 16 --devices 0,0", "device 0 is listed twice");
  expect_error("--problem contact --B 1 --N 16 --replicate", "--replicate runs each shape on every device");
  // --device of an ordinal the machine lacks, as --devices (adversarial round 4: the fake worker ran
  // as device 7 of 2; with GPUs, the run fell back to a compile-only sweep).
  const Result one = multi::run_fake("TUNE_WORKER_FAKE_DEVICES=2", multi::sweep(out) + " --device 7 --out " + out);
  EXPECT_EQ(one.code, 2) << one.output;
  EXPECT_NE(one.output.find("tune: --device 7: this machine has 2 CUDA devices (ordinals 0 to 1)"), std::string::npos)
      << one.output;
}

// The README's main job on a machine without a GPU: its first line says that it falls back to a
// compile-only sweep and how to make it short (--budget); once the variants are counted, before
// anything compiles, a line says how many, about how long and where the results go. Here --out
// is a file, so the run stops right after that line.
TEST(Cli, WithoutAGpuTheFirstLineSaysWhatTheCompileOnlySweepWillDoAndHowLong) {
  if (tune::query_device(0, nullptr)) GTEST_SKIP() << "a CUDA device is present";
  const std::string out = out_dir("compile_only_plan");
  std::filesystem::create_directories(out);
  std::ofstream(out + "/file") << "not a folder\n";
  const std::string shape = "--problem contact --B 2 --N 8 --C 16 --H 8 --config " + std::string(TUNE_FIXTURES) +
                            "/contact_sweep_space.json --jobs 2 --out " + out + "/file";
  const Result r = run(shape);
  EXPECT_EQ(r.code, 2) << r.output;
  const std::string first = r.output.substr(0, r.output.find('\n'));
  EXPECT_EQ(first.rfind("no CUDA device (", 0), 0u) << r.output;
  EXPECT_NE(first.find("): a compile-only sweep for sm_90 instead: every variant compiled, nothing timed; pass --budget "
                       "50 to compile a sample"),
            std::string::npos)
      << r.output;
  const std::regex plan(
      "compile-only sweep: (\\d+) variants for sm_90 on 2 compile job\\(s\\), about \\S+ \\(1\\.5 s a "
      "compile a job; less from the compile cache\\), results into " +
      out + "/file/compile-only-sm_90/contact/(; --budget 50 compiles a sample)?\n");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.output, m, plan)) << r.output;
  EXPECT_EQ(m[2].matched, std::stoi(m[1]) > 50) << r.output;
  // --compile-only says the same line (no fallback, no first line about a device).
  const Result asked = run(shape + " --compile-only --budget 3");
  EXPECT_EQ(asked.output.find("no CUDA device"), std::string::npos) << asked.output;
  ASSERT_TRUE(std::regex_search(asked.output, m, plan)) << asked.output;
  EXPECT_LE(std::stoi(m[1]), 4) << asked.output;
  EXPECT_FALSE(m[2].matched) << asked.output;
}

// The help texts name the product's own paths: nothing outside it (the project's shared/ folder,
// its spec files), which a user of tune does not have.
TEST(Cli, HelpTextsNameOnlyTheProductsOwnPaths) {
  for (const std::string sub : {"", "verify", "report", "header", "export torch", "merge", "check", "list"}) {
    const Result r = run(sub + " --help");
    EXPECT_EQ(r.code, 0) << sub << "\n" << r.output;
    for (const std::string outside : {"shared/", "PROBLEMS.md", "MEASURE.md", "STYLE.md"})
      EXPECT_EQ(r.output.find(outside), std::string::npos) << "tune " << sub << " --help names " << outside << "\n"
                                                           << r.output;
  }
  EXPECT_NE(run("verify --help").output.find("<problem folder>/golden/*.json"), std::string::npos);
}

TEST(CliDevices, AllWithoutAGpuIsTheCompileOnlySweepOnce) {
  if (tune::query_device(0, nullptr)) GTEST_SKIP() << "a CUDA device is present";
  const std::string out = out_dir("devices_none");
  const Result r = run("--problem contact --B 1,2 --N 16 --config " + std::string(TUNE_FIXTURES) +
                       "/contact_sweep_space.json --cache-dir " + out + "/cache --devices all --out " + out);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("sweep: 2 of 2 items run"), std::string::npos) << r.output;
  EXPECT_TRUE(
      std::filesystem::exists(std::filesystem::path(out) / "compile-only-sm_90" / "contact" / "B2_N16_C64_H32.json"));
}

TEST(CliSweep, BadSweepInputIsOneLineAndExitCode2) {
  expect_error("--problem contact --B 1,1 --N 16", "--B repeats a value");
  expect_error("--problem contact --B 1,2 --N 16 --shard 2/2", "expected K/N");
  expect_error("--problem contact --B 1,0 --N 16", "sweep item 1 (contact B=0 N=16): --B must be a positive integer");
  expect_error("--problem contact --B 1,2 --N 16 --header x.hpp", "--header names one file");
  expect_error("--sweep /nonexistent/sweep.json", "/nonexistent/sweep.json: cannot be read");
  expect_error("--sweep /nonexistent/sweep.json --problem contact", "leave out --problem");
  expect_error("merge /nonexistent/shard", "no such file or folder");
  // A key beside "items" (adversarial round 4: passed over in silence).
  const std::string file = out_dir("sweep_extra_key") + "/sweep.json";
  std::filesystem::create_directories(std::filesystem::path(file).parent_path());
  std::ofstream(file) << R"({"items": [{"problem": "contact", "B": 1, "N": 16}], "extra": 1})";
  expect_error("--sweep " + file + " --compile-only", file + ": unknown key \"extra\" (a sweep file holds \"items\" alone)");
  // A dtype the problem does not take is named where the file gives it (it was named as --T).
  std::ofstream(file) << R"({"items": [{"problem": ")" << TUNE_FIXTURES
                      << R"(/problems/affine_typed", "R": 8, "T": "float64"}]})";
  expect_error("--sweep " + file + " --compile-only", file + ": items[0].T: \"float64\" is not a dtype problem " +
                                                          std::string(TUNE_FIXTURES) +
                                                          "/problems/affine_typed takes (float32, bfloat16)");
}

TEST(Cli, ATimeBudgetStopsTheSweepAndStillWritesACompleteResult) {
  const std::string out = out_dir("time_budget");
  const Result r = run("--problem contact --B 4 --N 64 --compile-only --no-cache --time-budget 0.5 --out " + out);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("time budget of 0.5 s reached"), std::string::npos) << r.output;
  const auto j = nlohmann::ordered_json::parse(
      std::ifstream(std::filesystem::path(out) / "compile-only-sm_90" / "contact" / "B4_N64_C64_H32.json"));
  EXPECT_EQ(j.at("complete"), true);
  EXPECT_EQ(j.at("context").at("search").at("stopped_by_time_budget"), true);
  EXPECT_EQ(j.at("context").at("search").at("time_budget_s"), 0.5);
  std::size_t compiled = 0, skipped = 0;
  for (const auto& v : j.at("variants")) {
    if (v.at("status") == "compiled") ++compiled;
    if (v.at("status") == "skipped") {
      ++skipped;
      EXPECT_NE(v.at("reason").get<std::string>().find("--time-budget"), std::string::npos) << v.dump();
    }
  }
  EXPECT_GE(compiled, 1u);
  EXPECT_GE(skipped, 1u);
  EXPECT_EQ(compiled + skipped, j.at("variants").size()) << "every variant is accounted for";
  // The baseline is compiled first, so a run cut short still has it.
  for (const auto& v : j.at("variants")) {
    if (v.at("baseline") == true) {
      EXPECT_EQ(v.at("status"), "compiled") << v.dump();
    }
  }
}

TEST(Cli, TheFirstCtrlCFinishesTheVariantInHandAndWritesAValidPartialResult) {
  const std::string out = out_dir("interrupt");
  const std::string log = out + ".log";
  std::filesystem::create_directories(out);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::freopen(log.c_str(), "w", stderr);
    execl(TUNE_EXE, TUNE_EXE, "--problem", "contact", "--B", "4", "--N", "64", "--compile-only", "--no-cache", "--out",
          out.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  const auto json_path = std::filesystem::path(out) / "compile-only-sm_90" / "contact" / "B4_N64_C64_H32.json";
  // Wait until the run has written its first snapshot (the variants listed), then interrupt it.
  for (int i = 0; i < 200 && !std::filesystem::exists(json_path); ++i) usleep(50 * 1000);
  usleep(1500 * 1000);
  ASSERT_EQ(kill(pid, SIGINT), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "the first SIGINT must not kill the process";
  EXPECT_EQ(WEXITSTATUS(status), 130);
  const auto j = nlohmann::ordered_json::parse(std::ifstream(json_path));
  EXPECT_EQ(j.at("complete"), true);
  EXPECT_EQ(j.at("context").at("search").at("interrupted"), true);
  std::size_t skipped = 0;
  for (const auto& v : j.at("variants")) {
    EXPECT_NE(v.at("status"), "pending") << v.dump();
    if (v.at("status") == "skipped") {
      ++skipped;
      EXPECT_NE(v.at("reason").get<std::string>().find("interrupted"), std::string::npos) << v.dump();
    }
  }
  EXPECT_GE(skipped, 1u);
}

TEST(Cli, VerifyChecksTheCpuReferenceAgainstGoldenFiles) {
  const Result r =
      run("verify " + tune::test::golden_file("contact_B3_N5_C8_H4.json").string() + " " +
          tune::test::golden_file("scene_graph_B2_N6_D16_H2_P4.json").string() + " --results " + out_dir("verify"));
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("CPU reference vs golden: max abs error"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("all checks passed"), std::string::npos) << r.output;
}

TEST(Cli, VerifyFailsOnATamperedGoldenFile) {
  auto j = nlohmann::ordered_json::parse(std::ifstream(tune::test::golden_file("contact_B3_N5_C8_H4.json")));
  j["output"]["data"][7] = j["output"]["data"][7].get<double>() + 1e-3;
  const auto path = std::filesystem::path(TUNE_BINARY_DIR) / "tampered_golden.json";
  std::ofstream(path) << j.dump();
  const Result r = run("verify " + path.string() + " --results " + out_dir("verify_tampered"));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("MISMATCH"), std::string::npos) << r.output;
}

TEST(Cli, VerifyRefusesAMalformedGoldenFileWithTheReason) {
  const auto path = std::filesystem::path(TUNE_BINARY_DIR) / "short_golden.json";
  auto j = nlohmann::ordered_json::parse(std::ifstream(tune::test::golden_file("contact_B3_N5_C8_H4.json")));
  j["inputs"]["pair_repr"]["data"].erase(0);
  std::ofstream(path) << j.dump();
  expect_error("verify " + path.string(), "inputs.pair_repr has 599 values, its shape needs 600");
}

}  // namespace

// `tune header`: merged headers from the synthetic result files in fixtures/merge.
std::string merge_fixture(const std::string& name) { return std::string(TUNE_FIXTURES) + "/merge/" + name; }

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

TEST(CliHeader, AMergedHeaderIsByteIdenticalAcrossRunsAndArgumentOrders) {
  const std::string out = out_dir("merged_header");
  std::filesystem::create_directories(out);
  const std::string a = merge_fixture("contact/synthetic_gpu_a_B4_N64_C64_H32.json");
  const std::string b = merge_fixture("contact/synthetic_gpu_a_B2_N512_C64_H32.json");
  const std::string c = merge_fixture("contact/synthetic_gpu_b_B4_N64_C64_H32.json");
  const std::vector<std::string> orders = {a + " " + b + " " + c, c + " " + b + " " + a, b + " " + a + " " + c,
                                           a + " " + b + " " + c};
  std::vector<std::string> texts;
  for (std::size_t i = 0; i < orders.size(); ++i) {
    const std::string file = out + "/contact_" + std::to_string(i) + ".hpp";
    const Result r = run("header " + orders[i] + " --allow-synthetic -o " + file);
    ASSERT_EQ(r.code, 0) << r.output;
    texts.push_back(read_text(file));
  }
  ASSERT_FALSE(texts[0].empty());
  for (const auto& t : texts) EXPECT_EQ(t, texts[0]);
  EXPECT_NE(texts[0].find("Synthetic GPU A (fixture)"), std::string::npos);
  EXPECT_NE(texts[0].find("Synthetic GPU B (fixture)"), std::string::npos);
  EXPECT_NE(texts[0].find("SYNTHETIC: nothing was measured"), std::string::npos) << "marked in the header";
}

TEST(CliHeader, BadInputIsOneLineAndExitCode2) {
  const std::string out = out_dir("merged_header_errors") + ".hpp";
  const std::string contact = merge_fixture("contact/synthetic_gpu_a_B4_N64_C64_H32.json");
  const std::string scene = merge_fixture("scene_graph/synthetic_gpu_a_B4_N24_D96_heads4_P16.json");
  expect_error("header " + contact + " " + scene + " -o " + out, "merge one problem per header");
  expect_error("header " + contact + " /nonexistent/result.json -o " + out, "/nonexistent/result.json");
  expect_error("header " + merge_fixture("bad/synthetic_compile_only.json") + " -o " + out, "no winner");
  // Synthetic (fake-GPU) results only with --allow-synthetic (issue 21).
  expect_error("header " + contact + " -o " + out, "pass --allow-synthetic");
  expect_error("header " + contact + " " + contact + " --allow-synthetic -o " + out, "two results for");
  EXPECT_EQ(run("header " + contact + " /nonexistent/result.json -o " + out).code, 2);
  EXPECT_FALSE(std::filesystem::exists(out));
}

// Results of record are kept as .json.gz (results/h200/): tune header and tune merge read
// them as they are; tune check --write refuses to replace one with text.
TEST(CliHeader, AResultKeptAsJsonGzIsReadAsItIs) {
  const std::string out = out_dir("json_gz");
  std::filesystem::create_directories(out + "/shard");
  const std::string gz = std::string(TUNE_REPO_DIR) + "/results/h200/contact/B4_N64_C64_H32.json.gz";
  const Result r = run("header " + gz + " -o " + out + "/contact.hpp");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(read_text(out + "/contact.hpp").find("NVIDIA H200"), std::string::npos);
  expect_error("check " + gz + " --write", gz + ": --write would replace a compressed file with text");
  // A folder of shards merges its .json.gz files too (here one that is no shard: it is read, then refused).
  std::filesystem::copy_file(gz, out + "/shard/B4_N64_C64_H32.json.gz", std::filesystem::copy_options::overwrite_existing);
  expect_error("merge " + out + "/shard --out " + out + "/merged", "B4_N64_C64_H32.json.gz: not a shard's result");
}

TEST(CliHeader, AWinnerWithoutAUsableMedianIsRefused) {
  // A damaged or hand-edited result whose winner's median is null (NaN) or not positive: no header
  // is generated from it.
  const std::string out = out_dir("merged_header_null_median");
  std::filesystem::create_directories(out);
  for (const auto& [tag, median] :
       {std::pair{"null", nlohmann::ordered_json(nullptr)}, std::pair{"zero", nlohmann::ordered_json(0.0)}}) {
    auto j = nlohmann::ordered_json::parse(std::ifstream(merge_fixture("contact/synthetic_gpu_a_B4_N64_C64_H32.json")));
    const std::string winner = j.at("summary").at("winner").get<std::string>();
    for (auto& v : j.at("variants"))
      if (v.at("name") == winner) v["timing"]["median_us"] = median;
    const std::string file = out + "/" + tag + ".json";
    std::ofstream(file) << j.dump();
    expect_error("header " + file + " --allow-synthetic -o " + out + "/" + tag + ".hpp",
                 file + ": variants[1].timing.median_us: " +
                     (median.is_null() ? "null is not a number" : "0.0 is not a positive number"));
    EXPECT_FALSE(std::filesystem::exists(out + "/" + tag + ".hpp"));
  }
}

// An interrupted run names the best variant it had timed, which may never have been gated nor
// strictly re-measured: tune writes no header from it, and neither header nor export torch ships it
// (adversarial round 3: both did, exit 0).
TEST(CliHeader, AnInterruptedRunIsNotShipped) {
  const std::string out = out_dir("header_interrupted");
  std::filesystem::create_directories(out);
  auto j = nlohmann::ordered_json::parse(std::ifstream(merge_fixture("contact/synthetic_gpu_a_B4_N64_C64_H32.json")));
  j["context"]["search"]["interrupted"] = true;
  const std::string file = out + "/interrupted.json";
  std::ofstream(file) << j.dump();
  const std::string why = file + ": the run was interrupted (context.search.interrupted), so its best variant was not gated";
  expect_error("header " + file + " --allow-synthetic -o " + out + "/h.hpp", why);
  expect_error("export torch " + file + " --allow-synthetic -o " + out + "/exp", why);
  EXPECT_FALSE(std::filesystem::exists(out + "/h.hpp"));
}

namespace {
// The helpers the kernel templates share (a problem's include_dirs), for a space written elsewhere.
std::string common_kernels_dir() {
  return (std::filesystem::path(TUNE_FIXTURES) / ".." / ".." / "kernel_templates" / "common").lexically_normal().string();
}
}  // namespace

TEST(CliHeader, AResultThatPredatesAParameterTakesTheBaselinesValueAndSaysSo) {
  // The space gains a parameter after the run (as contact gains async_copy): the merge still works.
  const std::string out = out_dir("merged_header_new_parameter");
  std::filesystem::create_directories(out);
  auto space =
      nlohmann::ordered_json::parse(std::ifstream(std::string(TUNE_FIXTURES) + "/../../configs/contact/problem.json"));
  space["parameters"].push_back({{"name", "added_later"}, {"values", {false, true}}});
  space["baseline"]["added_later"] = false;
  space["include_dirs"] = {common_kernels_dir()};
  std::ofstream(out + "/space.json") << space.dump(1);
  const Result r = run("header " + merge_fixture("contact/synthetic_gpu_a_B4_N64_C64_H32.json") + " --config " + out +
                       "/space.json --allow-synthetic -o " + out + "/contact.hpp");
  ASSERT_EQ(r.code, 0) << r.output;
  const std::string text = read_text(out + "/contact.hpp");
  EXPECT_NE(text.find("added_later: the baseline's value is assumed"), std::string::npos) << text;
  EXPECT_NE(text.find("  int added_later;"), std::string::npos);
  // A parameter that declares what older records ran (`absent`) takes that value, not the
  // baseline's, and needs no assumption (adversarial round 3: the baseline's was taken).
  space["parameters"].push_back({{"name", "with_absent"}, {"values", {0, 1}}, {"absent", 1}});
  space["baseline"]["with_absent"] = 0;
  std::ofstream(out + "/space2.json") << space.dump(1);
  const Result r2 = run("header " + merge_fixture("contact/synthetic_gpu_a_B4_N64_C64_H32.json") + " --config " + out +
                        "/space2.json --allow-synthetic -o " + out + "/contact2.hpp");
  ASSERT_EQ(r2.code, 0) << r2.output;
  const std::string text2 = read_text(out + "/contact2.hpp");
  EXPECT_EQ(text2.find("with_absent: the baseline's value is assumed"), std::string::npos) << text2;
  EXPECT_EQ(text2.find("added_later, with_absent"), std::string::npos) << text2;
  // The entry's params, in the space's order: with_absent, the last, is 1 (its absent value).
  const std::size_t params_at = text2.find('{', text2.find("{\"strategy=mma", text2.find("kEntries[kEntryCount]")) + 2);
  ASSERT_NE(params_at, std::string::npos) << text2;
  const std::string params = text2.substr(params_at, text2.find('}', params_at) - params_at + 1);
  EXPECT_TRUE(params.ends_with(", 1}")) << params;
}

// ---- Issue 22 (reliability, round 2): names, huge spaces ---------------------------------------

namespace {

// The small fixture space, changed by `edit`, written to a folder of its own; returns its path.
std::string edited_space(const std::string& name, const std::function<void(nlohmann::ordered_json&)>& edit) {
  auto j = nlohmann::ordered_json::parse(std::ifstream(std::string(TUNE_FIXTURES) + "/contact_small_space.json"));
  j["include_dirs"] = {common_kernels_dir()};  // the fixture's relative folder, from the copy's place
  edit(j);
  const auto dir = std::filesystem::path(out_dir(name + ".space"));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "space.json") << j.dump(1);
  return (dir / "space.json").string();
}

const char* const kSmallShape = "--problem contact --B 2 --N 8 --C 16 --H 8";

// A string value "true" redefined `true` in every expression of the space; any name that shadows a
// built-in constant is refused at load in one line (exit 2), before anything runs.
TEST(Cli, ANameThatShadowsABuiltinOfExpressionsIsRefusedInOneLine) {
  const std::string out = out_dir("shadowed_name");
  const std::vector<std::tuple<std::string, std::function<void(nlohmann::ordered_json&)>, std::string>> cases = {
      {"true_value",
       [](auto& j) {
         j["parameters"].push_back({{"name", "flag"}, {"values", {"true", "other"}}});
         j["baseline"]["flag"] = "true";
       },
       "parameter 'flag' value \"true\": 'true' is a built-in constant of expressions"},
      {"false_value",
       [](auto& j) {
         j["parameters"].push_back({{"name", "flag"}, {"values", {"other", "false"}}});
         j["baseline"]["flag"] = "other";
       },
       "'false' is a built-in constant of expressions"},
      {"parameter_name",
       [](auto& j) {
         j["parameters"].push_back({{"name", "true"}, {"values", {1, 2}}});
         j["baseline"]["true"] = 1;
       },
       "parameter 'true': 'true' is a built-in constant of expressions"},
      {"device_limit_value",  // was an internal error, exit 4
       [](auto& j) {
         j["parameters"].push_back({{"name", "flag"}, {"values", {"dev_cc", "other"}}});
         j["baseline"]["flag"] = "other";
       },
       "parameter 'flag' value \"dev_cc\": names starting with dev_ are the device's limits"},
  };
  for (const auto& [name, edit, needle] : cases) {
    for (const std::string env : {"", "TUNE_WORKER_FAKE=1"}) {
      const std::string args = std::string(kSmallShape) + " --config " + edited_space(name, edit) + " --out " + out +
                               (env.empty() ? " --compile-only" : "");
      const Result r = run_with(env, args);
      EXPECT_EQ(r.code, 2) << name << "\n" << r.output;
      SCOPED_TRACE(name);
      expect_error_output(r, needle);
      EXPECT_FALSE(std::filesystem::exists(out)) << "nothing runs: " << r.output;
    }
  }
}

// Five unused parameters of 100 values each over the small space: 1.4e14 configurations.
std::string huge_space() {
  return edited_space("huge", [](auto& j) {
    for (int p = 0; p < 5; ++p) {
      nlohmann::ordered_json values = nlohmann::ordered_json::array();
      for (int i = 0; i < 100; ++i) values.push_back(i);
      const std::string name = fmt::format("x{}", p);
      j["parameters"].push_back({{"name", name}, {"values", values}});
      j["baseline"][name] = 0;
    }
  });
}

// A space of 1e14 configurations enumerated for ever with no output (issue 22, item 5): it is
// counted first and refused in one line that names the count and what to do; `timeout` ends the
// run that would not end.
TEST(Cli, AHugeSpaceIsRefusedInOneLineBeforeAnythingRuns) {
  const std::string out = out_dir("huge_space");
  const std::string space = huge_space();
  for (const std::string env : {"", "TUNE_WORKER_FAKE=1"}) {
    const Result r = run_command(env + " timeout -s KILL 60 " + std::string(TUNE_EXE) + " " + kSmallShape + " --config " +
                                 space + " --out " + out + (env.empty() ? " --compile-only" : ""));
    EXPECT_EQ(r.code, 2) << r.output;
    expect_error_output(r,
                        "space.json: the space has 138240000000000 (1.4e+14) configurations (the product of its "
                        "parameters' values), more than --max-space 4000000; pass --budget N");
    EXPECT_FALSE(std::filesystem::exists(out)) << r.output;
  }
  // The limit is an option; a budget larger than it is refused too.
  expect_error(std::string(kSmallShape) + " --compile-only --out " + out + " --config " + std::string(TUNE_FIXTURES) +
                   "/contact_small_space.json --max-space 100",
               "the space has 13824 configurations (the product of its parameters' values), more than --max-space 100");
  expect_error(std::string(kSmallShape) + " --compile-only --out " + out + " --config " + space +
                   " --budget 20 --max-space 10",
               "--budget 20 is more than --max-space 10");
  expect_error(std::string(kSmallShape) + " --compile-only --out " + out + " --config " + space + " --max-space 0",
               "--max-space 0: expected at least 1");
}

// Round 8: an integer option took CLI11's base-0 conversion and saturated past 2^64 without a word:
// "--jobs 010" was 8 jobs, "--jobs 0x10" 16, "--max-space 10^23" enumerated a space of 10^90
// configurations for ever. A count is decimal (leading zeros dropped), at most 2^64 - 1; a space
// whose product passes 2^64 is never enumerated, whatever --max-space says.
TEST(Cli, IntegerOptionsAreDecimalAndACountPast64BitsIsRefused) {
  const std::string out = out_dir("decimal_counts");
  const std::string base = std::string(kSmallShape) + " --compile-only --out " + out + " --config ";
  const std::string small = std::string(TUNE_FIXTURES) + "/contact_small_space.json";
  expect_error(base + small + " --max-space 0100", "more than --max-space 100;");
  expect_error(base + small + " --jobs 0x10", "--jobs: 0x10 is not a decimal integer");
  expect_error(base + small + " --top 1_0", "--top: 1_0 is not a decimal integer");
  for (const char* big : {"18446744073709551616", "99999999999999999999999"}) {
    expect_error(base + small + " --max-space " + big, fmt::format("--max-space: {} is too large; give at most", big));
    expect_error(base + small + " --max-variants " + big, fmt::format("--max-variants: {} is too large", big));
  }
  // Five parameters of 10^4 values over the small space: past 2^64 configurations.
  const std::string past = edited_space("past_2_64", [](auto& j) {
    for (int p = 0; p < 5; ++p) {
      nlohmann::ordered_json values = nlohmann::ordered_json::array();
      for (int i = 0; i < 10000; ++i) values.push_back(i);
      const std::string name = fmt::format("x{}", p);
      j["parameters"].push_back({{"name", name}, {"values", values}});
      j["baseline"][name] = 0;
    }
  });
  const Result r =
      run_command("timeout -s KILL 60 " + std::string(TUNE_EXE) + " " + base + past + " --max-space 18446744073709551615");
  EXPECT_EQ(r.code, 2) << r.output;
  expect_error_output(r, "the space has at least 1.8e+19 configurations");
  EXPECT_FALSE(std::filesystem::exists(out)) << r.output;
}

// Round 8: a space enumerated past --max-space's default kept every valid configuration until the
// end, then refused them for --max-variants: 10^12 configurations ran until memory ran out. The
// enumeration refuses once the valid ones pass --max-variants (every one would be a variant).
TEST(Cli, AnEnumerationRefusesAsSoonAsItsValidConfigurationsPassMaxVariants) {
  const std::string out = out_dir("max_variants_early");
  const Result r =
      run_command("timeout -s KILL 60 " + std::string(TUNE_EXE) + " " + kSmallShape + " --config " + huge_space() +
                  " --compile-only --out " + out + " --max-space 1000000000000000 --max-variants 1");
  EXPECT_EQ(r.code, 2) << r.output;
  expect_error_output(r, "valid configurations");
  EXPECT_NE(r.output.find("are more than --max-variants 1 a run compiles and times"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(out)) << r.output;
}

// With --budget, a space past the limit is sampled: configurations drawn at random (never
// enumerated) until the budget is met, the draws recorded.
// --warm-start (issue 24): only the configurations within --warm-keep of the best at the nearest
// shape of the given results, --warm-explore others and the baseline are timed; the choice is
// recorded; bad warm-start input is one line and exit 2.
TEST(Cli, AWarmStartTimesThePromisingConfigurationsOfANearbyShapeAndAFewOthers) {
  const auto record = tune::test::repo_dir() / "results/h200/contact/B4_N64_C64_H32.json.gz";
  const auto other = tune::test::repo_dir() / "results/h200/contact/B2_N512_C64_H32.json.gz";
  // What the test expects: the variants within 1.02x of the best of the nearest file (N64 is
  // nearer to N32 than N512 is, so B4 N64's times decide where both timed a configuration).
  const tune::RunRecord doc = tune::read_result(record);
  double best = 1e300;
  for (const auto& v : doc.variants)
    if (v.status == tune::Status::kPassed) best = std::min(best, v.timing->median_us);
  std::set<std::string> promising;
  for (const auto& v : doc.variants)
    if (v.status == tune::Status::kPassed && v.timing->median_us <= 1.02 * best) promising.insert(v.name);
  ASSERT_GE(promising.size(), 1u);
  const std::string out = out_dir("warm_start");
  const Result r = run_with("TUNE_WORKER_FAKE=1",
                            fmt::format("--problem contact --B 4 --N 32 --warm-start {} {} --warm-keep 1.02 "
                                        "--warm-explore 2 --warm-refine 0 --sanitize off --out {} --cache-dir {}/cache",
                                        record.string(), other.string(), out, out));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find(fmt::format("warm start: {} configurations within 1.02x of the best at the nearest shape of 2 "
                                      "file(s), 2 others at random (seed 42)",
                                      promising.size())),
            std::string::npos)
      << r.output;
  const auto j =
      nlohmann::ordered_json::parse(std::ifstream(std::filesystem::path(out) / "fake-gpu/contact/B4_N32_C64_H32.json"));
  const auto& search = j.at("context").at("search");
  EXPECT_EQ(search.at("strategy"), "warm");
  EXPECT_EQ(search.at("warm_start").at("promising"), promising.size());
  EXPECT_EQ(search.at("warm_start").at("explored"), 2);
  EXPECT_EQ(search.at("warm_start").at("keep"), 1.02);
  EXPECT_EQ(search.at("warm_start").at("files").size(), 2u);
  std::size_t others = 0, baselines = 0;
  std::set<std::string> names;
  for (const auto& v : j.at("variants")) {
    names.insert(v.at("name").get<std::string>());
    if (v.at("baseline") == true)
      ++baselines;
    else if (!promising.contains(v.at("name").get<std::string>()))
      ++others;
  }
  EXPECT_EQ(baselines, 1u);
  EXPECT_EQ(others, 2u) << "the exploration";
  for (const auto& name : promising) EXPECT_TRUE(names.contains(name)) << name << " is valid at N32 too";
  EXPECT_EQ(search.at("warm_start").at("refine").at("rounds"), 0) << "--warm-refine 0";
  // --warm-refine 1: the same choice, then the configurations one parameter away from the fastest
  // of it, each compiled and measured once (the later passes take the earlier ones' records).
  const std::string refined = out_dir("warm_start_refine");
  const Result rr =
      run_with("TUNE_WORKER_FAKE=1", fmt::format("--problem contact --B 4 --N 32 --warm-start {} {} --warm-keep 1.02 "
                                                 "--warm-explore 2 --warm-refine 1 --sanitize off --out {} "
                                                 "--cache-dir {}/cache",
                                                 record.string(), other.string(), refined, refined));
  ASSERT_EQ(rr.code, 0) << rr.output;
  const auto rj =
      nlohmann::ordered_json::parse(std::ifstream(std::filesystem::path(refined) / "fake-gpu/contact/B4_N32_C64_H32.json"));
  const auto& refine = rj.at("context").at("search").at("warm_start").at("refine");
  EXPECT_EQ(refine.at("top"), 1);
  ASSERT_GE(refine.at("rounds").get<int>(), 1) << rr.output;
  // The fastest of the first choice (the fake worker's times are a function of the name).
  std::string fastest;
  double fastest_us = 1e300;
  for (const auto& v : j.at("variants"))
    if (v.at("status") == "passed" && v.at("timing").at("median_us").get<double>() < fastest_us) {
      fastest_us = v.at("timing").at("median_us").get<double>();
      fastest = v.at("name").get<std::string>();
    }
  auto params_of = [](const std::string& name) {
    std::map<std::string, std::string> p;
    std::istringstream in(name);
    for (std::string kv; std::getline(in, kv, ',');) p[kv.substr(0, kv.find('='))] = kv.substr(kv.find('=') + 1);
    return p;
  };
  const auto best_params = params_of(fastest);
  std::size_t added = 0;
  for (const auto& v : rj.at("variants")) {
    const std::string name = v.at("name").get<std::string>();
    if (names.contains(name)) continue;
    ++added;
    std::size_t differ = 0;
    for (const auto& [k, value] : params_of(name)) differ += best_params.at(k) != value;
    if (refine.at("rounds") == 1) {
      EXPECT_EQ(differ, 1u) << name << " is not one parameter away from " << fastest;
    }
  }
  EXPECT_GE(added, 1u);
  if (refine.at("rounds") == 1) {
    EXPECT_EQ(refine.at("added").get<std::size_t>(), added);
  }
  EXPECT_EQ(rj.at("variants").size(), names.size() + refine.at("added").get<std::size_t>());
  // The last pass measures the baseline alone: the search passes leave it to a compile of its own.
  EXPECT_NE(rr.output.find(fmt::format("{} of {} variants measured by the earlier passes", names.size() + added - 1,
                                       names.size() + added)),
            std::string::npos)
      << rr.output;
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::path(refined) / "fake-gpu/contact/B4_N32_C64_H32.journal.jsonl"));
  // Bad input: a result of another problem, and --budget beside it.
  const Result wrong =
      run_with("TUNE_WORKER_FAKE=1",
               fmt::format("--problem contact --B 4 --N 32 --warm-start {} --out {}",
                           (tune::test::repo_dir() / "results/h200/scene_graph/B16_N64_D256_heads8_P32.json.gz").string(),
                           out_dir("warm_start_wrong")));
  EXPECT_EQ(wrong.code, 2) << wrong.output;
  expect_error_output(wrong, "--warm-start: a result of problem scene_graph, not contact");
  const Result both =
      run_with("TUNE_WORKER_FAKE=1", fmt::format("--problem contact --B 4 --N 32 --warm-start {} --budget 5 --out {}",
                                                 record.string(), out_dir("warm_start_budget")));
  EXPECT_EQ(both.code, 2) << both.output;
  expect_error_output(both, "--warm-start and --budget: both choose the variants to time; pass one of them");
}

// --search model (issue 24): a random initial design, then rounds of the surrogate's proposals,
// each configuration compiled and measured once; the baseline apart (compiled on a thread of its
// own, timed in the last pass); the record says what the model did; bad combinations are one line.
TEST(Cli, AModelSearchTimesItsInitialDesignAndItsProposalsOnceEachAndTheBaselineLast) {
  const std::string out = out_dir("model_search");
  const Result r = run_with("TUNE_WORKER_FAKE=1",
                            fmt::format("--problem contact --B 2 --N 16 --search model --model-init 8 --model-batch 4 "
                                        "--model-rounds 2 --warm-refine 0 --sanitize off --out {} --cache-dir {}/cache",
                                        out, out));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("model search: an initial design of "), std::string::npos) << r.output;
  const auto j =
      nlohmann::ordered_json::parse(std::ifstream(std::filesystem::path(out) / "fake-gpu/contact/B2_N16_C64_H32.json"));
  const auto& search = j.at("context").at("search");
  EXPECT_EQ(search.at("strategy"), "model");
  const auto& model = search.at("model");
  EXPECT_EQ(model.at("library").get<std::string>().rfind("xgboost ", 0), 0u) << model;
  const int initial = model.at("initial").get<int>(), rounds = model.at("rounds").get<int>();
  const int added = model.at("added").get<int>();
  EXPECT_GE(initial, 7) << "8 drawn, less the baseline where it was one of them";
  EXPECT_LE(initial, 8);
  EXPECT_LE(rounds, 2);
  EXPECT_LE(added, 4 * rounds);
  EXPECT_GE(added, rounds);
  EXPECT_FALSE(model.at("stop").get<std::string>().empty());
  if (rounds < 2) {
    EXPECT_NE(r.output.find("model search: stopped: no configuration left is predicted"), std::string::npos) << r.output;
  }
  EXPECT_LT(j.at("variants").size(), search.at("valid_configurations").get<std::size_t>());
  ASSERT_EQ(j.at("variants").size(), static_cast<std::size_t>(initial + added + 1)) << "and the baseline";
  std::set<std::string> names;
  std::size_t baselines = 0;
  for (const auto& v : j.at("variants")) {
    EXPECT_TRUE(names.insert(v.at("name").get<std::string>()).second) << "measured twice: " << v.at("name");
    if (v.at("baseline") == true) {
      ++baselines;
      EXPECT_EQ(v.at("status"), "passed") << "the baseline is timed";
    }
  }
  EXPECT_EQ(baselines, 1u);
  EXPECT_TRUE(j.at("summary").at("speedup_over_baseline").is_number()) << j.at("summary");
  EXPECT_NE(r.output.find(
                fmt::format("{} of {} variants measured by the earlier passes", initial + added, initial + added + 1)),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::path(out) / "fake-gpu/contact/B2_N16_C64_H32.journal.jsonl"));
  const Result only_compile =
      run_with("", fmt::format("--problem contact --B 2 --N 16 --search model --compile-only --out {}",
                               out_dir("model_compile_only")));
  EXPECT_EQ(only_compile.code, 2) << only_compile.output;
  expect_error_output(only_compile, "--search model with --compile-only: the model learns from timings; drop one");
  const Result budget =
      run_with("TUNE_WORKER_FAKE=1",
               fmt::format("--problem contact --B 2 --N 16 --search model --budget 5 --out {}", out_dir("model_budget")));
  EXPECT_EQ(budget.code, 2) << budget.output;
  expect_error_output(budget, "--search model and --budget: both choose the variants to time; pass one of them");
}

// A space whose one valid configuration is the baseline: every strategy times it and names it the
// winner. An adaptive one defers the baseline's compile to its last pass, and that pass took itself
// for the first (it had no configurations of its own), drew the baseline out again and timed nothing
// (exit 5, "the baseline violates ''").
TEST(Cli, EveryStrategyTimesASpaceOfTheBaselineAlone) {
  const std::filesystem::path dir = std::filesystem::path(out_dir("baseline_alone")) / "affine";
  tune::test::copy_fixture_problem("affine", dir, [](nlohmann::ordered_json& doc) {
    doc["parameters"] = nlohmann::ordered_json::parse(R"([{"name": "block", "values": [64, 128]},
                                                         {"name": "per_thread", "values": [1]}])");
    doc["constraints"].push_back("block == 128");  // one valid configuration: the baseline
  });
  for (const std::string strategy : {"exhaustive", "halving", "model"}) {
    SCOPED_TRACE(strategy);
    const std::string out = out_dir("baseline_alone_" + strategy);
    const Result r = run_with("TUNE_WORKER_FAKE=1", fmt::format("--problem {} --R 64 --search {} --sanitize off --out {} "
                                                                "--cache-dir {}/cache",
                                                                dir.string(), strategy, out, out));
    ASSERT_EQ(r.code, 0) << r.output;
    EXPECT_EQ(r.output.find("violates ''"), std::string::npos) << r.output;
    const auto j = nlohmann::ordered_json::parse(std::ifstream(std::filesystem::path(out) / "fake-gpu/affine/R64_L64.json"));
    ASSERT_EQ(j.at("variants").size(), 1u) << j.at("variants");
    EXPECT_EQ(j.at("variants")[0].at("status"), "passed");
    EXPECT_EQ(j.at("variants")[0].at("baseline"), true);
    EXPECT_EQ(j.at("summary").at("winner"), j.at("variants")[0].at("name"));
  }
}

TEST(Cli, AHugeSpaceWithABudgetIsSampledWithoutEnumeratingIt) {
  const std::string out = out_dir("huge_space_sampled");
  const std::string args = std::string(kSmallShape) + " --config " + huge_space() + " --out " + out + " --cache-dir " + out +
                           "/cache --compile-only --budget 3";
  const Result r = run_command("timeout -s KILL 120 " + std::string(TUNE_EXE) + " " + args);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("the space has 138240000000000 (1.4e+14) configurations, more than --max-space 4000000: "
                          "drawing 3 valid ones at random without enumerating it (seed 42"),
            std::string::npos)
      << r.output;
  const auto j = nlohmann::ordered_json::parse(
      std::ifstream(std::filesystem::path(out) / "compile-only-sm_90" / "contact" / "B2_N8_C16_H8.json"));
  const auto& search = j.at("context").at("search");
  EXPECT_EQ(search.at("strategy"), "random");
  EXPECT_EQ(search.at("budget"), 3);
  EXPECT_EQ(search.at("valid_configurations"), -1) << "not counted";
  EXPECT_EQ(search.at("space_configurations"), 138240000000000ull);
  EXPECT_GE(search.at("draws").get<std::uint64_t>(), 3u);
  EXPECT_EQ(j.at("schema_minor_version"), tune::kResultSchemaMinorVersion);
  std::size_t baselines = 0;
  for (const auto& v : j.at("variants")) baselines += v.at("baseline").get<bool>();
  EXPECT_EQ(baselines, 1u) << "the baseline is always timed";
  EXPECT_GE(j.at("variants").size(), 3u);
  EXPECT_LE(j.at("variants").size(), 4u);
  // The same seed draws the same variants.
  const Result again = run_command("timeout -s KILL 120 " + std::string(TUNE_EXE) + " " + args);
  ASSERT_EQ(again.code, 0) << again.output;
  const auto k = nlohmann::ordered_json::parse(
      std::ifstream(std::filesystem::path(out) / "compile-only-sm_90" / "contact" / "B2_N8_C16_H8.json"));
  ASSERT_EQ(k.at("variants").size(), j.at("variants").size());
  for (std::size_t i = 0; i < j.at("variants").size(); ++i)
    EXPECT_EQ(k.at("variants")[i].at("name"), j.at("variants")[i].at("name"));
  // Timed (on the fake device), the record of a sampled space is written and read back as valid:
  // valid_configurations -1 is "not counted", not an out-of-range count.
  const Result timed =
      run_command("TUNE_WORKER_FAKE=1 timeout -s KILL 120 " + std::string(TUNE_EXE) + " " + std::string(kSmallShape) +
                  " --config " + huge_space() + " --out " + out + "/timed --cache-dir " + out + "/cache --budget 3");
  ASSERT_EQ(timed.code, 0) << timed.output;
  const auto t = nlohmann::ordered_json::parse(
      std::ifstream(std::filesystem::path(out) / "timed" / "fake-gpu" / "contact" / "B2_N8_C16_H8.json"));
  EXPECT_EQ(t.at("context").at("search").at("valid_configurations"), -1);
  EXPECT_TRUE(t.at("summary").at("speedup_over_baseline").is_number()) << t.at("summary");
}

// A space within --max-space may still hold more valid configurations than a run can hold and
// compile (each variant's record is about 16 KB in memory): past --max-variants the run is refused
// in one line before anything is written, and --budget or --shard bring it within.
TEST(Cli, ARunOfMoreVariantsThanTheLimitIsRefusedInOneLine) {
  const std::string out = out_dir("max_variants");
  const std::string base = std::string(kSmallShape) + " --compile-only --out " + out + " --cache-dir " + out +
                           "_cache --config " + std::string(TUNE_FIXTURES) + "/contact_small_space.json";
  for (const std::string env : {"", "TUNE_WORKER_FAKE=1"}) {
    const Result r = run_with(env, base + " --max-variants 5");
    EXPECT_EQ(r.code, 2) << r.output;
    expect_error_output(
        r,
        "tune: contact B=2 N=8 C=16 H=8 T=float32: 6 variants (6 of 13824 configurations pass the constraints) "
        "are more than --max-variants 5 a run compiles and times");
    EXPECT_NE(r.output.find("pass --budget N"), std::string::npos) << r.output;
    EXPECT_FALSE(std::filesystem::exists(out)) << "nothing written: " << r.output;
  }
  EXPECT_EQ(run(base + " --max-variants 5 --budget 3").code, 0);
  EXPECT_EQ(run(base + " --max-variants 5 --shard 0/2").code, 0);
}

// Round 9: past --max-variants a model search, a warm start or a --budget sample was told to "pass
// --budget N", which the first two refuse and the third had done (its baseline is timed besides).
// The advice names the knob that chose the variants.
TEST(Cli, TheMaxVariantsRefusalNamesTheOptionThatChoseTheVariants) {
  const std::string out = out_dir("max_variants_remedy");
  const std::string base = std::string(kSmallShape) + " --out " + out + " --cache-dir " + out + "_cache --config " +
                           std::string(TUNE_FIXTURES) + "/contact_small_space.json --max-variants 3";
  const Result model = run_with("TUNE_WORKER_FAKE=1", base + " --search model --model-init 5");
  EXPECT_EQ(model.code, 2) << model.output;
  expect_error_output(model, "lower --model-init (the initial design) or --model-batch, or raise --max-variants");
  EXPECT_EQ(model.output.find("pass --budget"), std::string::npos) << model.output;
  const Result budget = run(base + " --compile-only --budget 4");
  EXPECT_EQ(budget.code, 2) << budget.output;
  expect_error_output(budget, "lower --budget 4 (the baseline is timed besides)");
  EXPECT_FALSE(std::filesystem::exists(out)) << "nothing written";
}

// A long enumeration says how far it has got on stderr (a line at most every 2 s after the first
// second), as a long lowering does.
TEST(Cli, ALongEnumerationShowsItsProgress) {
  const std::string out = out_dir("long_enumeration");
  // 13824 x 200 = 2764800 configurations; only x == 0 is valid, so the run compiles little.
  const std::string space = edited_space("long", [](auto& j) {
    nlohmann::ordered_json values = nlohmann::ordered_json::array();
    for (int i = 0; i < 200; ++i) values.push_back(i);
    j["parameters"].push_back({{"name", "x"}, {"values", values}});
    j["baseline"]["x"] = 0;
    j["constraints"].push_back("x == 0");
  });
  const Result r = run(std::string(kSmallShape) + " --config " + space + " --out " + out + " --cache-dir " + out +
                       "/cache --compile-only --time-budget 0.01");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("space: configurations checked against the constraints: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(" of 2764800 ("), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(" valid, "), std::string::npos) << r.output;
}

}  // namespace

// Issue 35: contact's dtype variable T. float32 keeps today's space (710 variants at B4 N64: the
// bf16 precision is constrained away), bfloat16 has its own (the bf16 MMAs instead of tf32x3 and
// tf32, NSPLIT 1), and a sample of each compiles without a GPU (T first among the template
// arguments, `__nv_bfloat16` for bfloat16).
TEST(Cli, ContactInBfloat16HasItsOwnSpaceAndFloat32KeepsTodays) {
  const std::string out = out_dir("contact_dtypes");
  for (const auto& [dtype, count] : {std::pair<std::string, int>{"float32", 710}, {"bfloat16", 448}}) {
    const Result r = run("--problem contact --B 4 --N 64 --T " + dtype + " --compile-only --budget 1 --out " + out +
                         " --cache-dir " + out + "_cache");
    ASSERT_EQ(r.code, 0) << r.output;
    EXPECT_NE(r.output.find(fmt::format("({} of ", count)), std::string::npos) << r.output;
  }
}
