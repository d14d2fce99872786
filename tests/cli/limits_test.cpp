// Issue 34: tune lowers every variant with its device's own limits (SM count, shared memory per
// block), never sm_90's, so that the variant timed on a device is the variant the header ships for
// it. Fake devices of other limits (TUNE_WORKER_FAKE_SMS / _SMEM) tune contact's persistent-grid
// variants; their records, tune's lowering, the merged header's geometry() (compiled with the host
// compiler) and select() must all agree per device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "support/cli_run.hpp"
#include "tune/errors.hpp"
#include "tune/space.hpp"

namespace {

using Json = nlohmann::ordered_json;

struct FakeCard {
  int sms;
  long long smem;  // shared memory per block, opt-in, bytes
};
// An A100's 108 SMs and 164 KiB, an H100 PCIe's 114 and 227 KiB, a small card's 58 and 100 KiB.
const std::vector<FakeCard> kCards = {{108, 167936}, {114, 232448}, {58, 102400}};
const std::string kShapeTag = "B1_N256_C64_H32";

std::string space_file() { return std::string(TUNE_FIXTURES) + "/contact_limits_space.json"; }

tune::DeviceLimits limits_of(const FakeCard& card) {
  tune::DeviceLimits l = tune::DeviceLimits::for_arch(90);
  l.sm_count = card.sms;
  l.max_smem_per_block = card.smem;
  return l;
}

std::string fake_hooks() {
  std::vector<std::string> sms, smem;
  for (const auto& c : kCards) {
    sms.push_back(std::to_string(c.sms));
    smem.push_back(std::to_string(c.smem));
  }
  return fmt::format("TUNE_WORKER_FAKE=1 TUNE_WORKER_FAKE_DEVICES={} TUNE_WORKER_FAKE_SMS={} TUNE_WORKER_FAKE_SMEM={}",
                     kCards.size(), fmt::join(sms, ","), fmt::join(smem, ","));
}

Json read_json(const std::filesystem::path& file) {
  std::ifstream in(file);
  EXPECT_TRUE(in.good()) << file;
  return Json::parse(in);
}

Json launch_json(const tune::KernelLaunch& k) {
  return Json{{"kernel", k.name_expression}, {"grid", k.grid}, {"block", k.block}, {"dynamic_smem_bytes", k.dynamic_smem}};
}

// "grid0,grid1,grid2 block0,block1,block2 smem" of a recorded launch, as the check program prints.
std::string geometry_text(const Json& launch) {
  const auto& g = launch.at("grid");
  const auto& b = launch.at("block");
  return fmt::format("{},{},{} {},{},{} {}", g[0].get<unsigned>(), g[1].get<unsigned>(), g[2].get<unsigned>(),
                     b[0].get<unsigned>(), b[1].get<unsigned>(), b[2].get<unsigned>(),
                     launch.at("dynamic_smem_bytes").get<unsigned>());
}

// Compiles `source` (including dir/tuned.hpp) with the host compiler and returns its output lines.
std::vector<std::string> compile_and_run(const std::filesystem::path& dir, const std::string& source) {
  std::ofstream(dir / "check.cpp") << source;
  const std::string exe = (dir / "check").string();
  const Result built = run_command(fmt::format("{} -std=c++17 -Wall -Wextra -Werror -I{} -o {} {}", TUNE_CXX_COMPILER,
                                               dir.string(), exe, (dir / "check.cpp").string()));
  EXPECT_EQ(built.code, 0) << built.output;
  const Result ran = run_command(exe);
  EXPECT_EQ(ran.code, 0) << ran.output;
  std::vector<std::string> lines;
  std::istringstream in(ran.output);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Each device's record: its limits as given, and every variant's launches tune's lowering with them
// (the persistent grid is dev_sm_count * resident, resident bounded by the shared memory); the
// variants are the configurations valid on that device, no more.
void expect_records_lowered_for_their_device(const std::vector<Json>& records, const tune::Space& space,
                                             const tune::Shape& shape) {
  int differ_from_sm90 = 0;
  for (std::size_t k = 0; k < kCards.size(); ++k) {
    const Json& j = records[k];
    SCOPED_TRACE(fmt::format("device {} ({} SMs, {} bytes)", k, kCards[k].sms, kCards[k].smem));
    EXPECT_EQ(j.at("device").at("sm_count"), kCards[k].sms);
    EXPECT_EQ(j.at("device").at("max_shared_memory_per_block_optin_bytes"), kCards[k].smem);
    const tune::DeviceLimits limits = limits_of(kCards[k]);
    std::set<std::string> recorded, valid;
    for (const tune::Config& c : space.enumerate(shape, limits).configs) valid.insert(space.name(c));
    for (const auto& v : j.at("variants")) {
      const std::string name = v.at("name").get<std::string>();
      recorded.insert(name);
      const tune::Config config = space.from_json(v.at("params"));
      const tune::Lowered lowered = space.lower(config, shape, limits);
      ASSERT_EQ(v.at("launches").size(), lowered.launches.size()) << name;
      for (std::size_t l = 0; l < lowered.launches.size(); ++l) {
        EXPECT_EQ(v.at("launches")[l], launch_json(lowered.launches[l])) << name;
        EXPECT_LE(lowered.launches[l].dynamic_smem, kCards[k].smem) << name;
        const tune::Lowered sm90 = space.lower(config, shape, tune::DeviceLimits::for_arch(90));
        differ_from_sm90 += sm90.launches[l].grid != lowered.launches[l].grid;
      }
    }
    EXPECT_EQ(recorded, valid);
  }
  // Not vacuous: persistent grids that sm_90's limits would have lowered otherwise, and variants that
  // fit the larger cards' shared memory but not the smallest's.
  EXPECT_GE(differ_from_sm90, 6);
  EXPECT_GT(records[0].at("variants").size(), records[2].at("variants").size());
}

// The merged header's select() for each device (exact: its own entry, at the recorded launch of its
// winner), and geometry() of every variant tuned on the largest card at each device's limits: the
// recorded launches where the device is the one it was tuned on, refused where its shared memory
// does not fit, tune's lowering elsewhere.
void expect_header_agrees(const std::filesystem::path& dir, const std::vector<Json>& records, const tune::Space& space,
                          const tune::Shape& shape) {
  std::string src =
      "#include <cstdio>\n#include \"tuned.hpp\"\nnamespace t = tune_tuned::contact;\n"
      "constexpr t::Shape kShape{1, 256, 64, 32};\n"
      "void print(const t::Geometry& g) {\n  if (!g.ok) { std::printf(\"refused\\n\"); return; }\n"
      "  const t::LaunchGeometry& l = g.launches[0];\n"
      "  std::printf(\"%u,%u,%u %u,%u,%u %u\\n\", l.grid[0], l.grid[1], l.grid[2], l.block[0], l.block[1], "
      "l.block[2], l.dynamic_smem_bytes);\n}\nint main() {\n";
  std::vector<std::string> want;
  const Json& all = records[1];  // the card with the most shared memory: every variant
  for (std::size_t k = 0; k < kCards.size(); ++k) {
    const auto& [sms, smem] = kCards[k];
    src += fmt::format(
        "  {{\n    const t::Selection s = t::select(t::Device{{\"Fake GPU\", 90, {}, {}}}, kShape);\n"
        "    std::printf(\"%d %s \", static_cast<int>(s.match), s.index < 0 ? \"-\" : "
        "t::kEntries[s.index].winner.name);\n    print(s.geometry);\n  }}\n",
        sms, smem);
    const std::string winner = records[k].at("summary").at("winner").get<std::string>();
    for (const auto& v : records[k].at("variants"))
      if (v.at("name") == winner) want.push_back("0 " + winner + " " + geometry_text(v.at("launches")[0]));
    const tune::DeviceLimits limits = limits_of(kCards[k]);
    for (const auto& v : all.at("variants")) {
      const tune::Config config = space.from_json(v.at("params"));
      std::vector<std::string> params;
      for (const auto& p : space.parameters()) params.push_back(std::to_string(space.numeric(config, p.name)));
      src += fmt::format("  print(t::geometry(kShape, t::Params{{{}}}, t::Limits{{1024, {}, {}, 90}}));\n",
                         fmt::join(params, ", "), smem, sms);
      if (!space.violated_constraint(config, shape, limits).empty()) {
        want.push_back("refused");
        continue;
      }
      want.push_back(geometry_text(launch_json(space.lower(config, shape, limits).launches[0])));
      if (k == 1) {
        EXPECT_EQ(want.back(), geometry_text(v.at("launches")[0])) << v.at("name");
      }
    }
  }
  src += "}\n";
  const std::vector<std::string> got = compile_and_run(dir, src);
  EXPECT_EQ(got, want);
  EXPECT_NE(std::count(want.begin(), want.end(), "refused"), 0);
}

TEST(DeviceLimits, FakeDevicesOfOtherLimitsTuneLowerAndShipTheirOwnVariants) {
  const std::string out = out_dir("device_limits");
  const Result r = run_with(fake_hooks(), "--problem contact --B 1 --N 256 --config " + space_file() +
                                              " --budget 16 --sanitize off --devices all --replicate --cache-dir " + out +
                                              "/cache --out " + out);
  ASSERT_EQ(r.code, 0) << r.output;
  std::vector<Json> records;
  std::vector<std::string> files;
  for (std::size_t k = 0; k < kCards.size(); ++k) {
    files.push_back(fmt::format("{}/fake-gpu-fa4e{:04x}/contact/{}.json", out, k, kShapeTag));
    records.push_back(read_json(files.back()));
  }
  const tune::Space space =
      tune::Space::load(space_file(), {std::filesystem::path(TUNE_REPO_DIR) / "kernel_templates/contact"});
  const tune::Shape shape({{"B", 1}, {"N", 256}, {"C", 64}, {"H", 32}});
  expect_records_lowered_for_their_device(records, space, shape);

  const std::filesystem::path dir = std::filesystem::path(out) / "header";
  std::filesystem::create_directories(dir);
  const Result h = run(fmt::format("header {} --allow-synthetic -o {}/tuned.hpp", fmt::join(files, " "), dir.string()));
  ASSERT_EQ(h.code, 0) << h.output;
  expect_header_agrees(dir, records, space, shape);

  // A record whose launches are not its device's lowering (as every tune before issue 34 wrote on a
  // card of other limits than sm_90's: a persistent grid for 132 SMs) ships no header.
  Json stale = records[0];
  for (auto& v : stale.at("variants"))
    if (v.at("name") == stale.at("summary").at("winner")) {
      auto& grid = v.at("launches")[0].at("grid")[0];
      const unsigned sm90 =
          space.lower(space.from_json(v.at("params")), shape, tune::DeviceLimits::for_arch(90)).launches[0].grid[0];
      grid = sm90 != grid.get<unsigned>() ? sm90 : grid.get<unsigned>() + 1;
    }
  std::ofstream(dir / "stale.json") << stale.dump(2);
  const Result refused =
      run(fmt::format("header {}/stale.json --allow-synthetic -o {}/stale.hpp", dir.string(), dir.string()));
  EXPECT_EQ(refused.code, 2) << refused.output;
  expect_error_output(refused, "re-tune with this tune");
}

// A problem of a when-skipped launch and a shape-dependent scratch buffer (two_pass: one launch where
// one block covers a row, else partials into scratch and a reduce): geometry() at shapes nobody tuned
// gives tune's lowering, the launches' buffers and the scratch buffers' sizes at that shape, and
// refuses where tune refuses (a partials size M * N / chunk that is not a whole number). It gave
// neither buffers nor sizes, and took that configuration as valid.
TEST(DeviceLimits, HeaderGeometryGivesTheScratchBuffersAndRefusesAsTuneLowers) {
  const std::filesystem::path out = out_dir("geometry_scratch");
  const std::string problem = std::string(TUNE_FIXTURES) + "/problems/two_pass";
  const Result r = run_with("TUNE_WORKER_FAKE=1", "--problem " + problem + " --M 8 --N 4096 --sanitize off --out " +
                                                      out.string() + " --cache-dir " + out.string() + "/cache");
  ASSERT_EQ(r.code, 0) << r.output;
  std::filesystem::remove(out / "why.txt");
  const Result h = run(fmt::format("header {}/fake-gpu/two_pass/M8_N4096.json --allow-synthetic -o {}/tuned.hpp",
                                   out.string(), out.string()));
  ASSERT_EQ(h.code, 0) << h.output;
  const tune::Space space = tune::Space::load(problem + "/problem.json", {});
  const tune::DeviceLimits limits = tune::DeviceLimits::for_arch(90);
  std::string src =
      "#include <cstdio>\n#include \"tuned.hpp\"\nnamespace t = tune_tuned::two_pass;\n"
      "void print(const t::Geometry& g) {\n  if (!g.ok) {\n    std::printf(\"refused\\n\");\n"
      "    std::FILE* f = std::fopen(\"" +
      (out / "why.txt").string() +
      "\", \"a\");\n"
      "    std::fprintf(f, \"%s\\n\", g.why);\n    std::fclose(f);\n    return;\n  }\n"
      "  for (int i = 0; i < g.launch_count; ++i) {\n    std::printf(\"%s(\", g.launches[i].kernel);\n"
      "    for (int a = 0; a < g.launches[i].arg_count; ++a) std::printf(\" %s\", g.launches[i].args[a]);\n"
      "    std::printf(\" ) \");\n  }\n"
      "  for (int b = 0; b < g.scratch_count; ++b) std::printf(\"%s=%lld \", g.scratch[b].name, "
      "g.scratch[b].elements);\n  std::printf(\"\\n\");\n}\nint main() {\n";
  std::vector<std::string> want;
  for (const long long n : {4096LL, 2048LL, 1000LL, 256LL})
    for (const tune::Config& c : space.enumerate(tune::Shape({{"M", 8}, {"N", 4096}}), limits).configs) {
      src += fmt::format("  print(t::geometry(t::Shape{{8, {}}}, t::Params{{{}, {}}}, t::limits_for_arch(90)));\n", n,
                         space.numeric(c, "block"), space.numeric(c, "chunk"));
      std::string line;
      try {
        const tune::Lowered low = space.lower(c, tune::Shape({{"M", 8}, {"N", n}}), limits);
        for (const auto& k : low.launches) line += fmt::format("{}( {} ) ", k.kernel, fmt::join(k.args, " "));
        for (const auto& b : low.scratch) line += fmt::format("{}={} ", b.name, b.elements());
      } catch (const tune::ConfigError&) {
        line = "refused";
      }
      want.push_back(line);
    }
  src += "}\n";
  EXPECT_EQ(compile_and_run(out, src), want);
  // Not vacuous: one- and two-pass configurations, and ones refused.
  EXPECT_NE(std::count(want.begin(), want.end(), "refused"), 0);
  EXPECT_NE(std::count(want.begin(), want.end(), "direct_kernel( x out ) "), 0);
  EXPECT_NE(std::count(want.begin(), want.end(), "partial_kernel( x partial ) reduce_kernel( partial out ) partial=32 "), 0);
  // The refusal says what is wrong: a partials size of a fraction is no whole number (it said "out of range").
  std::ifstream why_file(out / "why.txt");
  const std::string why{std::istreambuf_iterator<char>(why_file), std::istreambuf_iterator<char>()};
  EXPECT_NE(why.find("scratch partial: elements is not a whole number in [0, 2^40]"), std::string::npos) << why;
}

TEST(DeviceLimits, AMalformedFakeDeviceHookIsRefusedInOneLine) {
  const std::string out = out_dir("device_limits_hook");
  for (const char* hook : {"TUNE_WORKER_FAKE_SMS=abc", "TUNE_WORKER_FAKE_SMEM=100,0"}) {
    const Result r = run_with(std::string("TUNE_WORKER_FAKE=1 ") + hook,
                              "--problem contact --B 1 --N 8 --sanitize off --budget 1 --out " + out);
    EXPECT_EQ(r.code, 2) << hook << "\n" << r.output;
    expect_error_output(r, "is not an integer from 1 to");
  }
}

// As a card, the fake worker refuses a launch whose shared memory (the ptxas report's static plus
// the launch's dynamic) is more than its device has: the constraints see only the dynamic part.
TEST(DeviceLimits, TheFakeWorkerRefusesALaunchOfMoreSharedMemoryThanItsDeviceHas) {
  const std::filesystem::path out = out_dir("device_limits_static_smem");
  std::filesystem::create_directories(out);
  Json space = read_json(space_file());
  space["template"] = "static_smem.cuh";
  std::ofstream(out / "space.json") << space.dump(2);
  std::ifstream stub(std::string(TUNE_FIXTURES) + "/contact_limits_stub.cuh");
  std::string text{std::istreambuf_iterator<char>(stub), std::istreambuf_iterator<char>()};
  // 16 KiB of static shared memory, used so that it stays.
  const std::string body = "  static_assert(PERSIST == 0 || MAPPING == 2, \"PERSIST: the warp_tile mapping\");\n";
  ASSERT_NE(text.find(body), std::string::npos);
  text.replace(text.find(body), body.size(),
               body +
                   "  __shared__ float pad[4096];\n  pad[threadIdx.x] = pair_repr[threadIdx.x];\n  __syncthreads();\n"
                   "  out[threadIdx.x] = pad[(threadIdx.x + 1) % 32];\n");
  std::ofstream(out / "static_smem.cuh") << text;
  const long long smem = 50000;
  const Result r = run_with(fmt::format("TUNE_WORKER_FAKE=1 TUNE_WORKER_FAKE_SMEM={}", smem),
                            fmt::format("--problem contact --B 1 --N 256 --config {}/space.json --sanitize off --top 1 "
                                        "--cache-dir {}/cache --out {}",
                                        out.string(), out.string(), out.string()));
  ASSERT_EQ(r.code, 0) << r.output;
  const Json j = read_json(out / "fake-gpu" / "contact" / (kShapeTag + ".json"));
  int refused = 0, passed = 0;
  for (const auto& v : j.at("variants")) {
    long long need = v.at("launches")[0].at("dynamic_smem_bytes").get<long long>();
    EXPECT_LE(need, smem) << v.at("name");  // the constraint: dynamic shared memory within the device's
    for (const auto& [kernel, res] : v.at("resources").items()) need += res.at("static_smem_bytes").get<long long>();
    if (need > smem) {
      ++refused;
      EXPECT_EQ(v.at("status"), "launch_failed") << v.at("name");
      EXPECT_NE(v.value("reason", "").find(fmt::format("needs {} bytes of shared memory, the device allows {}", need, smem)),
                std::string::npos)
          << v.dump();
    } else {
      ++passed;
      EXPECT_EQ(v.at("status"), "passed") << v.at("name");
    }
  }
  EXPECT_GT(refused, 0);
  EXPECT_GT(passed, 0);
}

}  // namespace

namespace {

// A problem folder of one kernel whose launch geometry and registers are the test's: a block of
// `block` (x, y, z), `smem` bytes of dynamic shared memory, and with `heavy` 160 floats a thread
// kept live (about 128 registers), so that a block of 1024 threads needs more than the 64K
// registers a block has.
std::filesystem::path launch_problem(const std::string& name, const Json& block, const std::string& smem, bool heavy) {
  const std::filesystem::path dir = std::filesystem::path(out_dir("launch_fit_" + name)) / "fit";
  std::filesystem::create_directories(dir);
  const Json p = {{"schema_version", 1},
                  {"problem", "fit"},
                  {"template", "kernel.cuh"},
                  {"reference", {{"python", "reference.py"}}},
                  {"shape", {{"dims", {"N"}}, {"defaults", Json::object()}}},
                  {"tensors",
                   {{{"name", "x"}, {"role", "input"}, {"shape", {"N"}}, {"init", "normal"}},
                    {{"name", "out"}, {"role", "output"}, {"shape", {"N"}}}}},
                  {"work", {{"flop", "N"}, {"bytes", "8 * N"}}},
                  {"parameters", {{{"name", "threads"}, {"values", {256, 1024}}}}},
                  {"launches",
                   {{{"kernel", "fit_kernel"},
                     {"template_args", {"threads"}},
                     {"grid", {"1", "1", "1"}},
                     {"block", block},
                     {"dynamic_smem", smem},
                     {"args", {"x", "out"}}}}},
                  {"baseline", {{"threads", 256}}}};
  std::ofstream(dir / "problem.json") << p.dump(1);
  std::ofstream(dir / "reference.py") << "import numpy as np\n\ndef reference(shape, params, inputs):\n"
                                         "    return np.asarray(inputs['x'], dtype=np.float64)\n";
  std::ofstream(dir / "kernel.cuh")
      << "template <int T>\n__global__ void fit_kernel(const float* x, float* out) {\n"
      << (heavy ? "  float a[160];\n#pragma unroll\n  for (int k = 0; k < 160; ++k) a[k] = x[threadIdx.x + k];\n"
                  "  float s = 0;\n#pragma unroll\n  for (int k = 0; k < 160; ++k) s += a[k] * a[(k * 7) % 160] + "
                  "a[(k * 13) % 160] * s;\n  out[threadIdx.x] = s;\n"
                : "  out[threadIdx.x] = x[threadIdx.x];\n")
      << "}\n";
  return dir;
}

// The statuses of a results file's variants by name.
std::map<std::string, std::string> statuses(const std::filesystem::path& file, std::map<std::string, std::string>* reasons) {
  std::map<std::string, std::string> out;
  const Json run = read_json(file);  // alive through the loop: a temporary's member would not be
  for (const auto& v : run.at("variants")) {
    const std::string name = v.at("name").get<std::string>();
    out[name] = v.at("status").get<std::string>();
    if (reasons) (*reasons)[name] = v.value("reason", "");
  }
  return out;
}

}  // namespace

// Round 8: a compile-only sweep recorded as `compiled` (and the fake worker timed, even as the
// winner) variants that no card launches: a block of 32x32x2 threads, a block.z of 65, 128
// registers a thread in blocks of 1024 (twice the 64K a block has), dynamic shared memory past
// sm_90's 227 KiB. They are `launch_failed` with the device's reason, as on a card; a run in which
// none would launch exits 5 with that reason.
TEST(DeviceLimits, CompileOnlyAndTheFakeWorkerRefuseWhatNoCardLaunches) {
  struct Case {
    std::string name;
    Json block;
    std::string smem;
    bool heavy;
    std::string reason;
  };
  const std::vector<Case> cases =
      {{"threads", {"threads", "8", "1"}, "0", false, "256x8x1 = 2048 threads; the device allows 1024"},
       {"block_z", {"1", "1", "65"}, "0", false, "has a block of 1x1x65 threads; block.z is at most 64"},
       {"smem", {"threads", "1", "1"}, "232449", false, "needs 232449 bytes of shared memory, the device allows 232448"}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const auto dir = launch_problem(c.name, c.block, c.smem, c.heavy);
    const std::string out = (dir.parent_path() / "out").string();
    const Result r = run(fmt::format("--problem {} --N 64 --compile-only --out {}", dir.string(), out));
    EXPECT_EQ(r.code, 5) << r.output;
    EXPECT_NE(r.output.find("threads=256 would not launch: fit_kernel "), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(c.reason), std::string::npos) << r.output;
    for (const auto& [name, status] :
         statuses(std::filesystem::path(out) / "compile-only-sm_90" / "fit" / "N64.json", nullptr))
      EXPECT_EQ(status, "launch_failed") << name;
  }
  // Registers: 1024 threads of about 128 registers do not fit a block; 256 do.
  const auto dir = launch_problem("registers", {"threads", "1", "1"}, "0", true);
  const std::string out = (dir.parent_path() / "out").string();
  for (const std::string env : {"", "TUNE_WORKER_FAKE=1"}) {
    SCOPED_TRACE(env);
    const Result r = run_with(env, fmt::format("--problem {} --N 64 --sanitize off --out {}{}", dir.string(), out,
                                               env.empty() ? " --compile-only" : ""));
    ASSERT_EQ(r.code, 0) << r.output;
    std::map<std::string, std::string> reasons;
    const auto file = std::filesystem::path(out) / (env.empty() ? "compile-only-sm_90" : "fake-gpu") / "fit" / "N64.json";
    const auto s = statuses(file, &reasons);
    EXPECT_EQ(s.at("threads=256"), env.empty() ? "compiled" : "passed");
    EXPECT_EQ(s.at("threads=1024"), "launch_failed");
    EXPECT_NE(reasons.at("threads=1024").find("needs 1024 threads per block but its registers allow 512"), std::string::npos)
        << reasons.at("threads=1024");
  }
}

// Round 9: without TUNE_WORKER_FAKE_SMEM the fake worker knew no shared-memory limit, so a fake
// sm_90 run timed (and could name the winner) a variant of more dynamic shared memory than sm_90's
// 227 KiB, which the compile-only run of the same space marks launch_failed. The fake device now
// refuses past the limits of the arch it claims, as the card would.
TEST(DeviceLimits, TheFakeWorkerRefusesSharedMemoryPastTheArchItClaimsWithoutTheHook) {
  const auto dir = launch_problem("fake_smem", {"threads", "1", "1"}, "threads == 1024 ? 232449 : 1024", false);
  const std::string out = (dir.parent_path() / "out").string();
  const Result r =
      run_with("TUNE_WORKER_FAKE=1", fmt::format("--problem {} --N 64 --sanitize off --out {}", dir.string(), out));
  ASSERT_EQ(r.code, 0) << r.output;
  std::map<std::string, std::string> reasons;
  const auto s = statuses(std::filesystem::path(out) / "fake-gpu" / "fit" / "N64.json", &reasons);
  EXPECT_EQ(s.at("threads=256"), "passed");
  EXPECT_EQ(s.at("threads=1024"), "launch_failed");
  EXPECT_NE(reasons.at("threads=1024").find("needs 232449 bytes of shared memory, the device allows 232448"),
            std::string::npos)
      << reasons.at("threads=1024");
}
